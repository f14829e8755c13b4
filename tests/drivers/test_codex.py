"""The Codex driver against the real `codex app-server` (0.171.0) and a fake Responses server.

The gate is the in-memory FakeRunContext: these tests check the wire protocol; the
end-to-end tests through the worker and the API live elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import textwrap
from pathlib import Path

import pytest

from drivers.base import GateAnswer, RunAborted, RunResult, ToolRequest
from drivers.codex import DESCRIPTOR, CodexDriver, translate
from tests.drivers.fake_context import FakeRunContext
from tests.fakes.responses_server import (
    FakeResponsesServer,
    add_file_patch,
    apply_patch,
    exec_command,
    message,
    request_user_input,
)

REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 60


def _codex_bin() -> str | None:
    explicit = os.environ.get("GATEHOUSE_CODEX_BIN")
    if explicit and Path(explicit).exists():
        return explicit
    installed = REPO / ".agents" / "node_modules" / ".bin" / "codex"
    return str(installed) if installed.exists() else None


@pytest.fixture
def codex_bin() -> str:
    path = _codex_bin()
    if path is None:
        message_ = "the Codex CLI is not installed (run `make agents`, or set GATEHOUSE_CODEX_BIN)"
        if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1":
            pytest.fail(message_)
        pytest.skip(message_)
    return path


@pytest.fixture
def model_server():
    with FakeResponsesServer() as fake:
        yield fake


def allow(scope: str = "once"):
    return lambda request: GateAnswer("allow", decided_by="person", scope=scope)


def make_ctx(tmp_path: Path, decide, *, codex_bin: str, model_server: FakeResponsesServer | None = None, **kw) -> FakeRunContext:
    workspace = tmp_path / "ws"
    runtime = tmp_path / "runtime"
    workspace.mkdir(exist_ok=True)
    runtime.mkdir(exist_ok=True)
    settings = {
        "codex_bin": codex_bin,
        "model": "fake-model",
        "env_key": "FAKE_CODEX_API_KEY",
        "env_values": {"FAKE_CODEX_API_KEY": "dummy-key"},
        "idle_timeout_s": 60,
    }
    if model_server is not None:
        settings["base_url"] = model_server.base_url
    settings.update(kw.pop("settings", {}))
    return FakeRunContext(
        workspace=workspace,
        runtime_dir=runtime,
        decide=decide,
        prompt=kw.pop("prompt", "do the scripted thing"),
        settings=settings,
        **kw,
    )


async def run(ctx: FakeRunContext, timeout: float = RUN_TIMEOUT_S) -> RunResult:
    return await asyncio.wait_for(CodexDriver().run(ctx), timeout)


def kinds(ctx: FakeRunContext) -> list[str]:
    return [kind for kind, _ in ctx.activities]


# -- pure translations (no CLI) ------------------------------------------------------------------


def test_inner_command_unwraps_bash_lc():
    assert translate.inner_command("/bin/bash -lc 'touch created.txt'") == "touch created.txt"
    assert translate.inner_command("/bin/bash -lc ls") == "ls"
    script = "ls -la && cat x.txt; echo hi > y.txt"
    wrapped = "/bin/bash -lc 'ls -la && cat x.txt; echo hi > y.txt'"
    assert translate.inner_command(wrapped, [{"type": "unknown", "command": script}]) == script
    # Several parsed actions: the whole script, never only the first action.
    assert translate.inner_command("/bin/bash -lc 'ls; rm -rf x'", [{"command": "ls"}, {"command": "rm -rf x"}]) == "ls; rm -rf x"


def test_replies_never_amend_execpolicy_nor_accept_for_the_session():
    assert translate.approval_reply(GateAnswer("allow")) == "accept"
    # "Always allow" is a Gatehouse grant: Codex is told a plain accept, and asks next time.
    assert translate.approval_reply(GateAnswer("allow", decided_by="person", scope="session")) == "accept"
    assert translate.approval_reply(GateAnswer("allow", decided_by="grant")) == "accept"
    assert translate.approval_reply(GateAnswer("deny", reason="no")) == "decline"
    assert translate.approval_reply(GateAnswer("abort")) == "cancel"
    assert translate.combine_replies(["accept", "decline"]) == "decline"
    assert translate.combine_replies(["accept", "accept"]) == "accept"
    assert translate.combine_replies(["accept", "cancel", "decline"]) == "cancel"


def test_descriptor():
    assert DESCRIPTOR.name == "codex"
    assert DESCRIPTOR.sandbox == {"read-only", "workspace-write", "unrestricted"}
    assert DESCRIPTOR.retry is False
    assert any("web_search" in line for line in DESCRIPTOR.cannot_see)


def test_npm_s_launcher_is_skipped_for_the_native_program_it_would_start(codex_bin: str):
    import subprocess

    from drivers.codex import config

    native = config.find_binary({"codex_bin": codex_bin})
    if Path(codex_bin).resolve().name == "codex.js":  # `make agents`' install: npm's Node launcher
        assert native != codex_bin and Path(native).name == "codex"
        assert Path(native).read_bytes()[:4] == b"\x7fELF"  # the program itself, not a script
    version = [subprocess.run([b, "--version"], capture_output=True, text=True, check=True).stdout for b in (codex_bin, native)]
    assert version[0] == version[1]  # the same Codex either way


def test_a_codex_bin_that_is_not_npm_s_launcher_is_used_as_given(tmp_path: Path):
    from drivers.codex import config

    wrapper = tmp_path / "codex"
    wrapper.write_text("#!/bin/sh\nexec codex \"$@\"\n")
    wrapper.chmod(0o755)
    assert config.find_binary({"codex_bin": str(wrapper)}) == str(wrapper)
    assert config.native_binary(str(wrapper)) == str(wrapper)


# -- fake CLIs: protocol failures ----------------------------------------------------------------


def _fake_cli(tmp_path: Path, body: str) -> str:
    script = tmp_path / "fake-codex"
    script.write_text(f"#!{sys.executable}\nimport sys, json, time\n" + textwrap.dedent(body))
    script.chmod(0o755)
    return str(script)


async def test_malformed_line_fails_with_protocol_error(tmp_path):
    fake = _fake_cli(
        tmp_path,
        """
        sys.stdin.readline()
        print("this is not json", flush=True)
        time.sleep(60)
        """,
    )
    ctx = make_ctx(tmp_path, allow(), codex_bin=fake)
    result = await run(ctx, timeout=20)
    assert result.status == "failed"
    assert result.failure_reason == "agent_protocol_error"
    notices = [p for k, p in ctx.activities if k == "notice"]
    assert notices and "not JSON" in notices[-1]["text"]


async def test_cli_exiting_early_fails(tmp_path):
    fake = _fake_cli(tmp_path, 'sys.stderr.write("boom: no config\\n"); sys.exit(3)\n')
    ctx = make_ctx(tmp_path, allow(), codex_bin=fake)
    result = await run(ctx, timeout=20)
    assert (result.status, result.failure_reason) == ("failed", "agent_exited")
    assert "boom: no config" in [p for k, p in ctx.activities if k == "notice"][-1]["stderr"]


async def test_silent_cli_times_out(tmp_path):
    fake = _fake_cli(tmp_path, "time.sleep(60)\n")
    ctx = make_ctx(tmp_path, allow(), codex_bin=fake, settings={"idle_timeout_s": 1})
    result = await run(ctx, timeout=20)
    assert (result.status, result.failure_reason) == ("failed", "agent_timeout")


async def test_error_reply_to_our_request_fails(tmp_path):
    fake = _fake_cli(
        tmp_path,
        """
        req = json.loads(sys.stdin.readline())
        print(json.dumps({"id": req["id"], "error": {"code": -32600, "message": "nope"}}), flush=True)
        time.sleep(60)
        """,
    )
    ctx = make_ctx(tmp_path, allow(), codex_bin=fake)
    result = await run(ctx, timeout=20)
    assert (result.status, result.failure_reason) == ("failed", "agent_protocol_error")
    assert "nope" in [p for k, p in ctx.activities if k == "notice"][-1]["text"]


async def test_missing_binary_fails(tmp_path):
    ctx = make_ctx(tmp_path, allow(), codex_bin=str(tmp_path / "no-such-codex"))
    result = await run(ctx, timeout=20)
    assert (result.status, result.failure_reason) == ("failed", "agent_exited")


FAKE_APP_SERVER = """
def send(obj):
    print(json.dumps(obj), flush=True)

