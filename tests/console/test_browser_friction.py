"""Friction scaled to risk in a real browser (issue 32.2): a card whose class the run policy
marks `typed` asks for the program's name; a wrong word re-renders the card with the
refusal and decides nothing, the right one approves. The card offers no batch checkbox and
no "always allow"."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from tests.console.browser import card, launch_chromium, running_server
from tests.console.test_browser_inbox import docs_shot

pytestmark = pytest.mark.browser


def test_a_typed_card_approves_only_with_the_word(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with running_server(tmp_path / "var") as server:
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()
        body = {"driver": "scripted", "prompt": "typed confirmation", "policy": "demo",
                "run_policy": {"approvals": {"confirm": {"local-mutation": "typed"}}},
                "scenario": {"steps": [{"tool": "bash", "input": {"command": "mkdir -p typed-dir"}}]}}
        request = urllib.request.Request(
            server.origin + "/api/v1/runs/", data=json.dumps(body).encode(), method="POST",
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        )
        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.set_default_timeout(30_000)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            try:
                page.goto(link)
                expect(page.locator("[data-live-status=live]").first).to_be_attached()
                with urllib.request.urlopen(request, timeout=30) as response:
                    assert response.status == 201
                typed = card(page, "mkdir -p typed-dir")
                expect(typed).to_be_visible()  # pushed over the socket
                word = typed.get_by_label("Type mkdir to approve", exact=True)
                expect(word).to_be_visible()
                expect(typed.locator(".batch-pick")).to_have_count(0)
                expect(typed.get_by_role("button", name="Always allow")).to_have_count(0)
                typed.screenshot(path=docs_shot("typed-card.png"))  # the README tour's

                card_id = typed.get_attribute("id")
                word.fill("rm")
                typed.get_by_role("button", name="Approve", exact=True).click()
                expect(page.locator(f"#{card_id}")).to_contain_text("the word does not match")
                expect(page.locator(f"#{card_id}.approval-pending")).to_have_count(1)

                page.locator(f"#{card_id}").get_by_label("Type mkdir to approve", exact=True).fill("mkdir")
                page.locator(f"#{card_id}").get_by_role("button", name="Approve", exact=True).click()
                expect(page.locator(f"#{card_id}-done")).to_contain_text("Approved by admin")
                assert not errors, errors
            finally:
                context.close()
