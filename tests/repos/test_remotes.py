"""Remotes other than a directory: a `git daemon` the test starts (git://, fetch and an
approved push), git's smart HTTP behind Basic auth (a right token fetches, a wrong one fails
the run with the reason and the token nowhere), and a force-pushed `main` between two runs."""

from __future__ import annotations

import base64
import logging
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from rest_framework.test import APIClient

from repos.models import Delivery, Repository
from repos.services import repository_create, run_changes, workspace_prepare
from runs.models import Activity, Run
from runs.services import run_create
from tests.flow import decide, eventually, finished, start_run
from tests.processes import free_port
from tests.repos.conftest import GIT_ENV, sh

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = {"steps": [{"tool": "write", "input": {"file_path": "NEW.md", "content": "over the wire\n"}}]}


def _git_program(name: str) -> str:
    exec_path = subprocess.run(["git", "--exec-path"], capture_output=True, text=True, check=True).stdout.strip()
    return os.path.join(exec_path, name)


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port}")


def _missing(reason: str) -> None:
    """CI (GATEHOUSE_REQUIRE_SERVICES=1) fails where a developer's machine skips."""
    if os.environ.get("GATEHOUSE_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def git_daemon(remote: Path) -> Iterator[str]:
    """`git daemon` on 127.0.0.1 serving the `remote` fixture's directory, pushes allowed:
    the URL of the remote over git://."""
    if not os.access(_git_program("git-daemon"), os.X_OK):
        _missing("git-daemon is not installed here (Debian's `git` package ships it in git --exec-path)")
    port = free_port()
    proc = subprocess.Popen(["git", "daemon", "--export-all", f"--base-path={remote.parent}", "--listen=127.0.0.1",
                             f"--port={port}", "--reuseaddr", "--enable=receive-pack", "--informative-errors",
                             str(remote.parent)], env=GIT_ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        _wait_for_port(port, proc)
        yield f"git://127.0.0.1:{port}/{remote.name}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


TOKEN = "ghp_" + "R1ght" * 8
USER = "gatehouse-bot"


class _SmartHTTP(BaseHTTPRequestHandler):
    """git's smart HTTP (`git http-backend` as CGI) behind Basic auth: `USER:TOKEN` or 401."""

    root = ""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        expected = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.headers.get("Authorization", "") != expected:
            self.send_response(HTTPStatus.UNAUTHORIZED)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        path, _, query = self.path.partition("?")
        env = {"PATH": "/usr/bin:/bin", "GIT_PROJECT_ROOT": self.root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
               "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_USER": USER, "REMOTE_ADDR": "127.0.0.1",
               "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
               "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
               "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""), "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_CONFIG_GLOBAL": os.devnull}
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = HTTPStatus.OK, []
        for line in head.decode().split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = HTTPStatus(int(value.split()[0]))
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def smart_http(remote: Path) -> Iterator[str]:
    """The `remote` fixture over http://127.0.0.1:<port>/, Basic auth required."""
    if not os.access(_git_program("git-http-backend"), os.X_OK):
        _missing("git-http-backend is not installed here")
    handler = type("Handler", (_SmartHTTP,), {"root": str(remote.parent)})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{remote.name}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def bob(make_user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(make_user("bob"))
    return client


async def test_a_run_on_a_git_daemon_remote_is_fetched_and_its_approved_push_lands_there(
        api: Any, bob: APIClient, worker: Any, git_daemon: str, remote: Path) -> None:
    await sync_to_async(repository_create)(name="daemon", url=git_daemon)
    run = await start_run(api, WRITE, repository="daemon", prompt="Write NEW.md")
    done = await finished(run["id"])
    assert done.status == "completed", (done.failure_reason, done.failure_detail)
    assert done.base_commit == sh("rev-parse", "main", cwd=remote)
    assert sh("remote", "get-url", "origin", cwd=Path(done.workspace)) == git_daemon
    asked = await sync_to_async(api.post)(f"/api/v1/runs/{done.pk}/deliver/", {"action": "push"}, format="json")
    assert asked.status_code == HTTPStatus.CREATED, asked.content
    approval = (await sync_to_async(bob.get)(f"/api/v1/approvals/{asked.json()['approval']}/")).json()
    assert (await decide(bob, approval, "approve")).status_code == HTTPStatus.OK
    delivery = await eventually(lambda: Delivery.objects.filter(status__in=["pushed", "failed"]).first())
    assert delivery.status == "pushed", delivery.error
    branch = f"refs/heads/gatehouse/run-{done.pk}"
    assert sh("rev-parse", branch, cwd=remote) == delivery.commit
    assert sh("rev-parse", f"{delivery.commit}^", cwd=remote) == done.base_commit
    assert sh("show", f"{branch}:NEW.md", cwd=remote) == "over the wire"


def test_the_right_token_fetches_over_smart_http(reviewer: Any, smart_http: str, remote: Path) -> None:
    repository_create(name="web", url=smart_http, credential_kind="token", secret=TOKEN, username=USER)
    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, repository="web", user=reviewer, prompt="p")
    run = workspace_prepare(run_id=run.pk)
    assert run.base_commit == sh("rev-parse", "main", cwd=remote)
    assert (Path(run.workspace) / "src" / "app.py").exists()
    # The token stayed out of the workspace and out of the mirror's configuration.
    assert TOKEN not in (Path(run.workspace) / ".git" / "config").read_text()
    mirror = next((Path(str(run.workspace)).parent.parent / "repo-cache" / "mirrors").glob("*.git"))
    assert TOKEN not in (mirror / "config").read_text()


async def test_a_wrong_token_fails_the_run_with_the_reason_and_the_token_nowhere(
        api: Any, worker: Any, smart_http: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    wrong = "ghp_" + "Wr0ng" * 8
    await sync_to_async(repository_create)(name="web", url=smart_http, credential_kind="token", secret=wrong, username=USER)
    run = await start_run(api, WRITE, repository="web")
    done = await finished(run["id"])
    assert (done.status, done.failure_reason) == ("failed", "repository_unavailable")
    assert "could not be fetched" in done.failure_detail and "Authentication failed" in done.failure_detail
    activities = str(await sync_to_async(lambda: list(Activity.objects.filter(run_id=done.pk).values("payload")))())
    assert "Authentication failed" in activities  # the reason is recorded...
    for text in (done.failure_detail, activities, caplog.text):
        assert wrong not in text and base64.b64encode(f"{USER}:{wrong}".encode()).decode() not in text  # ...the token is not
    assert not done.workspace


def test_a_force_pushed_main_between_two_runs(reviewer: Any, remote: Path, tmp_path: Path) -> None:
    Repository.objects.create(name="app", url=f"file://{remote}", default_ref="main")

    def prepared() -> Run:
        run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, repository="app", user=reviewer, prompt="p")
        return workspace_prepare(run_id=run.pk)

    first = prepared()
    old = sh("rev-parse", "main", cwd=remote)
    assert first.base_commit == old
    (Path(first.workspace) / "FIRST.md").write_text("first\n")
    # main is rewritten on the remote: a commit that does not descend from the old one.
    rewrite = tmp_path / "rewrite"
    sh("clone", "-q", str(remote), str(rewrite))
    (rewrite / "README.md").write_text("# App, rewritten\n")
    subprocess.run(["git", "commit", "-q", "-a", "--amend", "-m", "rewritten"], cwd=rewrite, env=GIT_ENV, check=True)
    sh("push", "-q", "--force", "origin", "main", cwd=rewrite)
    new = sh("rev-parse", "main", cwd=remote)
    ancestor = subprocess.run(["git", "merge-base", "--is-ancestor", old, new], cwd=remote, env=GIT_ENV, check=False)
    assert new != old and ancestor.returncode == 1
    mirror = next((tmp_path / "repo-cache" / "mirrors").glob("*.git"))
    # Within GATEHOUSE_REPOSITORY_FETCH_MINUTES the mirror is not fetched again...
    assert prepared().base_commit == old
    # ...once it is older, the next run's workspace starts from the rewritten main.
    long_ago = time.time() - 3600
    os.utime(mirror / "gatehouse-fetched", (long_ago, long_ago))
    third = prepared()
    assert third.base_commit == new and sh("rev-parse", "HEAD", cwd=Path(third.workspace)) == new
    assert (Path(third.workspace) / "README.md").read_text() == "# App, rewritten\n"
    assert sh("rev-parse", "refs/heads/main", cwd=mirror) == new  # the fetch pruned nothing of Gatehouse's...
    assert sh("rev-parse", f"refs/gatehouse/bases/run-{first.pk}", cwd=mirror) == old  # ...the first run's base stays
    first.refresh_from_db()
    assert {f.path for f in run_changes(first).files} == {"FIRST.md"}  # still read against its own base