def read():
    return json.loads(sys.stdin.readline())

init = read(); send({"id": init["id"], "result": {}})
read()  # initialized
start = read()
send({"id": start["id"], "result": {"thread": {"id": "t1"}, "model": "m", "approvalPolicy": POLICY}})
turn = read()
send({"id": turn["id"], "result": {"turn": {"id": "u1", "status": "inProgress"}}})
send({"method": "turn/started", "params": {"threadId": "t1", "turn": {"id": "u1"}}})
send({"id": 0, "method": "item/permissions/requestApproval", "params": {"threadId": "t1", "turnId": "u1", "itemId": "x"}})
reply = read()
send({"method": "item/completed", "params": {"item": {"type": "agentMessage", "id": "m1", "text": json.dumps(reply)}}})
send({"method": "turn/completed", "params": {"threadId": "t1", "turn": {"id": "u1", "status": "completed"}}})
sys.stdin.readline()
"""


async def test_unknown_server_request_gets_an_error_reply(tmp_path):
    fake = _fake_cli(tmp_path, 'POLICY = "untrusted"\n' + FAKE_APP_SERVER)
    ctx = make_ctx(tmp_path, allow(), codex_bin=fake)
    result = await run(ctx, timeout=20)
    assert result.status == "completed", ctx.activities
    reply = json.loads(result.text)
    assert reply["id"] == 0 and reply["error"]["code"] == -32601 and "result" not in reply
    assert any("item/permissions/requestApproval" in p["text"] for k, p in ctx.activities if k == "notice")
    assert ctx.requests == []


async def test_a_turn_is_said_by_its_phase_as_every_driver_says_it(tmp_path):
    fake = _fake_cli(tmp_path, 'POLICY = "untrusted"\n' + FAKE_APP_SERVER)
    ctx = make_ctx(tmp_path, allow(), codex_bin=fake)
    result = await run(ctx, timeout=20)
    assert result.status == "completed", ctx.activities
    turns = [p for k, p in ctx.activities if k == "turn"]
    assert turns == [{"phase": "start", "turn_id": "u1"}, {"phase": "end", "turn_id": "u1", "status": "completed"}]


async def test_refuses_to_run_when_codex_replaces_the_approval_policy(tmp_path):
    fake = _fake_cli(tmp_path, 'POLICY = "on-request"\n' + FAKE_APP_SERVER)
    ctx = make_ctx(tmp_path, allow(), codex_bin=fake)
    result = await run(ctx, timeout=20)
    assert (result.status, result.failure_reason) == ("failed", "agent_protocol_error")
    assert "on-request" in [p for k, p in ctx.activities if k == "notice"][-1]["text"]


async def test_command_run_without_asking_is_reported(tmp_path):
    body = FAKE_APP_SERVER.replace(
        'send({"id": 0, "method": "item/permissions/requestApproval", "params": {"threadId": "t1", "turnId": "u1", "itemId": "x"}})\nreply = read()',
        'item = {"type": "commandExecution", "id": "c1", "command": "/bin/bash -lc \'touch x\'", "status": "completed", "exitCode": 0, "aggregatedOutput": ""}\n'
        'send({"method": "item/completed", "params": {"item": item}})\nreply = {}',
    )
    fake = _fake_cli(tmp_path, 'POLICY = "untrusted"\n' + body)
    ctx = make_ctx(tmp_path, allow(), codex_bin=fake)
    result = await run(ctx, timeout=20)
    assert result.status == "completed"
    [notice] = [p for k, p in ctx.activities if k == "notice"]
    assert notice["command"] == "touch x" and "without asking" in notice["text"]


# -- the sandbox Codex is told to use (`thread/start`) ------------------------------------------

# The fake answers with the `thread/start` request it received (as the turn's agent message)
# and with the network namespace it runs in (the floor gives every run its own).
ECHO_THREAD_START = FAKE_APP_SERVER.replace(
    'send({"id": 0, "method": "item/permissions/requestApproval", "params": {"threadId": "t1", "turnId": "u1", "itemId": "x"}})\n'
    "reply = read()",
    'import os\nreply = {"start": start, "net": os.readlink("/proc/self/ns/net")}',
)


async def thread_start_seen(tmp_path: Path, run_policy: dict, **kw) -> dict:
    assert "reply = {" in ECHO_THREAD_START
    fake = _fake_cli(tmp_path, 'POLICY = "untrusted"\n' + ECHO_THREAD_START)
    ctx = make_ctx(tmp_path, allow(), codex_bin=fake, run_policy=run_policy, **kw)
    result = await run(ctx, timeout=20)
    assert result.status == "completed", ctx.activities
    seen = json.loads(result.text)
    assert seen["start"]["method"] == ("thread/resume" if kw.get("conversation") else "thread/start")
    assert seen["start"]["params"]["approvalPolicy"] == "untrusted"
    return seen


@pytest.mark.parametrize(
    ("run_policy", "sandbox"),
    [
        ({"sandbox": "read-only"}, "read-only"),
        ({"sandbox": "workspace-write"}, "workspace-write"),
        ({"sandbox": "inherit"}, "workspace-write"),
        ({}, "workspace-write"),
        ({"sandbox": "unrestricted"}, "danger-full-access"),
    ],
)
async def test_without_the_floor_codex_is_started_in_the_sandbox_the_run_policy_names(tmp_path, run_policy, sandbox):
    """Where Gatehouse's floor is off, Codex's own sandbox is the only one: `thread/start`
    carries the run policy's mode, and only `unrestricted` turns it off."""
    seen = await thread_start_seen(tmp_path, run_policy, floor=None)
    assert seen["start"]["params"]["sandbox"] == sandbox
    assert seen["net"] == os.readlink("/proc/self/ns/net")  # no floor: the test's own namespace


