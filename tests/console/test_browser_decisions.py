"""Every kind of human decision, made in a real browser against the real one-process server.

One `manage.py serve` per module (a fresh SQLite database, its demo runs included); runs are
started over the API with a token, as an integration would, and decided on their run page
in headless Chromium: questions answered with the keyboard (single, multi and free-text
"Other"; an incomplete answer refused; declining), plan review (Markdown rendered, agent
HTML inert; approve with accept-edits; send back with feedback), "always allow" grants
(used by a second run of the session, revoked so a third run asks again), and a denial
whose reason is sent with Enter. Screenshots of each card land in var/screenshots/.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser import Server, card, launch_chromium, running_server, shot

pytestmark = pytest.mark.browser

# Questions are asked and a refusal lets the run go on (as the defaults do, said here), so the
# agent's next message shows what it was told.
ASK_AND_CONTINUE = {"approvals": {"question": "ask", "timeout_s": 600, "on_reject": "continue"}}
TERMINAL = {"completed", "failed", "cancelled"}
CATCH_UP_PARTIALS = 4  # run header, pending cards, timeline, grants


@dataclass
class Console:
    server: Server
    context: Any
    token: str
    dialogs: list[str] = field(default_factory=list)

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """Call the API with the admin's token (no browser cookies involved)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.server.origin + path, data=data, method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            return exc.code, json.loads(raw) if raw else None

    def start_run(self, prompt: str, steps: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        body = {"driver": "scripted", "prompt": prompt, "scenario": {"steps": steps}, "run_policy": ASK_AND_CONTINUE, **extra}
        status, run = self.api("POST", "/api/v1/runs/", body)
        assert status == 201, (status, run)
        return run

    def wait_run(self, run_id: int, timeout: float = 30) -> dict[str, Any]:
        """Poll the API until the run has ended; return it."""
        deadline = time.monotonic() + timeout
        while True:
            status, run = self.api("GET", f"/api/v1/runs/{run_id}/")
            assert status == 200, (status, run)
            if run["status"] in TERMINAL:
                return run
            if time.monotonic() > deadline:
                raise AssertionError(f"run {run_id} is still {run['status']} after {timeout:g} s:\n{self.server.log()}")
            time.sleep(0.2)

    def pending(self, run_id: int) -> list[dict[str, Any]]:
        status, body = self.api("GET", f"/api/v1/approvals/?status=pending&run={run_id}")
        assert status == 200, (status, body)
        return body["results"] if isinstance(body, dict) and "results" in body else body

    def open_run(self, run_id: int) -> Any:
        """A new tab on the run page, connected live; it records dialogs and page errors."""
        from playwright.sync_api import expect

        page = self.context.new_page()
        page.errors = []  # type: ignore[attr-defined]
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))  # type: ignore[attr-defined]

        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(f"{dialog.type}: {dialog.message}")
            dialog.dismiss()

        page.on("dialog", on_dialog)
        # When the socket opens, the header, cards, timeline and grants re-fetch themselves
        # (a catch-up). Deciding while a catch-up is in flight races it (see the report), so
        # a reviewer here acts, as a person would, once the page has caught up.
        caught_up: list[str] = []
        page.on("requestfinished", lambda r: caught_up.append(r.url) if r.method == "GET" and r.headers.get("hx-request") else None)
        page.goto(f"{self.server.origin}/runs/{run_id}/")
        expect(page.get_by_role("heading", name=re.compile(rf"Run #{run_id}\b"))).to_be_visible()
        expect(page.locator("[data-live-status=live]").first).to_be_attached()
        deadline = time.monotonic() + 30
        while len(caught_up) < CATCH_UP_PARTIALS:
            assert time.monotonic() < deadline, f"the run page re-fetched only {caught_up}"
            page.wait_for_timeout(50)
        page.evaluate("() => new Promise(resolve => setTimeout(resolve, 100))")  # htmx settles swaps after 20 ms
        return page


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    with running_server(tmp_path_factory.mktemp("decisions") / "var") as server:
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()
        assert re.fullmatch(r"gh_[0-9a-f]{8}_[A-Za-z0-9_-]{40,}", token), token  # integrations.tokens
        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            context.set_default_timeout(30_000)
            try:
                login = context.new_page()
                login.goto(link)  # the one-time link signs the whole context in
                assert login.url.rstrip("/").endswith(f":{server.port}"), login.url
                login.close()
                yield Console(server=server, context=context, token=token)
            finally:
                context.close()


