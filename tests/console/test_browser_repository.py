"""A run on a repository in a real browser, against the real one-process server: started from
the New run form on a local bare repository, its "Changes so far" on the run page show the
file the scripted agent wrote and, without a reload, the one a later approved step wrote; the
Changes page shows the diff and asks for "Push branch"; the delivery card in the inbox shows
the branch and the files, and once approved the server's worker pushes the branch."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from tests.console.browser import card, launch_chromium, running_server, shot
from tests.console.test_browser_decisions import Console
from tests.console.test_browser_inbox import open_inbox
from tests.repos.conftest import GIT_ENV, sh

pytestmark = pytest.mark.browser

SCENARIO = {"steps": [
    {"tool": "write", "input": {"file_path": "NOTES.md", "content": "written by the agent\n"}},
    # asked under "Standard review": the page is open while it waits
    {"tool": "bash", "input": {"command": """awk 'BEGIN { print "after the approval" > "LIVE.md" }'"""}},
]}


def bare_repository(tmp_path: Path) -> Path:
    seed = tmp_path / "seed"
    seed.mkdir()
    sh("init", "-q", "-b", "main", cwd=seed)
    (seed / "README.md").write_text("# App\n")
    sh("add", "-A", cwd=seed)
    sh("commit", "-q", "-m", "initial", cwd=seed)
    bare = tmp_path / "app.git"
    sh("clone", "-q", "--bare", str(seed), str(bare))
    return bare


def test_a_run_on_a_repository_from_the_form_to_an_approved_push(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    remote = bare_repository(tmp_path)
    with running_server(tmp_path / "var") as server:
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()
        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1200, "height": 1000})
            context.set_default_timeout(30_000)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            console = Console(server=server, context=context, token=token)
            try:
                status, _ = console.api("POST", "/api/v1/repositories/", {"name": "app", "url": f"file://{remote}"})
                assert status == 201
                page.goto(link)
                page.goto(server.origin + "/runs/new/")
                page.get_by_label("Driver", exact=True).select_option("scripted")
                page.get_by_label("Policy", exact=True).select_option("Standard review")
                page.get_by_label("Prompt", exact=True).fill("Write the notes")
                page.get_by_label("Scenario (JSON, scripted driver only)").fill(json.dumps(SCENARIO))
                page.get_by_label("Repository", exact=True).select_option("app")
                page.get_by_role("button", name="Start run").click()
                expect(page.get_by_role("heading", name=re.compile(r"Run #\d+"))).to_be_visible()
                run_id = int(re.search(r"/runs/(\d+)/", page.url).group(1))  # type: ignore[union-attr]

                # The first step wrote NOTES.md; the second waits on a person.
                live = page.locator("#changes-live")
                waiting = page.locator("#approvals .approval-pending", has_text="LIVE.md")
                expect(waiting).to_be_visible()
                expect(live).to_contain_text("NOTES.md")
                expect(live).not_to_contain_text("LIVE.md")
                shot(page, "repository-1-changes-so-far", page.locator(".changes-section"))
                waiting.get_by_role("button", name="Approve", exact=True).click()
                # No reload: the finished step's timeline entry makes the section fetch itself again.
                expect(live).to_contain_text("LIVE.md")
                expect(live).to_contain_text("2 files changed")
                assert console.wait_run(run_id)["status"] == "completed"

                live.get_by_role("link", name="See the diff").click()
                expect(page.get_by_role("heading", name=f"Changes of run #{run_id}")).to_be_visible()
                expect(page.locator(".file-diff", has_text="NOTES.md")).to_contain_text("written by the agent")
                page.get_by_role("button", name="Push branch").click()
                expect(page.get_by_text(f"Asked to push gatehouse/run-{run_id}")).to_be_visible()
                shot(page, "repository-2-changes-page")

                inbox = open_inbox(console)  # live and caught up: no card is swapped under the test
                delivery = card(inbox, f"gatehouse/run-{run_id}")
                expect(delivery).to_contain_text("What Gatehouse will push")
                expect(delivery.locator(".delivery-branch")).to_have_text(f"gatehouse/run-{run_id}")
                expect(delivery.locator("tbody")).to_contain_text("NOTES.md")
                expect(delivery.locator("tbody")).to_contain_text("LIVE.md")
                expect(delivery.get_by_role("link", name="Changes so far")).to_have_attribute("href", f"/runs/{run_id}/changes/")
                shot(inbox, "repository-3-delivery-card", delivery)
                delivery.get_by_role("button", name="Approve", exact=True).click()

                # The server's worker pushes the approved commit to the remote.
                deadline = time.monotonic() + 30
                branch = f"refs/heads/gatehouse/run-{run_id}"
                while subprocess.run(["git", "rev-parse", "--verify", "--quiet", branch], cwd=remote, env=GIT_ENV,
                                     capture_output=True, check=False).returncode != 0:
                    assert time.monotonic() < deadline, server.log()
                    time.sleep(0.2)
                assert sh("show", f"{branch}:NOTES.md", cwd=remote) == "written by the agent"
                assert sh("show", f"{branch}:LIVE.md", cwd=remote) == "after the approval"
                assert not errors and not inbox.errors, (errors, inbox.errors)
            except Exception:
                shot(page, "repository-failure")
                print(server.log())
                raise
            finally:
                context.close()
