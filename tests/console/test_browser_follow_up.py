"""Continue a session from the console with the real Claude Code CLI (issue 11): a run
started from the New run form, then a follow-up prompt on its run page; the fake model
receives the earlier turn with the new prompt, so the agent resumed its own conversation."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.console.browser import launch_chromium, running_server, shot
from tests.console.test_browser_decisions import Console
from tests.drivers.test_agents_e2e import _require
from tests.drivers.test_claude_code import CLAUDE_BIN
from tests.fakes import anthropic_server as anthropic

pytestmark = [pytest.mark.browser, pytest.mark.agents]


def test_continue_a_claude_code_session_from_the_run_page(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    binary = _require(str(CLAUDE_BIN), f"the Claude Code CLI ({CLAUDE_BIN})")
    workspace = tmp_path / "project"
    workspace.mkdir()
    with anthropic.FakeAnthropicServer() as model, running_server(tmp_path / "var") as server:
        model.add_turns([anthropic.text("I will remember the word banana.")], [anthropic.text("The word was banana.")])
        server.env.update({"GATEHOUSE_CLAUDE_BIN": binary, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "dummy"})
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()
        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.set_default_timeout(60_000)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            console = Console(server=server, context=context, token=token)
            try:
                page.goto(link)
                page.goto(server.origin + "/runs/new/")
                page.get_by_label("Driver", exact=True).select_option("claude-code")
                page.get_by_label("Prompt", exact=True).fill("Remember the secret word: banana.")
                page.get_by_label("Workspace", exact=True).fill(str(workspace))
                page.get_by_role("button", name="Start run").click()
                expect(page.get_by_role("heading", name=re.compile(r"Run #\d+"))).to_be_visible()
                first_id = int(re.search(r"/runs/(\d+)/", page.url).group(1))  # type: ignore[union-attr]
                first = console.wait_run(first_id, timeout=90)
                assert first["status"] == "completed", (first, server.log())

                page.reload()
                follow_up = page.get_by_role("region", name="Continue this session")
                expect(follow_up).to_be_visible()
                follow_up.get_by_label("Follow-up prompt").fill("What was the secret word?")
                shot(page, "follow-up-form", follow_up)
                follow_up.get_by_role("button", name="Send and start the next run").click()
                expect(page).not_to_have_url(re.compile(rf"/runs/{first_id}/$"))
                second_id = int(re.search(r"/runs/(\d+)/", page.url).group(1))  # type: ignore[union-attr]
                second = console.wait_run(second_id, timeout=90)
                assert second["status"] == "completed", (second, server.log())
                assert (second["session"], second["driver"], second["workspace"]) == (first["session"], "claude-code", first["workspace"])

                last = json.dumps(model.message_requests[-1])
                assert "Remember the secret word: banana." in last  # the earlier turn...
                assert "I will remember the word banana." in last
                assert "What was the secret word?" in last  # ...and the follow-up
                page.reload()
                expect(page.locator("#timeline")).to_contain_text("The word was banana.")
                expect(page.locator("#timeline")).to_contain_text("Continuing the session's Claude Code conversation")

                page.goto(f"{server.origin}/sessions/{first['session']}/")
                expect(page.locator(f"#run-row-{first_id}")).to_be_visible()
                expect(page.locator(f"#run-row-{second_id}")).to_be_visible()
                assert not errors, errors
            except Exception:
                shot(page, "follow-up-failure")
                print(server.log())
                raise
            finally:
                context.close()
