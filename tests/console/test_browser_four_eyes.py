"""Four eyes in a real browser: with GATEHOUSE_REVIEW_OWN_RUNS=0 the admin, who started the
demo runs and the runs below, sees their cards greyed out with the reason — the cards the
page loads with and a card pushed over the WebSocket alike — and a forced submit is refused.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser import Server, card, launch_chromium, running_server, shot

pytestmark = pytest.mark.browser


def _start_run(server: Server, token: str, command: str) -> dict[str, Any]:
    body = {"driver": "scripted", "prompt": "four eyes", "policy": "demo",
            "scenario": {"steps": [{"tool": "bash", "input": {"command": command}}]}}
    request = urllib.request.Request(
        server.origin + "/api/v1/runs/", data=json.dumps(body).encode(), method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 201
        return json.loads(response.read())


def test_the_starters_cards_are_greyed_out_loaded_or_pushed(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with running_server(tmp_path / "var") as server:
        server.env["GATEHOUSE_REVIEW_OWN_RUNS"] = "0"
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()
        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.set_default_timeout(30_000)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            try:
                page.goto(link)
                expect(page.locator("[data-live-status=live]").first).to_be_attached()
                loaded = page.locator("#approvals .approval-pending").first
                expect(loaded).to_be_visible()  # a demo run's request, started by admin
                expect(loaded.get_by_role("button", name="Approve", exact=True)).to_be_disabled()
                expect(loaded.locator(".own-run-note")).to_be_visible()

                _start_run(server, token, "mkdir -p pushed")
                pushed = card(page, "mkdir -p pushed")
                expect(pushed).to_be_visible()  # arrived over the socket: rendered for no one
                assert pushed.get_attribute("data-starter")
                expect(pushed.get_by_role("button", name="Approve", exact=True)).to_be_disabled()
                expect(pushed.get_by_label("Reason for denying")).to_be_disabled()
                expect(pushed.locator(".own-run-note")).to_have_text(re.compile("You started this run"))
                shot(page, "four-eyes-greyed-out", pushed)

                # Around the greyed-out button: the server refuses it all the same.
                card_id = pushed.get_attribute("id")
                page.evaluate(f"document.querySelector('#{card_id} form.decide fieldset').disabled = false")
                pushed.get_by_role("button", name="Approve", exact=True).click()
                expect(page.locator(f"#{card_id}")).to_contain_text("Someone else must decide.")
                expect(page.locator(f"#{card_id}.approval-pending")).to_have_count(1)
                assert not errors, errors
            finally:
                context.close()