async def test_a_continued_codex_thread_is_resumed_in_the_sandbox_the_run_policy_names(tmp_path):
    seen = await thread_start_seen(tmp_path, {"sandbox": "read-only"}, floor=None, conversation={"thread_id": "t0"})
    assert (seen["start"]["params"]["threadId"], seen["start"]["params"]["sandbox"]) == ("t0", "read-only")


@pytest.mark.parametrize("sandbox", ["read-only", "workspace-write", "inherit"])
async def test_inside_the_floor_codex_s_own_sandbox_is_off_because_the_floor_holds_it(tmp_path, sandbox, floor_available):
    """Codex's sandbox nested in the floor is turned off (drivers/codex/config.py IN_FLOOR)
    only where Codex itself runs inside the floor: its network namespace is not ours."""
    seen = await thread_start_seen(tmp_path, {"sandbox": sandbox})  # the floor the worker builds
    assert seen["net"] != os.readlink("/proc/self/ns/net")
    assert seen["start"]["params"]["sandbox"] == "danger-full-access"


# -- the real CLI --------------------------------------------------------------------------------

@pytest.mark.agents
async def test_allowed_command_runs_and_output_reaches_step(tmp_path, codex_bin, model_server):
    model_server.add_turns([exec_command("echo hello-gatehouse > made.txt && cat made.txt", call_id="call_run")], [message("all done")])
    ctx = make_ctx(tmp_path, allow(), codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)

    assert result.status == "completed", ctx.activities
    assert result.text == "all done"
    assert (ctx.workspace / "made.txt").read_text() == "hello-gatehouse\n"
    [request] = ctx.requests
    assert request.tool == "bash" and request.subtype == "command" and request.kind == "permission"
    assert dict(request.input) == {"command": "echo hello-gatehouse > made.txt && cat made.txt"}
    step_id = ctx.decisions[0].step_id
    assert "hello-gatehouse" in ctx.finished[step_id]["output"]
    assert ctx.finished[step_id]["exit_code"] == 0
    assert "hello-gatehouse" in model_server.tool_output("call_run")
    assert {"turn", "tool", "message", "usage"} <= set(kinds(ctx))
    assert result.usage.get("total_tokens")
    # Isolation: Codex wrote into the run's own home, never into the workspace.
    assert (ctx.runtime_dir / "codex-home" / "config.toml").exists()
    assert sorted(p.name for p in ctx.workspace.iterdir()) == ["made.txt"]


