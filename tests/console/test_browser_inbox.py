"""The reviewer's day in a real browser (issue 11), against the real one-process server:
filter the inbox, keyboard approve and deny, batch approve three cards, the countdown, a
notification on a new request, approve and deny at phone width, and axe-core on every
console page. Screenshots of the inbox and a card go to docs/screenshots/ (the README's tour).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.console.browser import ROOT, card, launch_chromium, running_server, shot
from tests.console.test_browser_decisions import Console, diagnosed

pytestmark = pytest.mark.browser

DOCS = ROOT / "docs" / "screenshots"


def docs_shot(name: str) -> str:
    """Where the README's screenshot NAME is written: docs/screenshots/ when it is missing or
    GATEHOUSE_UPDATE_DOCS=1 asks for fresh ones, var/screenshots/ otherwise (a test run
    leaves the checkout clean)."""
    target = DOCS / name
    if target.exists() and os.environ.get("GATEHOUSE_UPDATE_DOCS") != "1":
        target = ROOT / "var" / "screenshots" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    return str(target)
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
WAIT = {"approvals": {"timeout_s": 900, "on_reject": "continue"}}

# Records every Notification the page creates (the real constructor still runs).
NOTIFICATION_SPY = """
(() => {
  const Real = window.Notification;
  if (!Real) return;
  window.__notifications = [];
  function Spy(title, options) { window.__notifications.push({title, body: (options || {}).body || ""}); return new Real(title, options); }
  Spy.requestPermission = (...args) => Real.requestPermission(...args);
  Object.defineProperty(Spy, "permission", { get: () => Real.permission });
  window.Notification = Spy;
})();
"""


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with running_server(tmp_path_factory.mktemp("inbox") / "var") as server:
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()
        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.set_default_timeout(30_000)
            context.add_init_script(NOTIFICATION_SPY)
            try:
                login = context.new_page()
                login.goto(link)
                login.close()
                console = Console(server=server, context=context, token=token)
                console.browser = browser  # type: ignore[attr-defined]
                yield console
            finally:
                context.close()


def start(console: Console, command: str, *, policy: dict[str, Any] | None = None, prompt: str = "") -> dict[str, Any]:
    run = console.start_run(prompt or f"Please run {command}", [{"tool": "bash", "input": {"command": command}}],
                            policy="demo", run_policy=policy or WAIT)
    deadline = time.monotonic() + 30
    while not console.pending(run["id"]):
        assert time.monotonic() < deadline, console.server.log()
        time.sleep(0.1)
    return run


def open_inbox(console: Console, query: str = "", *, context: Any = None) -> Any:
    from playwright.sync_api import expect

    page = (context or console.context).new_page()
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))  # type: ignore[attr-defined]
    caught_up: list[str] = []
    page.on("requestfinished", lambda r: caught_up.append(r.url) if r.headers.get("hx-target") == "approvals" else None)
    page.goto(f"{console.server.origin}/{query}")
    expect(page.locator("[data-live-status=live]").first).to_be_attached()
    deadline = time.monotonic() + 30
    while not caught_up:
        assert time.monotonic() < deadline, "the inbox did not re-fetch its cards"
        page.wait_for_timeout(50)
    page.wait_for_timeout(150)  # htmx settles swaps after 20 ms
    return page


def decide_all(console: Console) -> None:
    """Leave nothing waiting for the next test (each test reads the same inbox)."""
    status, body = console.api("GET", "/api/v1/approvals/?status=pending&limit=500")
    for approval in body["results"]:
        verb = "answer" if approval["kind"] == "question" else "deny"
        console.api("POST", f"/api/v1/approvals/{approval['id']}/{verb}/", {"hash": approval["hash"], **({"decline": True} if verb == "answer" else {})})


# --- Filters, live, countdown, notifications ------------------------------------------------


def test_filter_the_inbox_and_a_new_request_appears_only_when_it_matches(console: Console) -> None:
    from playwright.sync_api import expect

    decide_all(console)
    push = start(console, "git push origin feature", prompt="Publish the feature branch")
    start(console, "mkdir -p scratch", prompt="Make a scratch dir")
    page = open_inbox(console)
    with diagnosed(console, page, "filter"):
        form = page.get_by_role("search", name="Filter the waiting requests")
        form.locator("summary").click()
        form.get_by_label("Class").select_option("remote-mutation")
        form.get_by_role("button", name="Apply").click()
        expect(page).to_have_url(re.compile(r"class=remote-mutation"))
        expect(page.locator("[data-live-status=live]").first).to_be_attached()
        expect(page.locator("#approvals .approval-pending")).to_have_count(1)
        expect(card(page, "git push origin feature")).to_be_visible()
        expect(page.locator("#pending-count")).to_have_text("1")
        expect(page.locator(".chips")).to_contain_text("Class: remote-mutation")
        page.wait_for_timeout(300)

        start(console, "mkdir -p elsewhere")  # does not match: only the counter moves
        expect(page.locator("#outside-count")).to_have_text("1")
        expect(page.locator(".outside")).to_be_visible()
        start(console, "git push origin second")  # matches: its card arrives
        expect(card(page, "git push origin second")).to_be_visible()
        expect(page.locator("#approvals .approval-pending")).to_have_count(2)
        expect(page.locator("#pending-count")).to_have_text("2")
        expect(page).to_have_title(re.compile(r"^\(2\) Inbox"))
        assert console.pending(push["id"])
    decide_all(console)


def test_the_countdown_runs_and_turns_urgent_in_the_last_minute(console: Console) -> None:
    from playwright.sync_api import expect

    decide_all(console)
    start(console, "git push origin soon", policy={"approvals": {"timeout_s": 65, "on_timeout": "continue"}})
    page = open_inbox(console)
    with diagnosed(console, page, "countdown"):
        request = card(page, "git push origin soon")
        countdown = request.locator(".countdown")
        expect(countdown).to_have_text(re.compile(r"^[01]:\d\d$"))
        expect(request.locator(".deadline")).to_contain_text("then the agent goes on without it (on timeout: continue)")
        first = countdown.inner_text()
        page.wait_for_timeout(2100)
        assert countdown.inner_text() != first, "the countdown does not move"
        expect(request.locator(".deadline.urgent")).to_be_visible(timeout=15_000)  # under a minute left
        shot(page, "inbox-countdown", request)
    decide_all(console)


def test_a_notification_fires_on_a_new_request_once_enabled(console: Console) -> None:
    from playwright.sync_api import expect

    decide_all(console)
    console.context.grant_permissions(["notifications"], origin=console.server.origin)
    page = open_inbox(console)
    with diagnosed(console, page, "notify"):
        toggle = page.get_by_role("button", name="Notify me of new requests")
        expect(toggle).to_be_visible()
        toggle.click()
        expect(page.get_by_role("button", name="Notifications on")).to_have_attribute("aria-pressed", "true")
        page.evaluate("document.hasFocus = () => false")  # the reviewer is in another window
        start(console, "git push origin notify", prompt="Notify the reviewer")
        expect(card(page, "git push origin notify")).to_be_visible()
        page.wait_for_function("window.__notifications && window.__notifications.length > 0")
        note = page.evaluate("window.__notifications[0]")
        assert note["title"] == "Gatehouse: a request waits for you" and "Scripted agent" in note["body"], note
    decide_all(console)


# --- Keyboard and batch -----------------------------------------------------------------------


def test_keyboard_approve_and_deny(console: Console) -> None:
    from playwright.sync_api import expect

    decide_all(console)
    first = start(console, "git push origin keyboard-one")
    second = start(console, "git push origin keyboard-two")
    page = open_inbox(console, "?sort=oldest")
    with diagnosed(console, page, "keyboard"):
        one, two = card(page, "keyboard-one"), card(page, "keyboard-two")
        page.keyboard.press("?")
        expect(page.get_by_role("dialog", name="Keyboard")).to_be_visible()
        page.keyboard.press("Escape")
        page.keyboard.press("j")
        expect(one.get_by_role("heading")).to_be_focused()  # a heading, never a button
        page.keyboard.press("j")
        expect(two.get_by_role("heading")).to_be_focused()
        page.keyboard.press("k")
        expect(one.get_by_role("heading")).to_be_focused()
        one_id = one.get_attribute("id")
        page.keyboard.press("a")
        expect(page.locator(f"#{one_id}-done")).to_contain_text("Approved by admin")
        expect(two.get_by_role("heading")).to_be_focused()  # on to the next card's heading

        page.keyboard.press("d")
        expect(two.get_by_label("Reason for denying")).to_be_focused()
        page.keyboard.type("Not from the keyboard test")
        two_id = two.get_attribute("id")
        page.keyboard.press("Enter")
        expect(page.locator(f"#{two_id}-done")).to_contain_text("Denied by admin: Not from the keyboard test")
        assert console.wait_run(first["id"])["status"] == "completed"
        assert console.wait_run(second["id"])["status"] == "completed"  # on_reject: continue


def test_batch_approve_three_cards(console: Console) -> None:
    from playwright.sync_api import expect

    decide_all(console)
    runs = [start(console, f"git push origin batch-{i}") for i in range(3)]
    keep = start(console, "git push origin not-selected")
    page = open_inbox(console, "?sort=oldest")
    with diagnosed(console, page, "batch"):
        expect(page.locator("#batch-form")).to_be_hidden()
        card(page, "batch-0").get_by_role("checkbox").check()
        page.keyboard.press("j")  # from the first card (its checkbox has the focus) to the second
        page.keyboard.press("x")  # selects it, from the keyboard
        card(page, "batch-2").get_by_role("checkbox").check()
        bar = page.get_by_role("form", name="Decide the selected requests")
        expect(bar).to_be_visible()
        expect(bar.locator("#batch-selected")).to_have_text("3")
        shot(page, "inbox-batch")
        bar.get_by_role("button", name="Approve each once").click()
        expect(page.locator("#batch-status")).to_contain_text("Approved 3 requests, each once (no grant).")
        expect(page.locator(".approval-done.approval-approved")).to_have_count(3)
        expect(card(page, "not-selected")).to_be_visible()
        expect(bar).to_be_hidden()
        for run in runs:
            assert console.wait_run(run["id"])["status"] == "completed"
        assert console.pending(keep["id"])
        status, grants = console.api("GET", f"/api/v1/sessions/{runs[0]['session']}/grants/")
        assert status == 200 and not (grants.get("results", grants) if isinstance(grants, dict) else grants)
    decide_all(console)


# --- The run page: a lost connection is said, and the catch-up merges what was missed --------


def test_the_run_page_says_when_it_is_offline_and_merges_what_it_missed(console: Console) -> None:
    from playwright.sync_api import expect

    decide_all(console)
    run = start(console, "git push origin offline", prompt="Offline and back")
    page = console.open_run(run["id"])
    with diagnosed(console, page, "offline"):
        rows = page.locator("#timeline > li")
        shown = rows.count()
        fetched: list[str] = []
        page.on("request", lambda r: fetched.append(r.url) if r.headers.get("hx-target") == "timeline" else None)
        page.evaluate("htmx.trigger(document.body, 'htmx:wsClose')")
        banner = page.locator("#live-banner")
        expect(banner).to_have_text("Live updates lost: reconnecting…")
        expect(page.locator("[data-live-status=offline]").first).to_be_attached()
        page.evaluate("document.querySelectorAll('#timeline > li').forEach((li, i) => { if (i > 1) li.remove(); })")
        page.evaluate("htmx.trigger(document.body, 'htmx:wsOpen')")  # back: every list catches up
        expect(banner).to_contain_text(re.compile(r"Back online\. \d+ missed updates? merged\."))
        expect(rows).to_have_count(shown)  # the removed rows came back, none twice
        assert any("after=" in url for url in fetched), fetched
    decide_all(console)


# --- Phone ----------------------------------------------------------------------------------


def _no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide at 390 px"


def test_phone_width_approve_and_deny(console: Console) -> None:
    from playwright.sync_api import expect

    decide_all(console)
    long_command = "cd /srv/app && " + " && ".join(f"git push origin release-{i}-with-a-rather-long-branch-name" for i in range(3))
    approve = start(console, long_command, prompt="Publish every release branch")
    deny = start(console, "git push origin phone-deny")
    phone = console.browser.new_context(  # type: ignore[attr-defined]
        viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True, storage_state=console.context.storage_state()
    )
    phone.set_default_timeout(30_000)
    page = open_inbox(console, context=phone)
    try:
        with diagnosed(console, page, "phone"):
            _no_sideways_scroll(page)
            request = card(page, "release-0-with")
            expect(request).to_be_visible()
            for button in request.get_by_role("button").all():
                box = button.bounding_box()
                assert box and box["height"] >= 36 and box["x"] >= 0 and box["x"] + box["width"] <= 390, (button.inner_text(), box)
            shot(page, "phone-card", request)
            request.screenshot(path=docs_shot("phone-card.png"))
            request_id = request.get_attribute("id")
            request.get_by_role("button", name="Approve", exact=True).tap()
            expect(page.locator(f"#{request_id}-done")).to_contain_text("Approved by admin")

            other = card(page, "phone-deny")
            other_id = other.get_attribute("id")
            other.get_by_label("Reason for denying").fill("Not from a phone")
            other.get_by_role("button", name="Deny").tap()
            expect(page.locator(f"#{other_id}-done")).to_contain_text("Denied by admin: Not from a phone")
            _no_sideways_scroll(page)
            assert console.wait_run(approve["id"])["status"] == "completed"
            assert console.wait_run(deny["id"])["status"] == "completed"

            page.goto(f"{console.server.origin}/runs/{approve['id']}/")
            expect(page.locator(".run-header .status")).to_have_text("Completed")
            _no_sideways_scroll(page)
    finally:
        phone.close()


# --- Accessibility and the README's screenshots --------------------------------------------


def _axe(page: Any) -> list[dict[str, Any]]:
    # Evaluated from the test's side (DevTools), not added as an inline <script>: the page's
    # Content-Security-Policy refuses inline scripts without its nonce, a test tool's too.
    page.evaluate(AXE.read_text())
    result = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [v for v in result["violations"] if v["impact"] in ("serious", "critical")]


def _where(violation: dict[str, Any]) -> list[str]:
    """Each node's selector, with the colours and ratio axe measured for a contrast failure."""
    out = []
    for node in violation["nodes"]:
        data = (node.get("any") or [{}])[0].get("data") or {}
        colours = f" {data.get('fgColor')} on {data.get('bgColor')} = {data.get('contrastRatio')}" if isinstance(data, dict) and "fgColor" in data else ""
        out.append(" ".join(node["target"]) + colours)
    return out


