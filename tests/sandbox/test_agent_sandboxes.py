"""How the agents' own sandboxes combine with the floor, as the agent receives it.

Gatehouse's floor holds each agent and everything it starts; the agents' own sandboxes
stay off inside it (docs/sandbox.md): Codex's `thread/start` carries `danger-full-access`
whatever the run policy asks (the floor enforces read-only or workspace-write), and
Claude Code gets no sandbox setting and no permission bypass. Without the floor (the
administrator's GATEHOUSE_SANDBOX=off) Codex's own sandbox takes the run policy's mode, as
before. Stand-in CLIs record what reached them: the JSON line, the argv, the settings
file, and what they see of the system (the floor's init as pid 1; a read-only workspace).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.drivers.fake_context import FakeRunContext
from tests.drivers.test_claude_code import run_driver
from tests.drivers.test_codex import run as run_codex

pytestmark = [pytest.mark.usefixtures("floor_available")]

# What a stand-in sees of the system: pid 1 (bubblewrap's init inside a floor), and
# whether it may write its workspace.
LOOK_AROUND = """
import os
def look_around():
    pid1 = open("/proc/1/cmdline", "rb").read().split(b"\\0")[0].decode()
    try:
        open("written-by-the-agent.txt", "w").close()
        writable = True
    except OSError:
        writable = False
    return {"pid1": os.path.basename(pid1), "writable": writable}
"""

CODEX = LOOK_AROUND + """
import json, sys
def send(obj):
    print(json.dumps(obj), flush=True)
def read():
    return json.loads(sys.stdin.readline())
init = read(); send({"id": init["id"], "result": {}})
read()  # initialized
start = read()
send({"id": start["id"], "result": {"thread": {"id": "t1"}, "model": "m", "approvalPolicy": "untrusted"}})
turn = read()
send({"id": turn["id"], "result": {"turn": {"id": "u1", "status": "inProgress"}}})
seen = {"sandbox": start["params"]["sandbox"], **look_around()}
send({"method": "item/completed", "params": {"item": {"type": "agentMessage", "id": "m1", "text": json.dumps(seen)}}})
send({"method": "turn/completed", "params": {"threadId": "t1", "turn": {"id": "u1", "status": "completed"}}})
sys.stdin.readline()
"""

CLAUDE = LOOK_AROUND + """
import json, os, sys
settings = open(os.path.join(os.environ["CLAUDE_CONFIG_DIR"], "settings.json")).read()
seen = {"argv": sys.argv[1:], "settings": json.loads(settings), "is_sandbox": os.environ.get("IS_SANDBOX"), **look_around()}
open(os.path.join(os.environ["HOME"], "seen.json"), "w").write(json.dumps(seen))
sys.exit(3)
"""


def stand_in(tmp_path: Path, name: str, body: str) -> str:
    script = tmp_path / name
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    script.chmod(0o755)
    return str(script)


def context(tmp_path: Path, run_policy: dict[str, Any], settings: dict[str, Any], *, floor: bool = True) -> FakeRunContext:
    workspace, runtime = tmp_path / "ws", tmp_path / "runtime"
    workspace.mkdir(exist_ok=True)
    extra: dict[str, Any] = {} if floor else {"floor": None}
    return FakeRunContext(workspace=workspace, runtime_dir=runtime, decide=lambda request: None,  # type: ignore[arg-type, return-value]
                          run_policy=run_policy, settings={"idle_timeout_s": 30, **settings}, **extra)


# (run policy sandbox, with the floor?) -> (thread/start sandbox, pid 1 is bubblewrap's, workspace writable)
CODEX_CASES = [
    ("inherit", True, ("danger-full-access", True, True)),
    ("workspace-write", True, ("danger-full-access", True, True)),
    ("read-only", True, ("danger-full-access", True, False)),
    ("unrestricted", True, ("danger-full-access", False, True)),
    ("inherit", False, ("workspace-write", False, True)),
    ("read-only", False, ("read-only", False, True)),
]


@pytest.mark.parametrize(("sandbox", "floor", "expected"), CODEX_CASES)
async def test_codex_gets_its_own_sandbox_off_inside_the_floor(
    tmp_path: Path, sandbox: str, floor: bool, expected: tuple[str, bool, bool]
) -> None:
    ctx = context(tmp_path, {"sandbox": sandbox}, {"codex_bin": stand_in(tmp_path, "codex", CODEX)}, floor=floor)
    assert (ctx.floor is not None) == (floor and sandbox != "unrestricted")
    result = await run_codex(ctx, timeout=30)
    assert result.status == "completed", ctx.activities
    seen = json.loads(result.text)
    assert (seen["sandbox"], seen["pid1"] == "bwrap", seen["writable"]) == expected


@pytest.mark.parametrize("sandbox", ["inherit", "read-only"])
async def test_claude_code_gets_no_sandbox_setting_and_runs_inside_the_floor(tmp_path: Path, sandbox: str) -> None:
    ctx = context(tmp_path, {"sandbox": sandbox}, {"claude_bin": stand_in(tmp_path, "claude", CLAUDE)})
    result = await run_driver(ctx, timeout=30)
    assert result.failure_reason == "agent_exited"  # the stand-in only looks around
    seen = json.loads((tmp_path / "runtime" / "home" / "seen.json").read_text())
    assert "sandbox" not in seen["settings"]  # Claude Code's own sandbox: its default, off
    assert "--dangerously-skip-permissions" not in seen["argv"]
    assert seen["argv"][seen["argv"].index("--permission-mode") + 1] == "default"
    assert seen["is_sandbox"] is None
    assert (seen["pid1"], seen["writable"]) == ("bwrap", sandbox != "read-only")