@pytest.mark.agents
async def test_codex_is_asked_not_to_send_what_the_driver_ignores(tmp_path, codex_bin, model_server, monkeypatch):
    """`optOutNotificationMethods` at initialize: the streamed deltas, status changes and
    rate limits the driver has no use for never cross the pipe; what it uses still does."""
    from drivers.codex import driver as codex_driver

    heard: list[str] = []
    real = codex_driver._Session._on_notification

    async def listening(self, method, params):
        heard.append(method)
        await real(self, method, params)

    monkeypatch.setattr(codex_driver._Session, "_on_notification", listening)
    model_server.add_turns([exec_command("echo quiet", call_id="call_quiet")], [message("a streamed answer, in parts")])
    ctx = make_ctx(tmp_path, allow(), codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)

    assert result.status == "completed" and result.text == "a streamed answer, in parts"
    assert {"turn/started", "item/started", "item/completed", "turn/completed", "thread/tokenUsage/updated"} <= set(heard)
    assert not set(heard) & codex_driver._QUIET, sorted(set(heard) & codex_driver._QUIET)


@pytest.mark.agents
async def test_read_only_command_is_asked_too(tmp_path, codex_bin, model_server):
    model_server.add_turns([exec_command("ls")], [message("listed")])
    ctx = make_ctx(tmp_path, allow(), codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)
    assert result.status == "completed"
    assert [dict(r.input) for r in ctx.requests] == [{"command": "ls"}]