@contextmanager
def diagnosed(console: Console, page: Any, name: str) -> Iterator[None]:
    """On failure: a screenshot and the server's output; always: the tab is closed."""
    try:
        yield
        assert not page.errors, page.errors
    except BaseException:
        try:
            shot(page, f"decisions-failure-{name}")
        finally:
            print(console.server.log())
        raise
    finally:
        page.close()


def _run_row_decision(page: Any, text: str) -> Any:
    return page.locator("#timeline li.event", has_text=text)


# --- 1. Questions ------------------------------------------------------------------------

QUESTIONS = [
    {"id": "color", "header": "Color", "question": "Which colour should the badge be?",
     "options": [{"label": "Red", "description": "loud"}, {"label": "Green", "description": "calm"},
                 {"label": "Blue", "description": ""}], "multi_select": False, "allow_other": False},
    {"id": "scope", "header": "Scope", "question": "Which areas does it touch?",
     "options": [{"label": "Auth", "description": ""}, {"label": "Export", "description": ""},
                 {"label": "Billing", "description": ""}], "multi_select": True, "allow_other": False},
    {"id": "name", "header": "Branch", "question": "What should the branch be called?",
     "options": [], "multi_select": False, "allow_other": True},
]
DECLINED_QUESTION = [
    {"id": "deploy", "header": "Deploy", "question": "Deploy to production now?",
     "options": [{"label": "Yes", "description": ""}, {"label": "No", "description": ""}],
     "multi_select": False, "allow_other": False},
]


def test_questions_answered_with_the_keyboard_refused_when_empty_and_declined(console: Console) -> None:
    from playwright.sync_api import expect

    run = console.start_run(
        "Ask me things",
        [{"question": {"questions": QUESTIONS}}, {"question": {"questions": DECLINED_QUESTION}}, {"message": "Done asking."}],
    )
    page = console.open_run(run["id"])
    with diagnosed(console, page, "questions"):
        question = card(page, "Which colour should the badge be?")
        expect(question).to_be_visible()
        card_id = question.get_attribute("id")
        # Every question is a labelled group; single choice is radios, multi choice checkboxes.
        expect(question.get_by_role("group", name=re.compile("Which colour"))).to_be_visible()
        expect(question.get_by_role("radio", name=re.compile("^Green"))).to_be_visible()
        expect(question.get_by_role("checkbox", name=re.compile("^Export"))).to_be_visible()
        expect(question.get_by_role("textbox")).to_have_count(1)  # only the free-text question has "Other"
        shot(page, "decisions-1-question-card", question)

        # An empty answer is refused (a partial one is accepted since issue 30): a clear
        # error, the card stays pending with its form.
        question.get_by_role("textbox").focus()
        page.keyboard.press("Enter")
        question = page.locator(f"#{card_id}")
        alert = question.get_by_role("alert")
        expect(alert).to_contain_text("Not accepted.")
        expect(alert).to_contain_text("Answer at least one question, or decline.")
        expect(question).to_have_class(re.compile(r"\bapproval-pending\b"))
        assert console.pending(run["id"]), "the refused answer resolved the question"
        shot(page, "decisions-1-question-refused", question)

        # Answer it with the keyboard: arrows move the choice within a radio group, Space
        # ticks the checkboxes, Enter in the text sends.
        question.get_by_role("radio", name=re.compile("^Red")).focus()
        page.keyboard.press("Space")
        page.keyboard.press("ArrowDown")
        expect(question.get_by_role("radio", name=re.compile("^Green"))).to_be_checked()
        question.get_by_role("checkbox", name=re.compile("^Auth")).focus()
        page.keyboard.press("Space")
        page.keyboard.press("Tab")
        page.keyboard.press("Space")  # Export
        expect(question.get_by_role("checkbox", name=re.compile("^Export"))).to_be_checked()
        expect(question.get_by_role("checkbox", name=re.compile("^Billing"))).not_to_be_checked()
        page.keyboard.press("Tab")
        page.keyboard.press("Tab")  # past Billing, to the free text
        expect(question.get_by_role("textbox")).to_be_focused()
        page.keyboard.press("ControlOrMeta+A")
        page.keyboard.type("feature/green-badge")
        page.keyboard.press("Enter")
        done = page.locator(f"#{card_id}-done")
        expect(done).to_contain_text("Answered by admin")

        # The second question is declined (keyboard: focus the button, Enter).
        declined = card(page, "Deploy to production now?")
        expect(declined).to_be_visible()
        declined_id = declined.get_attribute("id")
        declined.get_by_role("button", name="Decline to answer").focus()
        page.keyboard.press("Enter")
        expect(page.locator(f"#{declined_id}-done")).to_contain_text("Declined by admin")

        ended = console.wait_run(run["id"])
        assert ended["status"] == "completed", ended
        page.reload()
        timeline = page.locator("#timeline")
        expect(page.locator(".run-header .status")).to_have_text("Completed")
        expect(timeline).to_contain_text("Answered: Color = Green; Scope = Auth, Export; Branch = feature/green-badge")
        expect(timeline).to_contain_text("Thanks, I got the answers")
        expect(timeline).to_contain_text("declined by admin")
        expect(timeline).to_contain_text("The request was refused: No human answer: the reviewer declined the question.")
        expect(timeline).to_contain_text("Done asking.")
        shot(page, "decisions-1-run-answered")
        assert not console.dialogs, console.dialogs


