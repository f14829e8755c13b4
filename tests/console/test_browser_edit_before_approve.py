"""Edit before approve in a real browser (issue 32.3): the card's Edit opens the command in
a textarea, "Approve edited" decides with the hash, the decided card shows the diff, the
scripted agent runs the edited command (its file exists, the agent's own does not), and
the run's timeline shows the edit."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser import card, launch_chromium, running_server, shot

pytestmark = pytest.mark.browser

ASKED = """awk 'BEGIN { print "agent" > "agent.txt" }'"""
EDITED = """awk 'BEGIN { print "reviewer" > "reviewer.txt" }'"""


def test_a_reviewer_edits_a_command_and_the_agent_runs_the_edit(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with running_server(tmp_path / "var") as server:
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()

        def api(method: str, path: str, body: dict[str, Any] | None = None) -> Any:
            request = urllib.request.Request(
                server.origin + path, data=json.dumps(body).encode() if body is not None else None, method=method,
                headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())

        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.set_default_timeout(30_000)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            try:
                page.goto(link)
                expect(page.locator("[data-live-status=live]").first).to_be_attached()
                run = api("POST", "/api/v1/runs/", {
                    "driver": "scripted", "prompt": "edit before approve", "policy": "Standard review",
                    "scenario": {"steps": [{"tool": "bash", "input": {"command": ASKED}}, {"message": "done"}]},
                })
                asked = card(page, "agent.txt")
                expect(asked).to_be_visible()  # pushed over the socket
                card_id = asked.get_attribute("id")
                asked.get_by_text("Edit", exact=True).click()
                command = asked.get_by_label("The command to run instead")
                expect(command).to_have_value(ASKED)
                command.fill(EDITED)
                shot(page, "edit-before-approve-card", asked)
                asked.get_by_role("button", name="Approve edited").click()

                done = page.locator(f"#{card_id}-done")
                expect(done).to_contain_text("Approved by admin")
                expect(done).to_contain_text("with an edit")
                expect(done.locator(".edit-diff .add")).to_contain_text("reviewer.txt")
                expect(done.locator(".edit-diff .del")).to_contain_text("agent.txt")

                deadline = time.monotonic() + 30
                while (state := api("GET", f"/api/v1/runs/{run['id']}/"))["status"] not in ("completed", "failed", "cancelled"):
                    assert time.monotonic() < deadline, state
                    time.sleep(0.2)
                assert state["status"] == "completed", state
                workspace = Path(state["workspace"])
                assert (workspace / "reviewer.txt").read_text() == "reviewer\n"
                assert not (workspace / "agent.txt").exists()

                page.goto(f"{server.origin}/runs/{run['id']}/")
                edited = page.locator("#timeline li.event", has_text="Approved with the reviewer's edit")
                expect(edited).to_be_visible()
                expect(edited.locator(".edit-diff .add")).to_contain_text("reviewer.txt")
                shot(page, "edit-before-approve-timeline", edited)
                assert not errors, errors
            except BaseException:
                print(server.log())
                raise
            finally:
                context.close()