@pytest.mark.agents
async def test_workspace_codex_rules_cannot_bypass_approval(tmp_path, codex_bin, model_server):
    rules = tmp_path / "ws" / ".codex" / "rules"
    rules.mkdir(parents=True)
    (rules / "default.rules").write_text('prefix_rule(pattern=["touch"], decision="allow")\n')
    (tmp_path / "ws" / ".codex" / "config.toml").write_text('approval_policy = "never"\n')
    model_server.add_turns([exec_command("touch sneaky.txt")], [message("ok")])
    ctx = make_ctx(tmp_path, lambda r: GateAnswer("deny", reason="no"), codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)

    assert result.status == "completed"
    assert [r.input["command"] for r in ctx.requests] == ["touch sneaky.txt"]
    assert not (ctx.workspace / "sneaky.txt").exists()
    # The one notice names what was ignored; none says Codex ran something unasked.
    [notice] = [p for k, p in ctx.activities if k == "notice"]
    assert [f["path"] for f in notice["workspace_config"]] == [".codex/config.toml", ".codex/rules"]


@pytest.mark.agents
async def test_declined_command_does_not_run_and_model_is_told(tmp_path, codex_bin, model_server):
    model_server.add_turns([exec_command("touch forbidden.txt", call_id="call_no")], [message("understood")])
    ctx = make_ctx(tmp_path, lambda r: GateAnswer("deny", reason="not today", decided_by="person"), codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)

    assert result.status == "completed"
    assert not (ctx.workspace / "forbidden.txt").exists()
    assert "rejected by user" in model_server.tool_output("call_no")
    assert "Gatehouse refused that request: not today" in json.dumps(model_server.input_items(-1))
    assert ctx.finished == {}
    completed = [p for k, p in ctx.activities if k == "tool" and p["event"] == "completed"]
    assert completed and completed[-1]["status"] == "declined"


@pytest.fixture
def replies(monkeypatch):
    """The `decision` of every approval reply the real driver sends to Codex."""
    from drivers.codex import driver as codex_driver

    sent: list[str] = []
    send = codex_driver._Session._send

    async def recording(self, obj):
        result = obj.get("result")
        if isinstance(result, dict) and "decision" in result:
            sent.append(result["decision"])
        await send(self, obj)

    monkeypatch.setattr(codex_driver._Session, "_send", recording)
    return sent