# --- 2. Plan review ----------------------------------------------------------------------

HOSTILE_PLAN = """# Release plan

1. Bump the version
2. Tag the release

- keep the changelog short
- **no** force pushes

<script>window.__planScript = 1; alert("script from the plan")</script>

<img src="x" onerror="window.__planImg = 1; alert('img from the plan')">

[a link](javascript:alert('link from the plan'))
"""


def test_plan_review_renders_markdown_inertly_approves_with_accept_edits_and_sends_back(console: Console) -> None:
    from playwright.sync_api import expect

    run = console.start_run(
        "Plan the release",
        [{"plan": HOSTILE_PLAN}, {"plan": "# Second plan\n\n- delete the tests"}, {"message": "Plan phase over."}],
    )
    page = console.open_run(run["id"])
    with diagnosed(console, page, "plan"):
        plan_card = card(page, "Bump the version")
        expect(plan_card).to_be_visible()
        card_id = plan_card.get_attribute("id")
        plan = plan_card.locator(".plan")
        # The Markdown renders...
        expect(plan.get_by_role("heading", name="Release plan")).to_be_visible()
        expect(plan.locator("ol > li")).to_have_count(2)
        expect(plan.locator("ul > li")).to_have_count(2)
        expect(plan.locator("strong")).to_have_text("no")
        # ...and the agent's HTML is shown as text, never run.
        expect(plan).to_contain_text('<script>window.__planScript = 1; alert("script from the plan")</script>')
        expect(plan).to_contain_text("onerror=")
        assert plan.locator("script, img, iframe, [onerror]").count() == 0
        assert page.locator("script", has_text="__planScript").count() == 0
        assert page.locator("img[onerror]").count() == 0
        assert plan.locator("a[href^='javascript']").count() == 0
        assert page.evaluate("[window.__planScript, window.__planImg]") == [None, None]
        assert not console.dialogs, console.dialogs
        shot(page, "decisions-2-plan-card", plan_card)

        plan_card.get_by_role("button", name="Approve and accept edits").click()
        expect(page.locator(f"#{card_id}-done")).to_contain_text("Approved by admin")
        expect(page.locator(f"#{card_id}-done")).to_contain_text("accept-edits")
        timeline = page.locator("#timeline")
        expect(_run_row_decision(page, "mode accept-edits")).to_contain_text("approved by admin")
        expect(timeline).to_contain_text("The plan was approved; continuing in accept-edits mode.")

        # The second plan goes back with feedback (Ctrl+Enter sends the multi-line field).
        second = card(page, "delete the tests")
        expect(second).to_be_visible()
        second_id = second.get_attribute("id")
        feedback = second.get_by_label("Feedback for the agent")
        feedback.fill("Keep the tests.")
        feedback.press("Shift+Enter")  # a new line, not a send
        feedback.press_sequentially("Delete nothing.")
        expect(page.locator(f"#{second_id}")).to_be_visible()
        feedback.press("ControlOrMeta+Enter")
        expect(page.locator(f"#{second_id}-done")).to_contain_text("Denied by admin: Keep the tests.")

        ended = console.wait_run(run["id"])
        assert ended["status"] == "completed", ended
        expect(timeline).to_contain_text("The request was refused: Keep the tests.")
        expect(timeline).to_contain_text("Delete nothing.")
        expect(timeline).to_contain_text("Plan phase over.")
        shot(page, "decisions-2-run-plans")
        assert page.evaluate("[window.__planScript, window.__planImg]") == [None, None]
        assert not console.dialogs, console.dialogs