def test_every_console_page_passes_axe(console: Console) -> None:
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: `make test` installs axe-core from npm (see the Makefile)")
    decide_all(console)
    run = start(console, "ls && git push origin axe && cat README.md", prompt="Check the pages")
    start(console, "mkdir -p axe-second", prompt="A second request")
    page = open_inbox(console)
    pages = {
        "inbox": "/", "inbox, filtered": "/?kind=permission&class=remote-mutation", "runs": "/runs/",
        "run": f"/runs/{run['id']}/", "new run": "/runs/new/", "sessions": "/sessions/", "session": f"/sessions/{run['session']}/",
    }
    found: dict[str, Any] = {}
    with diagnosed(console, page, "axe"):
        for name, path in pages.items():
            page.goto(console.server.origin + path)
            page.wait_for_timeout(400)
            if name == "inbox":
                page.evaluate("localStorage.removeItem('gatehouse.notify')")  # the screenshot shows the opt-in button
                page.reload()
                page.wait_for_timeout(400)
                page.screenshot(path=docs_shot("inbox.png"), full_page=False)
                card(page, "git push origin axe").screenshot(path=docs_shot("card.png"))
            violations = _axe(page)
            if violations:
                found[name] = [(v["id"], v["impact"], len(v["nodes"]), _where(v)) for v in violations]
        anonymous = console.browser.new_context()  # type: ignore[attr-defined]
        try:
            login = anonymous.new_page()
            login.goto(console.server.origin + "/accounts/login/")
            violations = _axe(login)
            if violations:
                found["login"] = [(v["id"], v["impact"], len(v["nodes"]), _where(v)) for v in violations]
        finally:
            anonymous.close()
    assert not found, json.dumps(found, indent=1)
    decide_all(console)


def test_screenshots_for_the_readme_are_in_docs() -> None:
    """The README's console tour shows the inbox and a card (taken by the tests above)."""
    readme = (ROOT / "README.md").read_text()
    for name in ("inbox.png", "card.png", "phone-card.png"):
        assert f"docs/screenshots/{name}" in readme
        assert (DOCS / name).exists()
