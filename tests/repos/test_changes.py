"""A run's changes against its base: untracked files, renames, binaries named not dumped,
deletions, .gitignore respected, the workspace's own git config never trusted; the patch."""

from __future__ import annotations

import subprocess
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from repos.models import Repository
from repos.services import workspace_prepare
from runs.models import Run
from runs.services import run_create
from tests.repos.conftest import GIT_ENV, sh

pytestmark = pytest.mark.django_db


@pytest.fixture
def prepared(reviewer: Any, remote: Path) -> Run:
    Repository.objects.create(name="app", url=f"file://{remote}", default_ref="main")
    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, repository="app", user=reviewer,
                     prompt="Rename and tidy")
    return workspace_prepare(run_id=run.pk)


def edit(workspace: Path) -> None:
    (workspace / "src" / "app.py").write_text("def main():\n    return 2\n")
    (workspace / "untracked.txt").write_text("new\n")
    (workspace / "README.md").unlink()
    (workspace / "old_name.txt").rename(workspace / "new_name.txt")
    (workspace / "logo.bin").write_bytes(bytes(range(255, -1, -1)) + b"\0")
    (workspace / ".gitignore").write_text("build/\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_text("ignored\n")
    (workspace / "<script>.txt").write_text("<script>alert(1)</script>\n")


def test_changes_name_every_kind_of_change(api: Any, prepared: Run) -> None:
    workspace = Path(prepared.workspace)
    edit(workspace)
    body = api.get(f"/api/v1/runs/{prepared.pk}/changes/").json()
    files = {f["path"]: f for f in body["files"]}
    assert files["src/app.py"]["status"] == "modified" and (files["src/app.py"]["additions"], files["src/app.py"]["deletions"]) == (1, 1)
    assert files["untracked.txt"]["status"] == "added"
    assert files["README.md"]["status"] == "deleted"
    assert files["new_name.txt"]["status"] == "renamed" and files["new_name.txt"]["old_path"] == "old_name.txt"
    assert files["logo.bin"]["binary"] is True and files["logo.bin"]["additions"] is None
    assert "Binary files" in body["diff"] and "\\x00" not in body["diff"]
    assert not any(path.startswith("build/") for path in files)
    # The agent's own index is untouched: Gatehouse uses an index of its own.
    assert "untracked.txt" in sh("status", "--porcelain", cwd=workspace) and "??" in sh("status", "--porcelain", cwd=workspace)


def test_the_workspaces_own_git_config_is_never_run(api: Any, prepared: Run, tmp_path: Path) -> None:
    workspace = Path(prepared.workspace)
    marker = tmp_path / "pwned"
    # What an agent without a floor could write: an fsmonitor, a filter, an external diff.
    for key, value in (("core.fsmonitor", f"touch {marker}"), ("filter.x.clean", f"touch {marker}"),
                       ("diff.external", f"touch {marker}")):
        subprocess.run(["git", "config", key, value], cwd=workspace, env=GIT_ENV, check=True)
    (workspace / ".gitattributes").write_text("* filter=x diff=x\n")
    (workspace / "a.txt").write_text("a\n")
    body = api.get(f"/api/v1/runs/{prepared.pk}/changes/").json()
    assert "a.txt" in {f["path"] for f in body["files"]}
    assert not marker.exists()


def test_the_patch_is_the_workspace_as_one_commit_that_git_am_applies(prepared: Run, reviewer: Any, remote: Path,
                                                                     tmp_path: Path) -> None:
    edit(Path(prepared.workspace))
    client = Client()
    client.force_login(reviewer)
    response = client.get(f"/runs/{prepared.pk}/changes/patch/")
    assert response.status_code == HTTPStatus.OK
    patch = response.content.decode()
    assert patch.startswith("From ") and "Subject: [PATCH] Rename and tidy" in patch
    other = tmp_path / "other"
    sh("clone", "-q", str(remote), str(other))
    (tmp_path / "run.patch").write_text(patch)
    sh("am", "-q", str(tmp_path / "run.patch"), cwd=other)
    assert (other / "untracked.txt").read_text() == "new\n" and not (other / "README.md").exists()
    api_patch = Client()
    api_patch.force_login(reviewer)
    assert api_patch.get(f"/api/v1/runs/{prepared.pk}/changes/?format=patch").content.decode().startswith("From ")


def test_the_changes_tab_highlights_and_escapes(prepared: Run, reviewer: Any) -> None:
    edit(Path(prepared.workspace))
    client = Client()
    client.force_login(reviewer)
    page = client.get(f"/runs/{prepared.pk}/changes/").content.decode()
    assert 'class="highlight"' in page and "Download patch" in page and "Push branch" not in page  # not finished yet
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    assert "Binary file modified" in page
    run_page = client.get(f"/runs/{prepared.pk}/").content.decode()
    assert run_page.count(f'href="/runs/{prepared.pk}/changes/"') == 1  # the link; the live section fetches the same URL


def test_a_run_without_a_repository_has_no_changes(api: Any, reviewer: Any) -> None:
    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    response = api.get(f"/api/v1/runs/{run.pk}/changes/")
    assert response.status_code == HTTPStatus.CONFLICT and response.json()["code"] == "not_a_repository_run"