# --- 3. Always allow: a grant, used, revoked ---------------------------------------------

# Under the demo policy a local mutation asks; the narrowest useful grant is `mkdir build`
# (matched by meaning, so it covers `mkdir -p build`, and nothing wider).
GRANTED_STEP = {"tool": "bash", "input": {"command": "mkdir -p build"}}


def test_always_allow_grants_the_session_until_revoked(console: Console) -> None:
    from playwright.sync_api import expect

    first = console.start_run("Make a build dir", [GRANTED_STEP], policy="demo")
    session = first["session"]
    page = console.open_run(first["id"])
    with diagnosed(console, page, "grant"):
        grants = page.locator("#grants")
        expect(grants).to_contain_text("Nothing yet.")
        request = card(page, "mkdir -p build")
        expect(request).to_be_visible()
        card_id = request.get_attribute("id")
        always = request.get_by_role("button", name="Always allow mkdir build in this session")
        expect(always).to_be_visible()
        shot(page, "decisions-3-permission-card", request)
        always.click()
        expect(page.locator(f"#{card_id}-done")).to_contain_text("Approved by admin for the session")

        # The grant shows under the session's grants, pushed without a reload.
        grant_row = grants.locator("li", has_text="mkdir")
        expect(grant_row).to_have_count(1)
        expect(grant_row).to_contain_text("by admin")
        expect(grant_row.get_by_role("button", name="Revoke")).to_be_visible()
        grant_text = grant_row.inner_text()
        assert console.wait_run(first["id"])["status"] == "completed"
        expect(page.locator("#timeline")).to_contain_text("always allowed for this session")
        shot(page, "decisions-3-grant-listed", grants)
        shot(page, "decisions-3-run-granted")

        # A second run in the same session runs the command without asking.
        second = console.start_run("Again", [GRANTED_STEP], policy="demo", session=session)
        assert second["session"] == session
        assert console.wait_run(second["id"])["status"] == "completed"
        second_page = console.open_run(second["id"])
        with diagnosed(console, second_page, "grant-used"):
            expect(second_page.locator("#approvals .approval")).to_have_count(0)
            expect(second_page.locator("#timeline")).to_contain_text(re.compile(r"Decision: allow by grant \(grant #\d+\)"))
            expect(second_page.locator("#grants li", has_text="mkdir")).to_have_count(1)

        # Revoked in the console: a third run asks again.
        grant_row.get_by_role("button", name="Revoke").click()
        expect(grants.locator("li", has_text="mkdir")).to_have_count(0)
        expect(grants).to_contain_text("Nothing yet.")
        status, active = console.api("GET", f"/api/v1/sessions/{session}/grants/")
        assert status == 200 and not (active.get("results", active) if isinstance(active, dict) else active), active

        third = console.start_run("Once more", [GRANTED_STEP], policy="demo", session=session)
        third_page = console.open_run(third["id"])
        with diagnosed(console, third_page, "grant-revoked"):
            asked = card(third_page, "mkdir -p build")
            expect(asked).to_be_visible()
            asked.get_by_role("button", name="Approve", exact=True).click()
            assert console.wait_run(third["id"])["status"] == "completed"
        assert not console.dialogs, console.dialogs

        # The grant is named as the button names it: once, the command as code, no raw Markdown.
        assert "`" not in grant_text, f"the grants list shows raw Markdown: {grant_text!r}"
        granted = page.locator("#timeline li.event", has_text="granted by")
        expect(granted).to_have_count(1)
        assert not re.search(r"Always allow\W+Always allow|`", granted.inner_text()), granted.inner_text()


