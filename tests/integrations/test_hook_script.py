"""scripts/gatehouse-hook fails closed: whatever goes wrong, a PreToolUse call is denied
with a reason that names Gatehouse and what failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.fakes.http import BackgroundHTTPServer
from tests.processes import ROOT, free_port

SCRIPT = ROOT / "scripts" / "gatehouse-hook"
EVENT = {"session_id": "s", "cwd": "/w", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}}


class _Handler(BaseHTTPRequestHandler):
    fake: Scripted

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.fake.seen.append((self.path, self.headers.get("Authorization")))
        status, body, delay = self.fake.answer
        time.sleep(delay)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class Scripted(BackgroundHTTPServer):
    handler_class = _Handler

    def __init__(self, status: int, body: bytes, delay: float = 0.0) -> None:
        super().__init__()
        self.answer = (status, body, delay)
        self.seen: list[tuple[str, str | None]] = []


def run_hook(env: dict[str, str], event: dict[str, Any] | None = None, timeout: float = 30) -> tuple[int, str, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")}
    full.update(env)
    done = subprocess.run([str(SCRIPT)], input=json.dumps(event or EVENT), capture_output=True, text=True, env=full, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def denied_because(stdout: str) -> str:
    output = json.loads(stdout)["hookSpecificOutput"]
    assert (output["hookEventName"], output["permissionDecision"]) == ("PreToolUse", "deny"), output
    assert output["permissionDecisionReason"].startswith("Gatehouse")
    return str(output["permissionDecisionReason"])


@pytest.fixture
def answering() -> Iterator[Any]:
    servers: list[Scripted] = []

    def make(status: int, body: Any, delay: float = 0.0) -> Scripted:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        server = Scripted(status, raw, delay).start()
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def test_it_is_an_executable_python_file_with_the_standard_library_only() -> None:
    text = SCRIPT.read_text()
    assert text.startswith("#!/usr/bin/env python3\n") and os.access(SCRIPT, os.X_OK)
    imports = {line.split()[1].split(".")[0] for line in text.splitlines() if line.startswith(("import ", "from "))}
    assert imports <= set(sys.stdlib_module_names) | {"__future__"}


def test_without_configuration_it_denies() -> None:
    code, out, _ = run_hook({})
    assert code == 0 and "GATEHOUSE_URL and GATEHOUSE_TOKEN" in denied_because(out)


def test_an_unreachable_server_is_a_deny() -> None:
    code, out, _ = run_hook({"GATEHOUSE_URL": f"http://127.0.0.1:{free_port()}", "GATEHOUSE_TOKEN": "t"})
    assert code == 0 and "cannot reach the server" in denied_because(out)


def test_an_error_status_is_a_deny_with_the_servers_message(answering: Any) -> None:
    server = answering(401, {"code": "token_revoked", "message": "This token was revoked."})
    _, out, _ = run_hook({"GATEHOUSE_URL": f"http://127.0.0.1:{server.port}", "GATEHOUSE_TOKEN": "t"})
    assert "HTTP 401: This token was revoked." in denied_because(out)
    server = answering(500, b"<html>oops</html>")
    _, out, _ = run_hook({"GATEHOUSE_URL": f"http://127.0.0.1:{server.port}", "GATEHOUSE_TOKEN": "t"})
    assert "HTTP 500" in denied_because(out)


@pytest.mark.parametrize("body", [b"not json", b"[]", {"hookSpecificOutput": {"permissionDecision": "yes"}}, {"allow": True}])
def test_a_malformed_answer_is_a_deny(answering: Any, body: Any) -> None:
    server = answering(200, body)
    _, out, _ = run_hook({"GATEHOUSE_URL": f"http://127.0.0.1:{server.port}", "GATEHOUSE_TOKEN": "t"})
    assert "answer" in denied_because(out)


def test_a_slow_server_is_a_deny_before_the_hooks_own_timeout(answering: Any) -> None:
    server = answering(200, {}, delay=30)
    started = time.monotonic()
    _, out, _ = run_hook({"GATEHOUSE_URL": f"http://127.0.0.1:{server.port}", "GATEHOUSE_TOKEN": "t", "GATEHOUSE_HOOK_TIMEOUT": "0.5"})
    assert "cannot reach the server" in denied_because(out) and "timed out" in out
    assert time.monotonic() - started < 20  # its own 0.5 s timeout, not the server's 30 s


def test_a_decision_is_printed_as_given_and_the_policy_and_token_are_sent(answering: Any) -> None:
    decision = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "ok"}}
    server = answering(200, decision)
    _, out, _ = run_hook({"GATEHOUSE_URL": f"http://127.0.0.1:{server.port}/", "GATEHOUSE_TOKEN": "tok", "GATEHOUSE_POLICY": "strict"})
    assert json.loads(out) == decision
    assert server.seen == [("/api/v1/hooks/claude-code/pre-tool-use/?policy=strict", "Token tok")]


def test_results_and_session_end_are_forwarded_and_never_block(answering: Any) -> None:
    server = answering(200, {})
    env = {"GATEHOUSE_URL": f"http://127.0.0.1:{server.port}", "GATEHOUSE_TOKEN": "t"}
    for event, path in [("PostToolUse", "post-tool-use"), ("SessionEnd", "session-end")]:
        code, out, _ = run_hook(env, {"session_id": "s", "hook_event_name": event})
        assert (code, out) == (0, "")
        assert server.seen[-1][0] == f"/api/v1/hooks/claude-code/{path}/"
    code, out, err = run_hook({"GATEHOUSE_URL": f"http://127.0.0.1:{free_port()}", "GATEHOUSE_TOKEN": "t"},
                              {"session_id": "s", "hook_event_name": "PostToolUse"})
    assert (code, out) == (0, "") and "cannot reach" in err
    assert run_hook(env, {"hook_event_name": "Stop"})[1] == ""


def test_for_codex_no_objection_passes_and_anything_but_a_deny_is_refused(answering: Any) -> None:
    server = answering(200, {})
    env = {"GATEHOUSE_URL": f"http://127.0.0.1:{server.port}", "GATEHOUSE_TOKEN": "t"}
    full = {k: v for k, v in os.environ.items() if not k.startswith("GATEHOUSE_")} | env
    done = subprocess.run([str(SCRIPT), "--agent", "codex"], input=json.dumps(EVENT), capture_output=True, text=True, env=full, timeout=30)
    assert json.loads(done.stdout) == {}
    assert server.seen[-1][0] == "/api/v1/hooks/codex/pre-tool-use/"
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "permissionDecisionReason": "ok"}}
    server = answering(200, allow)
    _, out, _ = run_hook({"GATEHOUSE_URL": f"http://127.0.0.1:{server.port}", "GATEHOUSE_TOKEN": "t", "GATEHOUSE_AGENT": "codex"})
    assert "not a decision Codex takes" in denied_because(out)