@pytest.mark.agents
async def test_always_allow_is_a_gatehouse_grant_so_codex_asks_again(tmp_path, codex_bin, model_server, replies):
    """The reply to "always allow" is a plain accept: Codex asks about the repeat, the grant
    answers it, and once the grant is revoked the next repeat is refused."""
    cmd = "echo again >> log.txt"
    model_server.add_turns(
        [exec_command(cmd, call_id="call_1")],
        [exec_command(cmd, call_id="call_2")],
        [exec_command(cmd, call_id="call_3")],
        [message("done")],
    )
    decisions = iter([
        GateAnswer("allow", decided_by="person", scope="session"),  # the reviewer's "always allow"
        GateAnswer("allow", decided_by="grant"),  # the grant answers the next request
        GateAnswer("deny", reason="the grant was revoked", decided_by="person"),  # revoked: asked again
    ])
    ctx = make_ctx(tmp_path, lambda r: next(decisions), codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)

    assert result.status == "completed", ctx.activities
    assert [r.input["command"] for r in ctx.requests] == [cmd, cmd, cmd]
    assert replies == ["accept", "accept", "decline"]
    assert (ctx.workspace / "log.txt").read_text() == "again\nagain\n"
    assert "rejected by user" in model_server.tool_output("call_3")
    # Every command was asked: no "ran without asking" warning.
    assert not [p for k, p in ctx.activities if k == "notice"]
    # Nothing permanent: no execpolicy rule written into the run's CODEX_HOME.
    assert not (ctx.runtime_dir / "codex-home" / "rules").exists()


@pytest.mark.agents
async def test_file_change_approval_carries_the_diff(tmp_path, codex_bin, model_server):
    model_server.add_turns([apply_patch(add_file_patch("notes/hello.txt", "hello from the fake model"), call_id="call_patch")], [message("written")])
    ctx = make_ctx(tmp_path, allow(), codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)

    assert result.status == "completed", ctx.activities
    [request] = ctx.requests
    assert request.tool == "write" and request.subtype == "file-change"
    assert request.input["file_path"] == "notes/hello.txt"
    assert "hello from the fake model" in request.input["diff"]
    assert "hello from the fake model" in request.presentation["diff"]
    assert (ctx.workspace / "notes" / "hello.txt").read_text() == "hello from the fake model\n"
    assert ctx.finished[ctx.decisions[0].step_id]["error"] == ""


@pytest.mark.agents
async def test_declined_file_change_is_not_written(tmp_path, codex_bin, model_server):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "keep.txt").write_text("one\n")
    patch = "*** Update File: keep.txt\n@@\n-one\n+two\n"
    model_server.add_turns([apply_patch(patch, call_id="call_edit")], [message("ok")])
    ctx = make_ctx(tmp_path, lambda r: GateAnswer("deny", reason="no"), codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)

    assert result.status == "completed"
    [request] = ctx.requests
    assert request.tool == "edit" and request.input["file_path"] == "keep.txt"
    assert "-one" in request.input["diff"] and "+two" in request.input["diff"]
    assert (ctx.workspace / "keep.txt").read_text() == "one\n"
    assert "rejected" in model_server.tool_output("call_edit")


@pytest.mark.agents
@pytest.mark.parametrize("target, moved", [("../moved.txt", False), ("renamed.txt", True)])
async def test_a_moved_file_is_decided_by_where_it_goes(tmp_path, codex_bin, model_server, target, moved):
    # Codex's `*** Move to:` is one file change: the policy judged only the file it moved.
    from approvals.policy import DEFAULT_POLICY, PathContext, compile_policy, evaluate

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "keep.txt").write_text("one\n")
    model_server.add_turns([apply_patch(f"*** Update File: keep.txt\n*** Move to: {target}\n@@\n-one\n+two\n",
                                        call_id="call_move")], [message("ok")])
    policy, verdicts = compile_policy(DEFAULT_POLICY), []

    def decide(request: ToolRequest) -> GateAnswer:
        verdict = evaluate(policy, {"tool": request.tool, "input": dict(request.input), "cwd": request.cwd},
                           paths=PathContext(str(tmp_path / "ws")))
        verdicts.append(verdict)
        return GateAnswer("allow") if verdict.decision == "allow" else GateAnswer("deny", reason=verdict.reason)

    ctx = make_ctx(tmp_path, decide, codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)

    assert result.status == "completed", ctx.activities
    [request] = ctx.requests
    assert (request.input["file_path"], request.input["move_path"]) == (
        "keep.txt", target if moved else str(tmp_path / "moved.txt"))
    assert [v.decision for v in verdicts] == ["allow" if moved else "ask"], verdicts[0].reason
    assert (ctx.workspace / "renamed.txt").exists() is moved
    assert not (tmp_path / "moved.txt").exists()
    assert (ctx.workspace / "keep.txt").exists() is not moved