# --- 4. Deny with a reason, sent with Enter ----------------------------------------------


def test_deny_with_a_reason_sent_with_enter(console: Console) -> None:
    from playwright.sync_api import expect

    run = console.start_run(
        "Make a scratch dir", [{"tool": "bash", "input": {"command": "mkdir -p scratch"}}, {"message": "Moving on."}],
        policy="demo",
    )
    page = console.open_run(run["id"])
    with diagnosed(console, page, "deny"):
        request = card(page, "mkdir -p scratch")
        expect(request).to_be_visible()
        card_id = request.get_attribute("id")
        reason = request.get_by_label("Reason for denying")
        reason.fill("Use the existing tmp/ directory")
        reason.press("Enter")
        expect(page.locator(f"#{card_id}-done")).to_contain_text("Denied by admin: Use the existing tmp/ directory")
        shot(page, "decisions-4-denied-card", page.locator(f"#{card_id}-done"))

        ended = console.wait_run(run["id"])
        assert ended["status"] == "completed", ended  # on_reject: continue
        timeline = page.locator("#timeline")
        expect(timeline).to_contain_text("Reason: Use the existing tmp/ directory")
        expect(timeline).to_contain_text("The request was refused: Use the existing tmp/ directory")
        expect(timeline).to_contain_text("Moving on.")
        workspace = Path(ended["workspace"])
        assert not (workspace / "scratch").exists()
        assert not console.dialogs, console.dialogs


# --- 5. Runtime modes ----------------------------------------------------------------------


def test_runtime_mode_set_in_the_console_applies_to_the_next_run_of_the_session(console: Console) -> None:
    from playwright.sync_api import expect

    step = {"tool": "bash", "input": {"command": "mkdir -p modes"}}
    first = console.start_run("Before the mode change", [step], policy="demo")
    page = console.open_run(first["id"])
    with diagnosed(console, page, "modes"):
        asked = card(page, "mkdir -p modes")
        expect(asked).to_be_visible()  # approval-required: the policy's ask reaches a person
        asked.get_by_role("button", name="Approve", exact=True).click()
        assert console.wait_run(first["id"])["status"] == "completed"

        modes = page.locator("#session-modes")
        runtime = modes.get_by_label("Runtime mode")
        expect(runtime).to_have_value("approval-required")
        runtime.select_option(label="Full access")
        modes.get_by_role("button", name="Save").press("Enter")
        expect(modes.get_by_role("status")).to_have_text("Saved.")
        expect(modes.get_by_label("Runtime mode")).to_have_value("full-access")
        status, session = console.api("GET", f"/api/v1/sessions/{first['session']}/")
        assert status == 200 and session["runtime_mode"] == "full-access", session
        shot(page, "decisions-5-session-modes", modes)

        second = console.start_run("After the mode change", [step], policy="demo", session=first["session"])
        assert console.wait_run(second["id"])["status"] == "completed"
        second_page = console.open_run(second["id"])
        with diagnosed(console, second_page, "modes-applied"):
            expect(second_page.locator("#approvals .approval")).to_have_count(0)
            requested = second_page.locator("#timeline li.event", has_text="The agent asks to use")
            expect(requested).to_contain_text(re.compile(r"Decision: allow by \S*mode"))
            expect(second_page.locator("#session-modes").get_by_label("Runtime mode")).to_have_value("full-access")
        assert not console.dialogs, console.dialogs


# --- 6. A catch-up fetch that answers after a decision ----------------------------------------


