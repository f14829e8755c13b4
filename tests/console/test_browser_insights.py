"""Rules learned from approvals in a real browser (issue 32, item 1): ten approvals of one
command, the insights page suggests it, "Make this a rule" opens the policy's admin page
with the rule in the document, unsaved. axe-core checks the insights page; its screenshot
is the README tour's."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.console.browser import launch_chromium, running_server
from tests.console.test_browser_decisions import Console, diagnosed
from tests.console.test_browser_inbox import AXE, _axe, _where, docs_shot

pytestmark = pytest.mark.browser
WAIT = {"approvals": {"timeout_s": 900, "on_reject": "continue"}}


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with running_server(tmp_path_factory.mktemp("insights") / "var") as server:
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()
        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.set_default_timeout(30_000)
            try:
                login = context.new_page()
                login.goto(link)
                login.close()
                yield Console(server=server, context=context, token=token)
            finally:
                context.close()


def approve_ten(console: Console, command: str) -> int:
    """Ten runs each asking `command` under the demo policy, each approved; the policy's id."""
    for i in range(10):
        run = console.start_run(f"Run the tests ({i})", [{"tool": "bash", "input": {"command": command}}],
                                policy="demo", run_policy=WAIT)
        deadline = time.monotonic() + 30
        while not console.pending(run["id"]):
            assert time.monotonic() < deadline, console.server.log()
            time.sleep(0.1)
        [approval] = console.pending(run["id"])
        status, body = console.api("POST", f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]})
        assert status == 200, (status, body)
    status, body = console.api("GET", "/api/v1/policies/")
    assert status == 200, (status, body)
    rows = body["results"] if isinstance(body, dict) else body
    return next(p["id"] for p in rows if p["name"] == "demo")


def test_make_this_a_rule_fills_in_the_policy_and_the_page_passes_axe(console: Console) -> None:
    from playwright.sync_api import expect

    policy_id = approve_ten(console, "pytest -q")
    page = console.context.new_page()
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))  # type: ignore[attr-defined]
    with diagnosed(console, page, "insights"):
        page.goto(f"{console.server.origin}/insights/?policy={policy_id}")
        suggested = page.get_by_role("region", name="Rules to learn")
        row = suggested.locator("tr", has=page.locator("code", has_text="pytest"))
        expect(row).to_contain_text("10")
        page.screenshot(path=docs_shot("insights.png"), full_page=False)
        if AXE.exists():
            violations = _axe(page)
            assert not violations, json.dumps([(v["id"], _where(v)) for v in violations], indent=1)
        row.get_by_role("link", name="Make this a rule").click()
        expect(page.locator(".messagelist")).to_contain_text("is added to the document below, not saved")
        document = page.locator("textarea[name=document]").input_value()
        assert '"pytest"' in json.dumps(json.loads(document)["commands"]["allow"])
        assert page.locator("input[name=comment]").input_value().startswith("Rule learned from approvals")
