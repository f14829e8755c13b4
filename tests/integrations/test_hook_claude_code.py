"""A developer's own Claude Code under Gatehouse: the real CLI (2.1.197), a command hook
configured with `--settings` running `scripts/gatehouse-hook`, against a real `serve`
process (Daphne + worker), the model faked on 127.0.0.1 (tests/fakes/anthropic_server.py).

An allowed read runs at once; a denied command is blocked with the policy's reason; an
`ask` waits until the test approves it through the API, then runs; with the server
stopped, the hook denies and the reason names Gatehouse.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from drivers.claude_code.driver import ISOLATION_ENV
from tests.drivers.test_claude_code import CLAUDE_BIN, require_cli
from tests.fakes.anthropic_server import FakeAnthropicServer, text, tool_use
from tests.processes import ROOT, ManagedProcess, child_env, free_port, manage

pytestmark = [pytest.mark.agents]

HOOK = ROOT / "scripts" / "gatehouse-hook"
POLICY = {
    "commands": {"allow": ["cat", "ls"], "ask": ["touch"], "deny": [{"match": "rm", "reason": "Nothing is deleted in this repository."}]},
    "default": "ask",
}
CREATE_POLICY = (
    "from approvals.models import Policy; from approvals.services import policy_save; import json; "
    f"policy_save(policy=Policy(name='hooks', document=json.loads({json.dumps(json.dumps(POLICY))})))"
)


class Gatehouse:
    """A `serve` process on a fresh database, with a token for the hook and one for the test."""

    def __init__(self, tmp: Path) -> None:
        self.env = child_env(GATEHOUSE_VAR_DIR=tmp / "var", GATEHOUSE_API_RATE="")
        for args in (["migrate", "--noinput", "-v", "0"], ["shell", "-c", CREATE_POLICY]):
            step = manage(args, self.env)
            assert step.proc.wait(timeout=120) == 0, step.lines
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # At DEBUG the server logs each round of the hook's wait that found its request undecided.
        serve_env = {**self.env, "GATEHOUSE_LOG_LEVEL": "DEBUG"}
        self.server: ManagedProcess = manage(["serve", "--no-demo", "--host", "127.0.0.1", "--port", str(self.port)], serve_env)
        self.server.wait_for_line("Login link: ")
        self.hook_token = self.token("hooks")
        self.api_token = self.token("read,approvals:decide")

    def token(self, scopes: str) -> str:
        command = manage(["create_api_token", "admin", "--scopes", scopes], self.env)
        assert command.proc.wait(timeout=60) == 0, command.lines
        return command.lines[-1].strip()

    def api(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            self.url + path, method=method, data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {self.api_token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def still_pending(self, approval_id: int) -> int:
        """How many rounds of the hook's wait found this approval undecided (the server's log)."""
        line = f"hook gateway: approval {approval_id} still pending"
        return sum(line in logged for logged in list(self.server.lines))

    def stop(self) -> None:
        self.server.stop()


def claude(tmp: Path, workspace: Path, model: FakeAnthropicServer, gatehouse_url: str, token: str) -> subprocess.Popen[str]:
    """The CLI in print mode with docs/api.md's hook settings (the hook command and timeout)."""
    settings = tmp / "settings.json"
    command = str(HOOK)
    settings.write_text(json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 60}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 15}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": command, "timeout": 15}]}],
    }}))
    home = tmp / "home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ["PATH"], "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "dummy", **ISOLATION_ENV,
        "GATEHOUSE_URL": gatehouse_url, "GATEHOUSE_TOKEN": token, "GATEHOUSE_POLICY": "hooks",
    }
    argv = [str(CLAUDE_BIN), "-p", "Do the scripted task.", "--output-format", "stream-json", "--verbose",
            "--settings", str(settings)]
    return subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"claude did not finish:\n{out[-3000:]}\n{err[-3000:]}") from None
    return proc.returncode, out, err


def wait_for(check: Any, timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("condition not met in time")


def test_claude_code_under_the_hook_gateway(tmp_path: Path) -> None:
    require_cli()
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello from the readme\n")
    gatehouse = Gatehouse(tmp_path)
    try:
        with FakeAnthropicServer() as model:
            model.add_turns(
                [tool_use("Bash", {"command": "cat README.md", "description": "Show the readme"})],
                [tool_use("Bash", {"command": "rm -rf build", "description": "Clean"})],
                [tool_use("Bash", {"command": "touch approved.txt", "description": "Mark it"})],
                [text("All done.")],
            )
            proc = claude(tmp_path, workspace, model, gatehouse.url, gatehouse.hook_token)
            # The `ask` (touch) waits in the gateway until a reviewer approves it over the API.
            approval = wait_for(lambda: (gatehouse.api("GET", "/api/v1/approvals/?status=pending")["results"] or [None])[0], 90)
            assert approval["presentation"]["command"] == "touch approved.txt"
            # The gateway found the request undecided, waited a round and found it so again:
            # had it been going to answer without the reviewer, it would have by then.
            wait_for(lambda: gatehouse.still_pending(approval["id"]) >= 2, 30)
            assert not (workspace / "approved.txt").exists() and proc.poll() is None  # still waiting
            gatehouse.api("POST", f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]})
            code, out, err = finish(proc)
            assert code == 0, (out[-2000:], err[-2000:])

            results = model.tool_results()
            assert len(results) == 3, results
            read, removed, touched = results
            assert "hello from the readme" in read["text"] and not read["is_error"]
            assert removed["is_error"] and "Nothing is deleted in this repository." in removed["text"]
            assert (workspace / "approved.txt").exists() and not touched["is_error"]

        run = gatehouse.api("GET", f"/api/v1/runs/{approval['run']}/")
        assert run["driver"] == "claude-code-hook"
        activities = gatehouse.api("GET", f"/api/v1/runs/{run['id']}/activities/?limit=500")["results"]
        requested = [a["payload"] for a in activities if a["event"] == "tool.requested"]
        assert [(p["input"]["command"], p["decision"]) for p in requested] == [
            ("cat README.md", "allow"), ("rm -rf build", "deny"), ("touch approved.txt", "ask"),
        ]
        finished = [a["payload"] for a in activities if a["event"] == "tool.finished"]
        assert any("hello from the readme" in p["output"] for p in finished)  # PostToolUse
        wait_for(lambda: gatehouse.api("GET", f"/api/v1/runs/{run['id']}/")["status"] == "completed", 30)  # SessionEnd
    finally:
        gatehouse.stop()

    # The server is gone: the hook fails closed, and the agent reads why.
    with FakeAnthropicServer() as model:
        model.add_turns([tool_use("Bash", {"command": "cat README.md", "description": "Show the readme"})], [text("Stopped.")])
        code, out, err = finish(claude(tmp_path, workspace, model, gatehouse.url, gatehouse.hook_token))
        [blocked] = model.tool_results()
        assert blocked["is_error"], blocked
        assert "Gatehouse could not decide this tool call" in blocked["text"] and "cannot reach the server" in blocked["text"]
        assert "hello from the readme" not in blocked["text"]


def test_the_docs_show_the_hook_settings_they_test() -> None:
    api_docs = (ROOT / "docs" / "api.md").read_text()
    section = api_docs[api_docs.index("## Integrations"):]
    assert '"PreToolUse"' in section and "gatehouse-hook" in section and '"timeout": 60' in section