@pytest.mark.agents
async def test_multi_file_patch_asks_per_file_and_one_refusal_refuses_all(tmp_path, codex_bin, model_server):
    patch = add_file_patch("a.txt", "alpha") + add_file_patch("secret/b.txt", "beta")
    model_server.add_turns([apply_patch(patch, call_id="call_two")], [message("ok")])
    ctx = make_ctx(
        tmp_path,
        lambda r: GateAnswer("deny", reason="secret") if r.input["file_path"].startswith("secret/") else GateAnswer("allow"),
        codex_bin=codex_bin,
        model_server=model_server,
    )
    result = await run(ctx)

    assert result.status == "completed"
    assert sorted(r.input["file_path"] for r in ctx.requests) == ["a.txt", "secret/b.txt"]
    assert not (ctx.workspace / "a.txt").exists() and not (ctx.workspace / "secret").exists()
    assert ctx.finished == {}


@pytest.mark.agents
async def test_gate_raising_run_aborted_stops_the_run(tmp_path, codex_bin, model_server):
    model_server.add_turns([exec_command("touch x.txt")], [message("unreachable")])

    def decide(request):
        raise RunAborted("policy_abort")

    ctx = make_ctx(tmp_path, decide, codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)
    assert (result.status, result.failure_reason) == ("failed", "policy_abort")
    assert not (ctx.workspace / "x.txt").exists()


QUESTIONS = [
    {
        "id": "color",
        "header": "Color",
        "question": "Which color should I use?",
        "options": [{"label": "Red (Recommended)", "description": "warm"}, {"label": "Blue", "description": "cool"}],
    }
]


@pytest.mark.agents
async def test_plan_mode_question_is_answered(tmp_path, codex_bin, model_server):
    model_server.add_turns([request_user_input(QUESTIONS, call_id="call_ask")], [message("Blue it is")])
    ctx = make_ctx(
        tmp_path,
        lambda r: GateAnswer("answer", decided_by="person", answers={"color": ["Blue"]}),
        codex_bin=codex_bin,
        model_server=model_server,
        interaction_mode="plan",
    )
    result = await run(ctx)

    assert result.status == "completed", ctx.activities
    [request] = ctx.requests
    assert request.kind == "question"
    [question] = request.presentation["questions"]
    assert question["id"] == "color" and question["allow_other"] is True and question["multi_select"] is False
    assert [o["label"] for o in question["options"]] == ["Red (Recommended)", "Blue"]
    assert json.loads(model_server.tool_output("call_ask")) == {"answers": {"color": {"answers": ["Blue"]}}}


@pytest.mark.agents
async def test_declined_question_gives_the_model_no_answer(tmp_path, codex_bin, model_server):
    model_server.add_turns([request_user_input(QUESTIONS, call_id="call_ask")], [message("no answer then")])
    ctx = make_ctx(tmp_path, lambda r: GateAnswer("deny", reason="skip"), codex_bin=codex_bin, model_server=model_server, interaction_mode="plan")
    result = await run(ctx)

    assert result.status == "completed"
    assert json.loads(model_server.tool_output("call_ask")) == {"answers": {}}
    # ...and is told in words that no person answered, with the reason.
    assert "Gatehouse refused that request: skip" in json.dumps(model_server.input_items(-1))


@pytest.mark.agents
async def test_aborted_question_fails_the_run(tmp_path, codex_bin, model_server):
    model_server.add_turns([request_user_input(QUESTIONS)], [message("unreachable")])
    ctx = make_ctx(
        tmp_path, lambda r: GateAnswer("abort", reason="question_timeout"), codex_bin=codex_bin, model_server=model_server, interaction_mode="plan"
    )
    result = await run(ctx)
    assert (result.status, result.failure_reason) == ("failed", "question_timeout")
    assert len(model_server.requests) == 1


