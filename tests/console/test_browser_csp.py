"""The console lives with its Content-Security-Policy, in Chromium against the real server:
the inbox and a run page connect their WebSockets and take a decision over htmx, the policy
admin's "Try it" answers over htmx, an admin add form opens — and no page reports a CSP
violation (a `securitypolicyviolation` event, Chromium's "Refused to …" console error, or a
script error such as a refused eval). A control first shows that a violation would be seen."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.console.browser import card, launch_chromium, running_server, shot
from tests.console.test_browser_decisions import Console

pytestmark = pytest.mark.browser

# Installed before any page script (DevTools: the CSP does not apply to it).
RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.effectiveDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


class Watched:
    """A tab whose CSP violations, console errors and page errors are collected."""

    def __init__(self, context: Any) -> None:
        self.page = context.new_page()
        self.problems: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.problems.append(f"page error: {exc}"))

    def _console(self, message: Any) -> None:
        # Chromium logs each refusal ("Refused to load/execute/apply ... Content Security
        # Policy"); other console errors (an admin page's missing favicon) are not the CSP's.
        if message.type == "error" and ("Content Security Policy" in message.text or "Refused to" in message.text):
            self.problems.append(f"console: {message.text}")

    def violations(self) -> list[str]:
        return list(self.page.evaluate("window.__csp || []"))

    def goto(self, url: str) -> Any:
        response = self.page.goto(url)
        assert response is not None and response.ok, url
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy.split("style-src")[0], (url, policy)
        return response

    def assert_clean(self, where: str) -> None:
        self.page.wait_for_timeout(300)  # a report is dispatched as a task after the block
        found = self.violations() + self.problems
        assert not found, f"{where}: {found}"


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with running_server(tmp_path_factory.mktemp("csp") / "var") as server:
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()
        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.set_default_timeout(30_000)
            context.add_init_script(RECORD_VIOLATIONS)
            try:
                login = context.new_page()
                login.goto(link)
                login.close()
                yield Console(server=server, context=context, token=token)
            finally:
                context.close()


def _asking_run(console: Console, command: str) -> dict[str, Any]:
    run = console.start_run(f"Please run {command}", [{"tool": "bash", "input": {"command": command}}],
                            policy="demo", run_policy={"approvals": {"timeout_s": 900, "on_reject": "continue"}})
    deadline = time.monotonic() + 30
    while not console.pending(run["id"]):
        assert time.monotonic() < deadline, console.server.log()
        time.sleep(0.1)
    return run


def test_a_violation_would_be_seen(console: Console) -> None:
    """The control: what the policy refuses is reported to the listener the test reads."""
    tab = Watched(console.context)
    try:
        tab.goto(console.server.origin + "/runs/")
        tab.page.evaluate("""() => {
            const img = document.createElement("img"); img.src = "http://203.0.113.9/probe.png"; document.body.append(img);
            const style = document.createElement("style"); style.textContent = "body {}"; document.head.append(style);
        }""")
        tab.page.wait_for_timeout(300)
        seen = " ".join(tab.violations())
        assert "img-src" in seen and "style-src-elem" in seen, seen
    finally:
        tab.page.close()


def test_the_inbox_and_a_run_page_work_live_under_the_policy(console: Console) -> None:
    from playwright.sync_api import expect

    run = _asking_run(console, "git push origin csp")
    tab = Watched(console.context)
    try:
        tab.goto(console.server.origin + "/")
        expect(tab.page.locator("[data-live-status=live]").first).to_be_attached()  # the socket opened
        expect(card(tab.page, "git push origin csp")).to_be_visible()
        second = _asking_run(console, "git push origin pushed")  # arrives over the socket
        expect(card(tab.page, "git push origin pushed")).to_be_visible()
        tab.assert_clean("inbox")

        tab.goto(f"{console.server.origin}/runs/{run['id']}/")
        expect(tab.page.get_by_role("heading", name=re.compile(rf"Run #{run['id']}\b"))).to_be_visible()
        expect(tab.page.locator("[data-live-status=live]").first).to_be_attached()
        pending = card(tab.page, "git push origin csp")
        pending.get_by_role("button", name="Approve", exact=True).click()  # an htmx POST, swapped in
        expect(tab.page.locator(".approval-done").first).to_be_visible()
        assert console.wait_run(run["id"])["status"] in ("completed", "failed")
        tab.assert_clean("run page")
    except BaseException:
        shot(tab.page, "csp-failure-console")
        raise
    finally:
        tab.page.close()
    for approval in console.pending(second["id"]):
        console.api("POST", f"/api/v1/approvals/{approval['id']}/deny/", {"hash": approval["hash"]})


def test_the_admin_works_under_the_policy(console: Console) -> None:
    from playwright.sync_api import expect

    tab = Watched(console.context)
    try:
        tab.goto(console.server.origin + "/admin/approvals/policy/")
        tab.page.get_by_role("link", name="Standard review", exact=True).click()
        tab.page.wait_for_load_state()
        tab.page.locator("#try-input").fill("git push origin main")
        tab.page.get_by_role("button", name="Try it").click()  # htmx on the admin page
        expect(tab.page.locator("#try-result .try-verdict .verdict")).to_have_text(re.compile(r"\w+"))
        expect(tab.page.locator("#dry-run-result")).not_to_be_empty()  # hx-trigger="load"
        tab.assert_clean("policy change page")

        tab.goto(console.server.origin + "/admin/integrations/webhookendpoint/add/")
        expect(tab.page.get_by_label("Secret")).to_have_attribute("type", "password")
        tab.goto(console.server.origin + "/admin/integrations/apitoken/add/")
        expect(tab.page.locator("#id_user")).to_be_visible()
        tab.assert_clean("admin add forms")
    except BaseException:
        shot(tab.page, "csp-failure-admin")
        raise
    finally:
        tab.page.close()


def test_no_inline_style_is_left_for_the_policy_to_refuse(console: Console) -> None:
    """htmx's indicator rules moved to gatehouse.css: they still apply."""
    tab = Watched(console.context)
    try:
        tab.goto(console.server.origin + "/runs/")
        hidden = tab.page.evaluate("""() => {
            const el = document.createElement("span"); el.className = "htmx-indicator"; document.body.append(el);
            return getComputedStyle(el).visibility;
        }""")
        assert hidden == "hidden"
        assert tab.page.evaluate("document.querySelectorAll('style').length") == 0
        tab.assert_clean("runs page")
    finally:
        tab.page.close()
