"""GATEHOUSE_WORKSPACE_ROOTS is applied before anything about the named path is said: a
workspace outside the roots gets one answer, whether it exists, is a file, a dangling or
looping symlink, or an unknown ~user — so a run starter cannot map the server's directories."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from runs.models import Run

pytestmark = pytest.mark.django_db

BODY = {"driver": "scripted", "scenario": {"steps": [{"message": "hi"}]}}


@pytest.fixture
def tree(tmp_path: Path, settings: Any) -> dict[str, Path]:
    allowed = tmp_path / "allowed"
    (allowed / "project").mkdir(parents=True)
    outside = tmp_path / "outside"
    (outside / "exists").mkdir(parents=True)
    (outside / "file").write_text("x")
    (outside / "loop").symlink_to(outside / "loop")
    (allowed / "to-outside").symlink_to(outside / "exists")
    (allowed / "to-missing-outside").symlink_to(outside / "missing")
    (allowed / "to-project").symlink_to(allowed / "project")
    settings.GATEHOUSE_WORKSPACE_ROOTS = [allowed.resolve()]
    return {"allowed": allowed, "outside": outside}


def _refusal(api: Any, workspace: str) -> str:
    response = api.post("/api/v1/runs/", {**BODY, "workspace": workspace}, format="json")
    assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
    body = response.json()
    assert (body["code"], body["field"]) == ("invalid_workspace", "workspace")
    return str(body["message"]).replace(repr(workspace), "<workspace>")


def test_outside_the_roots_every_path_gets_the_same_answer(api: Any, tree: dict[str, Path]) -> None:
    outside, allowed = tree["outside"], tree["allowed"]
    named = [
        outside / "exists",
        outside / "missing",
        outside / "missing" / "deeper",
        outside / "file",
        outside / "loop",
        outside / "loop" / "x",
        outside / ("n" * 300),  # a name too long
        allowed / "to-outside",  # a symlink in a root that leads out
        allowed / "to-missing-outside",
        allowed / "project" / ".." / ".." / "outside" / "exists",  # `..` climbing out
        allowed / "project" / ".." / ".." / "outside" / "missing",
        Path("/"),
    ]
    answers = {str(path): _refusal(api, str(path)) for path in named}
    answers["~no-such-user-here/x"] = _refusal(api, "~no-such-user-here/x")
    assert len(set(answers.values())) == 1, answers
    assert "outside the allowed roots" in next(iter(answers.values()))
    assert not Run.objects.exists()


def test_inside_the_roots_a_missing_directory_is_named_as_such(api: Any, tree: dict[str, Path]) -> None:
    assert "is not a directory" in _refusal(api, str(tree["allowed"] / "missing"))
    assert "is not a directory" in _refusal(api, str(tree["allowed"] / ("n" * 300)))  # a name too long
    assert "is not a directory" in _refusal(api, str(tree["allowed"] / "project" / ".." / "missing"))


@pytest.mark.parametrize("name", ["project", "to-project", "project/../project"])
def test_a_directory_in_a_root_is_used_by_its_resolved_path(api: Any, tree: dict[str, Path], name: str) -> None:
    response = api.post("/api/v1/runs/", {**BODY, "workspace": str(tree["allowed"] / name)}, format="json")
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert Run.objects.get().workspace == str((tree["allowed"] / "project").resolve())


def test_without_roots_a_missing_directory_is_named_as_such(api: Any, tmp_path: Path, settings: Any) -> None:
    settings.GATEHOUSE_WORKSPACE_ROOTS = []
    assert "is not a directory" in _refusal(api, str(tmp_path / "missing"))
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert "is not a directory" in _refusal(api, str(tmp_path / "loop"))


def test_a_nul_byte_is_refused_as_bad_input(tree: dict[str, Path]) -> None:
    """(The API's JSON boundary refuses it first; the service says so on its own too.)"""
    from runs.errors import RunError
    from runs.services import run_create

    with pytest.raises(RunError, match="NUL byte") as refused:
        run_create(driver="scripted", scenario=BODY["scenario"], workspace=str(tree["outside"]) + "/a\x00b")
    assert refused.value.code == "invalid_workspace"
    assert not Run.objects.exists()
