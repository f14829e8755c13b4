"""What the ACP driver makes of an agent's permission request, before anyone is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from drivers.acp import mapping


@pytest.mark.parametrize(
    ("call", "blind"),
    [
        # Gemini CLI 0.61.0: the command only in the title.
        ({"toolCallId": "t1", "kind": "execute", "title": "rm -rf ~"}, True),
        ({"toolCallId": "t1", "kind": "execute", "title": "ls", "rawInput": {"command": "   "}}, True),
        ({"toolCallId": "t1", "kind": "execute", "title": "ls", "rawInput": {"command": "ls -la"}}, False),
        ({"toolCallId": "t1", "kind": "execute", "rawInput": {"cmd": "ls"}}, False),
        # Not a command, whatever its repr would spell.
        ({"toolCallId": "t1", "kind": "execute", "title": "ls", "rawInput": {"command": {"argv": ["rm", "-rf", "/"]}}}, True),
        ({"toolCallId": "t1", "kind": "execute", "title": "ls", "rawInput": {"command": ["rm", 1]}}, True),
        ({"toolCallId": "t2", "kind": "edit", "title": "Write somewhere"}, True),
        ({"toolCallId": "t2", "kind": "edit", "rawInput": {"file_path": "notes.txt", "content": "x"}}, False),
        ({"toolCallId": "t3", "kind": "read", "title": "Read something"}, True),
        ({"toolCallId": "t3", "kind": "read", "locations": [{"path": "README.md"}]}, False),
        ({"toolCallId": "t4", "kind": "other", "title": "mcp tool", "rawInput": {"q": 1}}, False),
    ],
)
def test_a_request_that_does_not_say_what_it_would_do_is_unreadable(tmp_path: Path, call: dict, blind: bool) -> None:
    request = mapping.build_request(call, tmp_path)
    assert bool(mapping.unreadable(request)) is blind, request


def test_an_argv_command_is_judged_as_the_shell_line_that_runs_exactly_it(tmp_path: Path) -> None:
    # Its Python repr, "['bash', '-lc', 'rm -rf ~']", would hide `rm` from every deny rule.
    call = {"toolCallId": "t1", "kind": "execute", "rawInput": {"command": ["bash", "-lc", "rm -rf ~"]}}
    request = mapping.build_request(call, tmp_path)
    assert request.input == {"command": "bash -lc 'rm -rf ~'"}


@pytest.mark.parametrize(("raw", "where"), [
    ({"command": "echo x > hooks/pre-commit", "workdir": ".git"}, ".git"),  # OpenCode's bash
    ({"command": "ls", "directory": "src"}, "src"),  # Gemini CLI's run_shell_command
    ({"command": "ls", "cwd": "/srv"}, "/srv"),
    ({"command": "ls"}, "."),
])
def test_a_command_is_judged_where_the_agent_says_it_runs(tmp_path: Path, raw: dict, where: str) -> None:
    # Judged from the workspace, `workdir: .git` + `echo x > hooks/pre-commit` was a write of
    # `hooks/pre-commit`, while the agent ran it in `.git`: a git hook.
    request = mapping.build_request({"toolCallId": "t1", "kind": "execute", "rawInput": raw}, tmp_path)
    assert request.cwd == str((tmp_path / where).resolve() if not where.startswith("/") else Path(where))


def test_the_policy_then_refuses_the_hook_the_command_would_write(tmp_path: Path) -> None:
    from approvals.policy import DEFAULT_POLICY, PathContext, compile_policy, evaluate

    raw = {"command": "echo x > hooks/pre-commit", "workdir": ".git"}
    request = mapping.build_request({"toolCallId": "t1", "kind": "execute", "rawInput": raw}, tmp_path)
    verdict = evaluate(compile_policy(DEFAULT_POLICY), {"tool": request.tool, "input": dict(request.input),
                                                        "cwd": request.cwd}, paths=PathContext(str(tmp_path)))
    assert verdict.decision == "deny", verdict.reason


async def test_an_approved_command_covers_a_terminal_only_where_it_was_judged(tmp_path: Path) -> None:
    # claude-code-acp runs an approved command through the client's terminal, naming a cwd:
    # the approval (judged in the workspace) must not cover it run in `.git`.
    from acp import RequestError

    from drivers.acp.client import AcpClient, _Allowed
    from drivers.base import GateAnswer, ToolRequest
    from tests.drivers.fake_context import FakeRunContext

    (tmp_path / "ws" / ".git" / "hooks").mkdir(parents=True)
    ctx = FakeRunContext(workspace=tmp_path / "ws", runtime_dir=tmp_path, decide=lambda r: GateAnswer("deny", reason="no"))
    client = AcpClient(ctx, env={}, on_abort=lambda reason, text: None)
    command = "echo x > hooks/pre-commit"
    judged = ToolRequest("bash", {"command": command}, str(client.workspace), "permission", "command", {}, "c1")
    client.allowed["c1"] = _Allowed(request=judged, step_id=1, command=command)

    with pytest.raises(RequestError):
        await client.create_terminal("s", command, cwd=".git")

    [asked] = ctx.requests  # gated again, where it runs
    assert asked.cwd == str(client.workspace / ".git")
    assert not (tmp_path / "ws" / ".git" / "hooks" / "pre-commit").exists()
    assert client.allowed["c1"].command == command  # still covers the command where it was judged
