"""The newcomer's tour in a real browser, against the real one-process server.

Starts `manage.py serve` on a fresh SQLite database, opens the one-time login link it
prints, and does what issue 2 promises: both demo approvals show on the inbox, a run
started in another tab arrives live, the reviewer approves one and denies one with a
reason, the inbox empties without a reload, and each run page shows its timeline and
final status. Screenshots land in var/screenshots/ for a human to look at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console.browser import Server, launch_chromium
from tests.console.browser import card as _card
from tests.console.browser import shot as _shot

pytestmark = pytest.mark.browser


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "var")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    with launch_chromium() as instance:
        yield instance


@pytest.mark.smoke  # also in CI's PostgreSQL + Redis pass: the console on the scale-out shape
def test_newcomer_tour(server: Server, browser: Any) -> None:
    from playwright.sync_api import expect

    link = server.start()
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        origin = link.split("/login-link/")[0]
        for asset in ("/static/gatehouse.css", "/static/django_htmx/htmx-2.min.js"):
            status = context.request.get(origin + asset).status
            assert status == 200, f"serve answers {status} for {asset}: the console needs its static files"

        # 1. The link logs in once and lands on the inbox, connected live.
        page.goto(link)
        assert page.url.rstrip("/").endswith(f":{server.port}"), page.url
        expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
        expect(page.locator("[data-live-status=live]").first).to_be_attached()
        page.evaluate("window.__tour = 'same page'")  # gone if anything reloads the page

        # 2. Both demo runs wait on a person: a shell command and a file write.
        shell = _card(page, "hello from Gatehouse")
        write = _card(page, "NOTES.md")
        expect(shell).to_be_visible()
        expect(write).to_be_visible()
        expect(shell.locator("pre")).to_contain_text("echo 'hello from Gatehouse' > hello.txt")
        expect(page.get_by_text("Nothing is waiting for you.")).to_be_hidden()

        # 3. A run started elsewhere (second tab, the New run form) arrives without a reload.
        other = context.new_page()
        other.goto(origin + "/runs/new/")
        other.get_by_label("Prompt").fill("Started in another tab")
        other.get_by_label("Scenario (JSON, scripted driver only)").fill(
            '{"steps": [{"tool": "bash", "input": {"command": "git push origin live"}}]}'
        )
        other.get_by_role("button", name="Start run").click()
        expect(other.get_by_role("heading", name=re.compile(r"Run #\d+"))).to_be_visible()
        live = _card(page, "git push origin live")  # a remote mutation: the default policy asks
        expect(live).to_be_visible()
        expect(page.locator("#runs-body")).to_contain_text("Started in another tab")
        other.close()
        _shot(page, "1-inbox-waiting")

        # 4. Approve the shell command (mouse), deny the write with a reason (keyboard).
        shell_run = shell.get_by_role("link", name=re.compile(r"Run #\d+")).get_attribute("href")
        write_run = write.get_by_role("link", name=re.compile(r"Run #\d+")).get_attribute("href")
        shell_id, write_id = shell.get_attribute("id"), write.get_attribute("id")
        shell.get_by_role("button", name="Approve", exact=True).click()
        expect(page.locator(f"#{shell_id}-done")).to_contain_text("Approved by admin")

        reason = write.get_by_label("Reason for denying")
        reason.fill("Not today: release notes come later")
        reason.press("Enter")
        expect(page.locator(f"#{write_id}-done")).to_contain_text(
            "Denied by admin: Not today: release notes come later"
        )
        live.get_by_role("button", name="Approve", exact=True).click()

        # 5. The inbox is empty, on the same page.
        expect(page.locator("#approvals .approval-pending")).to_have_count(0)
        expect(page.get_by_text("Nothing is waiting for you.")).to_be_visible()
        # ...and the recent runs show how each ended, pushed as it happened.
        shell_row, write_row = (f"#run-row-{href.strip('/').split('/')[-1]}" for href in (shell_run, write_run))
        expect(page.locator(f"{shell_row} .status")).to_have_text("Completed")
        expect(page.locator(f"{write_row} .status")).to_have_text("Failed")
        expect(page.locator(write_row)).to_contain_text("approval_denied")
        assert page.evaluate("window.__tour") == "same page"
        _shot(page, "2-inbox-empty")

        # 6. The approved run: decision with who made it, the command's output, completed.
        page.goto(origin + shell_run)
        timeline = page.locator("#timeline")
        expect(page.locator(".run-header .status")).to_have_text("Completed")
        expect(timeline).to_contain_text("approved by admin")
        expect(timeline.locator("pre.output")).to_contain_text("hello from Gatehouse")
        expect(timeline).to_contain_text("exit code 0")
        _shot(page, "3-run-approved")

        # 7. The denied run: the refusal with its reason, failed with approval_denied.
        page.goto(origin + write_run)
        expect(page.locator(".run-header .status")).to_have_text("Failed")
        expect(page.locator(".run-header .failure")).to_contain_text("approval_denied")
        expect(page.locator("#timeline")).to_contain_text("denied by admin")
        expect(page.locator("#timeline")).to_contain_text("Not today: release notes come later")
        assert not list((Path(server.env["GATEHOUSE_VAR_DIR"]) / "workspaces").glob("*/NOTES.md"))  # never written
        _shot(page, "4-run-denied")

        # 8. The link was spent: a second use is refused.
        fresh = browser.new_context()
        try:
            response = fresh.new_page().goto(link)
            assert response is not None and response.status == 400
        finally:
            fresh.close()
        assert not errors, errors
    except Exception:
        _shot(page, "failure")
        print(server.log())
        raise
    finally:
        context.close()


def test_timeline_rows_that_arrive_out_of_order_are_put_in_the_runs_order(server: Server, browser: Any) -> None:
    """Two rows of one change are two messages on the channel layer; with Redis they can
    arrive in either order. The page places each by its `data-seq`."""
    from playwright.sync_api import expect

    link = server.start()
    page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(link)
    page.goto(link.split("/login-link/")[0] + "/runs/1/")
    timeline = page.locator("#timeline")
    expect(timeline.locator("li[data-seq]").first).to_be_attached()
    last = max(int(s) for s in timeline.locator("li[data-seq]").evaluate_all("rows => rows.map(r => r.dataset.seq)"))

    def push(seq: int) -> None:  # what the socket delivers for one appended activity
        page.evaluate(
            """seq => htmx.swap(document.body, `<ol hx-swap-oob="beforeend:#timeline"><li id="activity-test-${seq}"
                 class="event" data-seq="${seq}">pushed ${seq}</li></ol>`, {swapStyle: "none"})""",
            seq,
        )

    push(last + 2)  # the later row first...
    push(last + 1)  # ...then the one before it
    push(last + 3)
    expect(timeline.locator(f"#activity-test-{last + 3}")).to_be_attached()
    seqs = [int(s) for s in timeline.locator("li[data-seq]").evaluate_all("rows => rows.map(r => r.dataset.seq)")]
    assert seqs == sorted(seqs), seqs
    assert seqs[-3:] == [last + 1, last + 2, last + 3]
    assert not errors, errors
