"""A developer's own Codex under Gatehouse: the real CLI (0.171.0, `codex exec`), its
PreToolUse / PostToolUse / SessionEnd command hooks (`hooks.json`, feature `hooks`) running
`scripts/gatehouse-hook --agent codex` against a real `serve` process, the model faked on
127.0.0.1 (tests/fakes/responses_server.py).

Codex takes only a deny from a PreToolUse hook: an allowed read runs at once, a denied
command is blocked with the policy's reason, an `ask` waits until the test approves it
through the API and then runs, and with the server stopped the hook denies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from drivers.codex.config import render_config
from tests.drivers.test_codex import _codex_bin
from tests.fakes.responses_server import FakeResponsesServer, exec_command, message
from tests.integrations.test_hook_claude_code import HOOK, Gatehouse, wait_for

pytestmark = [pytest.mark.agents]


def require_codex() -> str:
    binary = _codex_bin()
    if binary is None:
        if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1":
            pytest.fail("the Codex CLI is not installed (run `make agents`); GATEHOUSE_REQUIRE_AGENTS=1 requires it")
        pytest.skip("the Codex CLI is not installed (run `make agents`)")
    return binary


def codex(binary: str, tmp: Path, workspace: Path, model: FakeResponsesServer, url: str, token: str) -> subprocess.Popen[str]:
    """`codex exec` with docs/api.md's hooks.json (and the feature on) in its own CODEX_HOME.

    Codex's own sandbox (a developer's machine with bubblewrap) runs each command with a
    private /tmp, and finds its sandbox helper through a link under CODEX_HOME: a CODEX_HOME
    under /tmp (pytest's tmp_path) vanishes inside it, as ~/.codex never does. So the home
    lies outside /tmp, as it would on that machine."""
    home = Path(tempfile.mkdtemp(prefix="codex-home-", dir=CODEX_HOMES))
    config = render_config({"base_url": model.base_url, "model": "fake-model", "env_key": "GATEHOUSE_FAKE_CODEX_KEY"}, {}, workspace)
    (home / "config.toml").write_text(config + "\n[features]\nhooks = true\n")
    command = f"{HOOK} --agent codex"
    (home / "hooks.json").write_text(json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 60}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 15}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": command, "timeout": 15}]}],
    }}))
    (tmp / "home").mkdir(exist_ok=True)
    env = {
        "PATH": os.environ["PATH"], "HOME": str(tmp / "home"), "CODEX_HOME": str(home), "GATEHOUSE_FAKE_CODEX_KEY": "dummy",
        "GATEHOUSE_URL": url, "GATEHOUSE_TOKEN": token, "GATEHOUSE_POLICY": "hooks",
    }
    # Hook trust is persisted per hook after a person reviews it in the TUI; a test has no
    # person, so this one invocation skips the review (the flag Codex provides for automation).
    argv = [binary, "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "-C", str(workspace), "Do the scripted task."]
    return subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"codex did not finish:\n{out[-3000:]}\n{err[-3000:]}") from None
    return proc.returncode, out, err


CODEX_HOMES = Path(__file__).resolve().parents[2] / "var" / "test-codex-homes"


@pytest.fixture(autouse=True)
def _codex_homes() -> Any:
    CODEX_HOMES.mkdir(parents=True, exist_ok=True)
    before = set(CODEX_HOMES.iterdir())
    yield
    for made in set(CODEX_HOMES.iterdir()) - before:
        shutil.rmtree(made, ignore_errors=True)


def test_codex_under_the_hook_gateway(tmp_path: Path) -> None:
    binary = require_codex()
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello from the readme\n")
    gatehouse = Gatehouse(tmp_path)
    try:
        with FakeResponsesServer() as model:
            model.add_turns(
                [exec_command("cat README.md")], [exec_command("rm -rf build")], [exec_command("touch approved.txt")],
                [message("All done.")],
            )
            proc = codex(binary, tmp_path, workspace, model, gatehouse.url, gatehouse.hook_token)
            approval = wait_for(lambda: (gatehouse.api("GET", "/api/v1/approvals/?status=pending")["results"] or [None])[0], 90)
            assert approval["presentation"]["command"] == "touch approved.txt"
            # The gateway found the request undecided, waited a round and found it so again:
            # had it been going to answer without the reviewer, it would have by then.
            wait_for(lambda: gatehouse.still_pending(approval["id"]) >= 2, 30)
            assert not (workspace / "approved.txt").exists() and proc.poll() is None  # still waiting
            gatehouse.api("POST", f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]})
            code, out, err = finish(proc)
            assert code == 0, (out[-2000:], err[-2000:])
            read, removed, touched = list(model.tool_outputs().values())
            assert "hello from the readme" in read
            assert "Nothing is deleted in this repository." in removed and "blocked" in removed
            assert (workspace / "approved.txt").exists(), touched

        run = gatehouse.api("GET", f"/api/v1/runs/{approval['run']}/")
        assert run["driver"] == "codex-hook"
        activities = gatehouse.api("GET", f"/api/v1/runs/{run['id']}/activities/?limit=500")["results"]
        requested = [a["payload"] for a in activities if a["event"] == "tool.requested"]
        assert [(p["input"]["command"], p["decision"]) for p in requested] == [
            ("cat README.md", "allow"), ("rm -rf build", "deny"), ("touch approved.txt", "ask"),
        ]
        finished = [a["payload"] for a in activities if a["event"] == "tool.finished"]
        assert [(p["step"], p["output"]) for p in finished] == [(1, "hello from the readme\n"), (3, "")]  # PostToolUse
        wait_for(lambda: gatehouse.api("GET", f"/api/v1/runs/{run['id']}/")["status"] == "completed", 30)  # SessionEnd
    finally:
        gatehouse.stop()

    with FakeResponsesServer() as model:
        model.add_turns([exec_command("cat README.md")], [message("Stopped.")])
        finish(codex(binary, tmp_path, workspace, model, gatehouse.url, gatehouse.hook_token))
        [blocked] = list(model.tool_outputs().values())
        assert "Gatehouse could not decide this tool call" in blocked and "cannot reach the server" in blocked
        assert "hello from the readme" not in blocked