@pytest.mark.agents
async def test_cancel_while_an_approval_is_pending(tmp_path, codex_bin, model_server):
    model_server.add_turns([exec_command("touch never.txt")], [message("should not be asked for")])
    never = asyncio.get_running_loop().create_future()
    holder: dict[str, FakeRunContext] = {}

    def decide(request: ToolRequest):
        holder["ctx"].cancel()
        return never  # a person who never answers

    ctx = make_ctx(tmp_path, decide, codex_bin=codex_bin, model_server=model_server)
    holder["ctx"] = ctx
    result = await run(ctx)

    assert result.status == "cancelled"
    assert not (ctx.workspace / "never.txt").exists()
    assert len(model_server.requests) == 1  # the model was not called again
    turns = [p for k, p in ctx.activities if k == "turn"]
    assert turns[-1]["phase"] == "end" and turns[-1]["status"] == "interrupted"


@pytest.mark.agents
async def test_abort_fails_the_run(tmp_path, codex_bin, model_server):
    model_server.add_turns([exec_command("touch aborted.txt")], [message("should not be asked for")])
    ctx = make_ctx(tmp_path, lambda r: GateAnswer("abort", reason="approval_timeout", decided_by="timeout"), codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx)

    assert (result.status, result.failure_reason) == ("failed", "approval_timeout")
    assert not (ctx.workspace / "aborted.txt").exists()
    assert len(model_server.requests) == 1


def _process_groups_with(marker: str) -> set[int]:
    groups = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if marker.encode() in environ:
            groups.add(int(stat.rsplit(")", 1)[1].split()[2]))
    return groups


@pytest.mark.agents
async def test_cli_killed_mid_run_fails_without_hanging(tmp_path, codex_bin, model_server):
    model_server.add_turns([exec_command("touch late.txt")], [message("unreachable")])
    never = asyncio.get_running_loop().create_future()
    marker = f"CODEX_HOME={tmp_path / 'runtime' / 'codex-home'}"

    def decide(request: ToolRequest):
        for group in _process_groups_with(marker):
            os.killpg(group, signal.SIGKILL)
        return never

    ctx = make_ctx(tmp_path, decide, codex_bin=codex_bin, model_server=model_server)
    result = await run(ctx, timeout=30)

    assert (result.status, result.failure_reason) == ("failed", "agent_exited")
    assert not (ctx.workspace / "late.txt").exists()
    assert not _process_groups_with(marker)  # reaped


@pytest.mark.agents
async def test_web_search_deny_removes_the_tool(tmp_path, codex_bin, model_server):
    model_server.add_turns([message("hi")])
    ctx = make_ctx(tmp_path, allow(), codex_bin=codex_bin, model_server=model_server, run_policy={"web_search": "deny"})
    result = await run(ctx)
    assert result.status == "completed"
    assert "web_search" not in model_server.tool_names(0)
    assert "exec_command" in model_server.tool_names(0)


@pytest.mark.agents
@pytest.mark.parametrize(
    ("run_policy", "floor", "told"),
    [
        ({"sandbox": "read-only"}, None, "read-only"),
        ({"sandbox": "workspace-write"}, None, "workspace-write"),
        ({"sandbox": "unrestricted"}, None, "danger-full-access"),
        ({"sandbox": "read-only"}, "as the worker builds it", "danger-full-access"),
    ],
)
async def test_the_real_codex_runs_in_the_sandbox_thread_start_named(tmp_path, codex_bin, model_server, run_policy, floor, told):
    """What the real CLI made of `thread/start`, as it tells the model: without the floor
    the run policy's own mode; inside the floor its sandbox is off (the floor holds it)."""
    if floor is not None:
        from tests.sandbox.floorrun import require_floor

        require_floor()
    model_server.add_turns([message("hi")])
    ctx = make_ctx(tmp_path, allow(), codex_bin=codex_bin, model_server=model_server, run_policy=run_policy, floor=floor)
    result = await run(ctx)
    assert result.status == "completed", ctx.activities
    instructions = json.dumps(model_server.input_items(0))
    modes = {mode for mode in ("read-only", "workspace-write", "danger-full-access") if f"`sandbox_mode` is `{mode}`" in instructions}
    assert modes == {told}
