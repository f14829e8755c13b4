"""The newcomer's tour in a real browser, against the real one-process server.

Starts `manage.py serve` on a fresh SQLite database, opens the one-time login link it
prints, and does what issue 2 promises: both demo approvals show on the inbox, a run
started in another tab arrives live, the reviewer approves one and denies one with a
reason, the inbox empties without a reload, and each run page shows its timeline and
final status. Screenshots land in var/screenshots/ for a human to look at.
"""

from __future__ import annotations

import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "var" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`manage.py serve` as a subprocess; its output is kept for failure messages."""

    def __init__(self, var_dir: Path) -> None:
        self.env = {**os.environ, "GATEHOUSE_VAR_DIR": str(var_dir), "PYTHONUNBUFFERED": "1"}
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        self.port = _free_port()
        self.proc: subprocess.Popen[str] | None = None

    def manage(self, *args: str) -> None:
        subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True, timeout=120)

    def start(self) -> str:
        """Start serving; return the login link URL it prints."""
        self.manage("migrate", "--noinput")
        self.proc = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=ROOT, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        threading.Thread(target=self._pump, daemon=True).start()
        deadline = time.monotonic() + 60
        link = ""
        while time.monotonic() < deadline and not link:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            match = re.match(r"Login link: (http://\S+)", line.strip())
            if match:
                link = match.group(1)
        if not link:
            raise AssertionError("serve printed no login link:\n" + self.log())
        self._wait_listening(deadline)
        return link

    def _wait_listening(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("serve is not listening:\n" + self.log())

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.output.append(line)
            self.lines.put(line)

    def log(self) -> str:
        return "".join(self.output[-200:])

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = Server(tmp_path / "var")
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    with sync_api.sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


def _card(page: Any, text: str) -> Any:
    return page.locator("#approvals .approval-pending", has_text=text)


def _shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


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
            '{"steps": [{"tool": "bash", "input": {"command": "echo live > live.txt"}}]}'
        )
        other.get_by_role("button", name="Start run").click()
        expect(other.get_by_role("heading", name=re.compile(r"Run #\d+"))).to_be_visible()
        live = _card(page, "echo live > live.txt")
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