def test_a_late_catch_up_never_brings_a_decided_card_back(console: Console) -> None:
    """The page re-fetches its cards when the socket (re)opens. If that answer was rendered
    before the reviewer's decision and arrives after it, the decided card keeps its outcome
    and no pending copy comes back."""
    from playwright.sync_api import expect

    run = console.start_run("Race the catch-up", [{"tool": "bash", "input": {"command": "mkdir -p raced"}}], policy="demo")
    page = console.open_run(run["id"])
    with diagnosed(console, page, "catch-up-race"):
        request = card(page, "mkdir -p raced")
        expect(request).to_be_visible()
        card_id = request.get_attribute("id")
        held: list[Any] = []

        def hold_the_catch_up(route: Any) -> None:
            if route.request.headers.get("hx-target") == "approvals" and not held:
                held.append((route, route.fetch()))  # rendered now: the card still pending
            else:
                route.continue_()

        page.route(f"**/runs/{run['id']}/", hold_the_catch_up)
        page.evaluate("htmx.trigger(document.body, 'htmx:wsOpen')")
        deadline = time.monotonic() + 10
        while not held and time.monotonic() < deadline:
            page.wait_for_timeout(50)
        assert held, "the catch-up request was not made"

        request.get_by_role("button", name="Approve", exact=True).click()
        expect(page.locator(f"#{card_id}-done")).to_contain_text("Approved by admin")

        route, stale = held[0]
        route.fulfill(response=stale)
        page.wait_for_timeout(300)  # let htmx swap the late answer in
        expect(page.locator(f"#{card_id}-done")).to_contain_text("Approved by admin")
        expect(page.locator(f"#{card_id}")).to_have_count(0)
        assert console.wait_run(run["id"])["status"] == "completed"


# --- 7. Focus after a decision: the next card's heading, never its Approve button -------------


def test_after_a_keyboard_approval_focus_is_on_the_next_heading_and_enter_approves_nothing(console: Console) -> None:
    from playwright.sync_api import expect

    runs = []
    for name in ("focus-first", "focus-second"):  # one after the other: the second card is the later
        run = console.start_run(f"Focus {name}", [{"tool": "bash", "input": {"command": f"mkdir -p {name}"}}], policy="demo")
        deadline = time.monotonic() + 30
        while not console.pending(run["id"]):
            assert time.monotonic() < deadline, console.server.log()
            time.sleep(0.1)
        runs.append(run)
    first_approval, second_approval = (console.pending(run["id"])[0] for run in runs)

    page = console.context.new_page()
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))  # type: ignore[attr-defined]
    caught_up: list[str] = []
    page.on("requestfinished", lambda r: caught_up.append(r.url) if r.headers.get("hx-target") == "approvals" else None)
    page.goto(f"{console.server.origin}/")
    with diagnosed(console, page, "focus"):
        expect(page.locator("[data-live-status=live]").first).to_be_attached()
        deadline = time.monotonic() + 30
        while not caught_up:
            assert time.monotonic() < deadline, "the inbox did not re-fetch its cards"
            page.wait_for_timeout(50)
        page.wait_for_timeout(100)  # htmx settles swaps after 20 ms

        first = page.locator(f"#approval-{first_approval['id']}")
        second = page.locator(f"#approval-{second_approval['id']}")
        expect(second.locator(".title-source")).to_have_text("Title from the agent")
        first.get_by_role("button", name="Approve", exact=True).focus()
        page.keyboard.press("Enter")
        expect(page.locator(f"#approval-{first_approval['id']}-done")).to_contain_text("Approved by admin")

        heading = second.get_by_role("heading")
        expect(heading).to_be_focused()
        assert page.evaluate("document.activeElement.tagName") == "H3"
        shot(page, "decisions-7-focus-on-next-heading", second)

        # A second Enter, as a reviewer leaning on the key would send: nothing is approved.
        page.keyboard.press("Enter")
        page.keyboard.press("Enter")
        page.wait_for_timeout(700)
        expect(second).to_have_class(re.compile(r"\bapproval-pending\b"))
        assert [a["id"] for a in console.pending(runs[1]["id"])] == [second_approval["id"]]

        # The reviewer who has read it goes to its Approve button on purpose.
        second.get_by_role("button", name="Approve", exact=True).focus()
        page.keyboard.press("Enter")
        expect(page.locator(f"#approval-{second_approval['id']}-done")).to_contain_text("Approved by admin")
        # Focus lands on a heading again (another waiting card's, or with none left the decided one's).
        expect(page.locator("#approvals .card-title:focus")).to_have_count(1)
    for run in runs:
        assert console.wait_run(run["id"])["status"] == "completed"
