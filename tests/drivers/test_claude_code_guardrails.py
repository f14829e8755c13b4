"""Claude Code's guardrails as they reach the CLI, without starting it: the can_use_tool
replies (`mapping.permission_reply`), the driver's own plan-mode answers (`_local_answer`),
the permission mode, the environment, the command line (`_cli_argv`, `isolation.argv`) and
what `_start` hands the process and sends first.

Each assertion is exact: these are the tests the mutation run of the guardrails reaches
(`[tool.mutmut]` in pyproject.toml; the real-CLI tests in test_claude_code.py are too slow
to run per mutant).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from drivers import workspace_config
from drivers.base import GateAnswer, ToolRequest
from drivers.claude_code import isolation, mapping
from drivers.claude_code.driver import _ClaudeRun
from drivers.session import RunFailed

# What every start sets in the CLI's environment (driver.ISOLATION_ENV), spelled out.
ISOLATION = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS": "1",
    "CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR": "1",
    "TERM": "dumb",
}
# The server's environment in the environment tests: what passes, and what must not.
SERVER_ENV = {
    "PATH": "/usr/bin:relative/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "xterm-256color",
    "TZ": "UTC",
    "HOME": "/home/operator",
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "CLAUDE_CODE_USE_BEDROCK": "0",
    "DISABLE_PROMPT_CACHING": "1",
    "IS_SANDBOX": "1",
    "CLAUDE_CONFIG_DIR": "/home/operator/.claude",
    "GATEHOUSE_SECRET_KEY": "secret",
    "DJANGO_SETTINGS_MODULE": "project.settings",
    "DATABASE_URL": "postgres://x",
    "REDIS_URL": "redis://x",
    "OPENAI_API_KEY": "sk-openai",
    "SSH_AUTH_SOCK": "/tmp/agent.sock",
    "AWS_SECRET_ACCESS_KEY": "aws",
}
PASSED = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "ANTHROPIC_API_KEY": "sk-ant-test",
    "CLAUDE_CODE_USE_BEDROCK": "0",
    "DISABLE_PROMPT_CACHING": "1",
    "LESSSECURE": "1",
}


# -- permission_reply -----------------------------------------------------------------------


def req(tool: str = "bash", kind: str = "permission", **kw: Any) -> ToolRequest:
    return ToolRequest(tool=tool, input=kw.pop("input", {}), cwd="/ws", kind=kind, **kw)  # type: ignore[arg-type]


QUESTION_INPUT = {
    "questions": [
        {"header": "Database", "question": "Which database?", "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
        {"header": "Extras", "question": "Which extras?", "options": [{"label": "A"}, {"label": "B"}], "multiSelect": True},
    ]
}


@pytest.mark.parametrize(
    ("request_", "native_input", "decision", "expected"),
    [
        pytest.param(
            req(), {"command": "ls", "description": "list"}, GateAnswer(outcome="allow"),
            {"behavior": "allow", "updatedInput": {"command": "ls", "description": "list"}},
            id="an allow runs the agent's own input",
        ),
        pytest.param(
            req(), {"command": "ls"}, GateAnswer(outcome="allow", scope="session", reason="granted"),
            {"behavior": "allow", "updatedInput": {"command": "ls"}},
            id="always-allow tells the CLI nothing more",
        ),
        pytest.param(
            req(), {"command": "rm -rf /", "description": "d"},
            GateAnswer(outcome="allow", updated_input={"command": "rm -rf build", "description": "edited", "timeout": 1}),
            {"behavior": "allow", "updatedInput": {"command": "rm -rf build", "description": "d"}},
            id="an edited allow replaces only the editable keys",
        ),
        pytest.param(
            req("write"), {"file_path": "/ws/a", "content": "old"},
            GateAnswer(outcome="allow", updated_input={"file_path": "/ws/b", "content": "new"}),
            {"behavior": "allow", "updatedInput": {"file_path": "/ws/b", "content": "new"}},
            id="an edited write",
        ),
        pytest.param(
            req("webFetch"), {"url": "http://a"}, GateAnswer(outcome="allow", updated_input={"url": "http://b"}),
            {"behavior": "allow", "updatedInput": {"url": "http://a"}},
            id="a tool without editable keys runs as asked",
        ),
        pytest.param(
            req(), {"command": "ls"}, GateAnswer(outcome="deny", reason="  not here  "),
            {"behavior": "deny", "message": "Gatehouse denied this tool call: not here"},
            id="a deny with its reason",
        ),
        pytest.param(
            req(), {"command": "ls"}, GateAnswer(outcome="deny"),
            {"behavior": "deny", "message": "Gatehouse denied this tool call."},
            id="a deny without reason",
        ),
        pytest.param(
            req(), {"command": "ls"}, GateAnswer(outcome="deny", reason="Already done: it printed x", already_done=True),
            {"behavior": "deny", "message": "Already done: it printed x"},
            id="an already-done step is told as recorded",
        ),
        pytest.param(
            req(), {"command": "ls"}, GateAnswer(outcome="abort", reason="budget"),
            {"behavior": "deny", "message": "Gatehouse aborted the run: budget", "interrupt": True},
            id="an abort interrupts",
        ),
        pytest.param(
            req(), {"command": "ls"}, GateAnswer(outcome="abort"),
            {"behavior": "deny", "message": "Gatehouse aborted the run: aborted", "interrupt": True},
            id="an abort without reason",
        ),
        pytest.param(
            req("AskUserQuestion", "question"), QUESTION_INPUT,
            GateAnswer(outcome="answer", answers={"database": ["Postgres"], "extras": ["A", "", "B"], "unknown": "x"}),
            {"behavior": "allow", "updatedInput": {**QUESTION_INPUT, "answers": {"Which database?": "Postgres", "Which extras?": "A, B"}}},
            id="answers reach the CLI by question text",
        ),
        pytest.param(
            req("AskUserQuestion", "question"), QUESTION_INPUT, GateAnswer(outcome="answer", answers={"database": "  "}),
            {"behavior": "deny", "message": "There is no human answer to these questions: the question was declined in Gatehouse (no answer was given)."},
            id="an answer without text is no answer",
        ),
        pytest.param(
            req("AskUserQuestion", "question"), QUESTION_INPUT, GateAnswer(outcome="allow", reason="timed out"),
            {"behavior": "deny", "message": "There is no human answer to these questions: the question was declined in Gatehouse (timed out)."},
            id="an allowed question without answers keeps its reason",
        ),
        pytest.param(
            req("AskUserQuestion", "question"), QUESTION_INPUT, GateAnswer(outcome="deny"),
            {"behavior": "deny", "message": "There is no human answer to these questions: the question was declined in Gatehouse. Continue without an answer, or stop."},
            id="a declined question",
        ),
        pytest.param(
            req("ExitPlanMode", "plan_review"), {"plan": "p"}, GateAnswer(outcome="allow", plan_mode="accept-edits"),
            {"behavior": "allow", "updatedInput": {"plan": "p"},
             "updatedPermissions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]},
            id="a plan approved with accept-edits",
        ),
        pytest.param(
            req("ExitPlanMode", "plan_review"), {"plan": "p"}, GateAnswer(outcome="allow", plan_mode="acceptEdits"),
            {"behavior": "allow", "updatedInput": {"plan": "p"},
             "updatedPermissions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]},
            id="a plan approved with the CLI's acceptEdits",
        ),
        pytest.param(
            req("ExitPlanMode", "plan_review"), {"plan": "p"}, GateAnswer(outcome="allow", plan_mode="default"),
            {"behavior": "allow", "updatedInput": {"plan": "p"}},
            id="a plan approved in default mode",
        ),
        pytest.param(
            req("edit"), {"file_path": "/ws/a"}, GateAnswer(outcome="allow", plan_mode="accept-edits"),
            {"behavior": "allow", "updatedInput": {"file_path": "/ws/a"}},
            id="only a plan review changes the mode",
        ),
        pytest.param(
            req("ExitPlanMode", "plan_review"), {"plan": "p"}, GateAnswer(outcome="deny", reason="too vague"),
            {"behavior": "deny", "message": "The plan was rejected in Gatehouse. Feedback: too vague"},
            id="a rejected plan with feedback",
        ),
        pytest.param(
            req("ExitPlanMode", "plan_review"), {"plan": "p"}, GateAnswer(outcome="deny"),
            {"behavior": "deny", "message": "The plan was rejected in Gatehouse."},
            id="a rejected plan",
        ),
    ],
)
def test_permission_reply_is_exactly_what_the_cli_is_told(request_, native_input, decision, expected) -> None:
    before = json.loads(json.dumps(native_input))
    assert mapping.permission_reply(request_, native_input, decision) == expected
    assert native_input == before  # the agent's own input is not changed in place


# -- the run, without its process -------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.emitted: list[tuple[str, dict[str, Any]]] = []

    async def emit(self, kind: str, payload: dict[str, Any]) -> None:
        self.emitted.append((kind, dict(payload)))


def make_run(tmp_path: Path, **kw: Any) -> _ClaudeRun:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    recorder = Recorder()
    ctx = SimpleNamespace(
        workspace=workspace,
        runtime_dir=runtime,
        runtime_mode=kw.pop("runtime_mode", "approval-required"),
        interaction_mode=kw.pop("interaction_mode", "default"),
        run_policy=kw.pop("run_policy", {}),
        settings=kw.pop("settings", {}),
        floor=kw.pop("floor", None),
        resuming=False,
        resume_state=kw.pop("resume_state", {}),
        agent_state={},
        prompt="Do the task.",
        emit=recorder.emit,
        recorder=recorder,
    )
    assert not kw, kw
    return _ClaudeRun(ctx)  # type: ignore[arg-type]


PLAN_REFUSAL = (
    "{} is not available in plan mode: Gatehouse only allows read-only tools while planning. "
    "Finish the plan and present it with ExitPlanMode for review."
)


def refusal(native: str) -> tuple[dict[str, Any], str]:
    return {"behavior": "deny", "message": PLAN_REFUSAL.format(native)}, f"Refused {native} in plan mode (not read-only)."


@pytest.mark.parametrize("cli_mode", ["default", "plan", "acceptEdits"])
@pytest.mark.parametrize(
    ("native", "key"), [("Write", "file_path"), ("Edit", "file_path"), ("MultiEdit", "file_path"), ("NotebookEdit", "notebook_path")]
)
def test_an_edit_of_the_clis_own_plan_file_is_allowed_without_a_step(tmp_path: Path, cli_mode, native, key) -> None:
    run = make_run(tmp_path)
    run.cli_mode = cli_mode
    tool_input = {key: str(run.config_dir / "plans" / "the-plan.md"), "content": "# Plan"}
    assert run._local_answer(native, tool_input) == ({"behavior": "allow", "updatedInput": tool_input}, "")


@pytest.mark.parametrize(
    ("native", "tool_input"),
    [
        pytest.param("Write", {"file_path": "{plans}"}, id="the plans directory itself"),
        pytest.param("Write", {"file_path": "{plans}/../settings.json"}, id="out of the plans directory"),
        pytest.param("Write", {"file_path": "{config}/plans-not/x.md"}, id="a sibling with the same prefix"),
        pytest.param("Write", {"content": "x"}, id="no path"),
        pytest.param("Write", {"file_path": "bad\x00path"}, id="a path that cannot be resolved"),
        pytest.param("Read", {"file_path": "{plans}/x.md"}, id="not an edit tool"),
        pytest.param("Bash", {"command": "echo > {plans}/x.md", "file_path": "{plans}/x.md"}, id="a command"),
    ],
)
def test_only_an_edit_inside_the_plans_directory_is_the_clis_bookkeeping(tmp_path: Path, native, tool_input) -> None:
    run = make_run(tmp_path)
    filled = {k: v.format(plans=run.config_dir / "plans", config=run.config_dir) for k, v in tool_input.items()}
    run.cli_mode = "default"
    assert run._local_answer(native, filled) is None  # to the gate
    run.cli_mode = "plan"
    expected = None if native == "Read" else refusal(native)
    assert run._local_answer(native, filled) == expected


@pytest.mark.parametrize(
    ("native", "tool_input"),
    [
        ("Write", {"file_path": "/ws/a.py", "content": "x"}),
        ("Edit", {"file_path": "/ws/a.py"}),
        ("NotebookEdit", {"notebook_path": "/ws/a.ipynb"}),
        ("Bash", {"command": "rm -rf build"}),
        ("Bash", {"command": "ls > listing.txt"}),
        ("Bash", {"command": "ls; touch x"}),
        ("Bash", {"command": ""}),
        ("Bash", {}),
        ("mcp__db__drop", {}),
        ("KillShell", {}),
    ],
)
def test_plan_mode_refuses_what_is_not_read_only_with_its_reason(tmp_path: Path, native, tool_input) -> None:
    run = make_run(tmp_path)
    run.cli_mode = "plan"
    assert run._local_answer(native, tool_input) == refusal(native)
    run.cli_mode = "default"
    assert run._local_answer(native, tool_input) is None


@pytest.mark.parametrize(
    ("native", "tool_input"),
    [
        ("Read", {"file_path": "/ws/a.py"}),
        ("Glob", {"pattern": "*.py"}),
        ("Grep", {"pattern": "x"}),
        ("WebFetch", {"url": "http://a"}),
        ("ExitPlanMode", {"plan": "p"}),
        ("AskUserQuestion", {"questions": []}),
        ("Bash", {"command": "ls -la"}),
        ("Bash", {"command": "git log --oneline | head -5"}),
        ("Bash", {"command": "cat README.md && grep -n x a.py"}),
    ],
)
def test_plan_mode_lets_read_only_tools_and_commands_reach_the_gate(tmp_path: Path, native, tool_input) -> None:
    run = make_run(tmp_path)
    run.cli_mode = "plan"
    assert run._local_answer(native, tool_input) is None


@pytest.mark.parametrize(
    ("runtime_mode", "interaction_mode", "driver_settings", "expected"),
    [
        ("approval-required", "default", {}, "default"),
        ("auto-accept-edits", "default", {}, "acceptEdits"),
        ("auto", "default", {}, "default"),
        ("full-access", "default", {"allow_bypass_permissions": True}, "bypassPermissions"),
        ("full-access", "default", {"allow_bypass_permissions": False}, "default"),
        ("full-access", "default", {}, "default"),
        ("something-new", "default", {"allow_bypass_permissions": True}, "default"),
        ("approval-required", "plan", {}, "plan"),
        ("auto-accept-edits", "plan", {}, "plan"),
        ("full-access", "plan", {"allow_bypass_permissions": True}, "plan"),
    ],
)
def test_the_permission_mode_follows_the_run_and_bypass_needs_the_server_setting(
    tmp_path: Path, runtime_mode, interaction_mode, driver_settings, expected
) -> None:
    run = make_run(tmp_path, runtime_mode=runtime_mode, interaction_mode=interaction_mode, settings=driver_settings)
    assert run._permission_mode() == expected


@pytest.mark.parametrize(
    ("mode", "sandbox"),
    [("default", {}), ("acceptEdits", {}), ("plan", {}), ("bypassPermissions", {"IS_SANDBOX": "1"})],
)
def test_the_environment_is_the_allow_list_and_the_runs_own_home(tmp_path: Path, monkeypatch, mode, sandbox) -> None:
    run = make_run(tmp_path, settings={"env_values": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "IS_SANDBOX": "1",
                                                      "GATEHOUSE_TOKEN": "x"}})
    monkeypatch.setattr(os, "environ", dict(SERVER_ENV))
    env = run._environment(mode, {"GIT_CONFIG_COUNT": "1", "TERM": "vt100", "HOME": "/elsewhere"})
    monkeypatch.undo()
    home = tmp_path / "runtime" / "home"
    assert env == {
        **PASSED,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "GIT_CONFIG_COUNT": "1",
        **ISOLATION,
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        **sandbox,
    }


def test_the_environment_without_git_variables(tmp_path: Path, monkeypatch) -> None:
    run = make_run(tmp_path)
    monkeypatch.setattr(os, "environ", {"PATH": "/bin", "HOME": "/root"})
    env = run._environment("default")
    monkeypatch.undo()
    home = tmp_path / "runtime" / "home"
    assert env == {"PATH": "/bin", "LESSSECURE": "1", **ISOLATION, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}


# -- the command line -------------------------------------------------------------------------

BASE_ARGV = [
    "--output-format", "stream-json",
    "--input-format", "stream-json",
    "--verbose",
    "--permission-prompt-tool", "stdio",
]  # fmt: skip
MCP = {"docs": {"type": "http", "url": "https://mcp.example/docs", "headers": {"Authorization": "Bearer t"}}}
INSTRUCTIONS_HEADER = (
    "# Project instructions from the workspace\n"
    "Gatehouse passes these files from the workspace as context; it does not load the workspace's "
    "Claude Code settings, hooks, MCP servers, agents or commands.\n"
)


def test_the_command_line_of_a_plain_run(tmp_path: Path) -> None:
    run = make_run(tmp_path, run_policy={"web_search": "allow"})
    assert run._cli_argv("/opt/claude", "default", "") == [
        "/opt/claude", *BASE_ARGV, "--permission-mode", "default", "--setting-sources", "user", "--strict-mcp-config",
    ]  # fmt: skip


def test_the_command_line_carries_every_guardrail(tmp_path: Path) -> None:
    run = make_run(tmp_path, run_policy={"web_search": "deny"}, settings={"model": "claude-x", "mcp_servers": MCP})
    (run.workspace / "CLAUDE.md").write_text("Be careful.\n", encoding="utf-8")
    files = tmp_path / "runtime" / "claude-code"
    assert run._cli_argv("claude", "plan", "0f3a-session") == [
        "claude", *BASE_ARGV, "--permission-mode", "plan",
        "--model", "claude-x",
        "--disallowedTools", "WebSearch",
        "--setting-sources", "user", "--strict-mcp-config",
        "--mcp-config", str(files / "mcp-servers.json"),
        "--append-system-prompt-file", str(files / "project-instructions.md"),
        "--resume", "0f3a-session",
    ]  # fmt: skip
    assert json.loads((files / "mcp-servers.json").read_text()) == {"mcpServers": MCP}
    assert (files / "project-instructions.md").read_text() == INSTRUCTIONS_HEADER + "\n## CLAUDE.md\n\nBe careful.\n\n"


@pytest.mark.parametrize("run_policy", [None, {}, {"web_search": "inherit"}, {"web_search": "allow"}])
def test_web_search_is_refused_only_when_the_run_policy_denies_it(tmp_path: Path, run_policy) -> None:
    run = make_run(tmp_path, run_policy=run_policy)
    assert "--disallowedTools" not in run._cli_argv("claude", "default", "")


def test_isolation_flags_without_servers_or_instructions(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    files = tmp_path / "runtime" / "deep" / "claude-code"
    assert isolation.argv(files_dir=files, workspace=workspace, mcp_servers={}) == [
        "--setting-sources", "user", "--strict-mcp-config",
    ]  # fmt: skip
    assert files.is_dir() and list(files.iterdir()) == []


def test_isolation_flags_write_private_files_again_at_each_start(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".claude").mkdir(parents=True)
    (workspace / "CLAUDE.md").write_text("Top.", encoding="utf-8")
    (workspace / ".claude" / "CLAUDE.md").write_text("Inner.\n@secrets.txt", encoding="utf-8")
    files = tmp_path / "runtime" / "deep" / "claude-code"
    expected = [
        "--setting-sources", "user", "--strict-mcp-config",
        "--mcp-config", str(files / "mcp-servers.json"),
        "--append-system-prompt-file", str(files / "project-instructions.md"),
    ]  # fmt: skip
    stale = {"old": {"type": "stdio", "command": "x"}}
    assert isolation.argv(files_dir=files, workspace=workspace, mcp_servers=stale) == expected
    # The next start rewrites both files (a command may have left something there).
    assert isolation.argv(files_dir=files, workspace=workspace, mcp_servers=MCP) == expected
    assert (files / "mcp-servers.json").read_text() == json.dumps({"mcpServers": MCP})
    assert (files / "project-instructions.md").read_text() == (
        INSTRUCTIONS_HEADER + "\n## CLAUDE.md\n\nTop.\n\n## .claude/CLAUDE.md\n\nInner.\n@secrets.txt\n"
    )
    for name in ("mcp-servers.json", "project-instructions.md"):
        assert stat.S_IMODE((files / name).stat().st_mode) == 0o600


def test_isolation_never_writes_through_a_link_left_in_the_run_directory(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    files = tmp_path / "claude-code"
    files.mkdir()
    target = tmp_path / "elsewhere.json"
    target.write_text("untouched", encoding="utf-8")
    (files / "mcp-servers.json").symlink_to(target)
    isolation.argv(files_dir=files, workspace=workspace, mcp_servers=MCP)
    assert target.read_text() == "untouched"
    assert not (files / "mcp-servers.json").is_symlink()


# -- _start: what the process gets and the first message --------------------------------------

INITIALIZE = {
    "type": "control_request",
    "request_id": "req_1_initialize",
    "request": {"subtype": "initialize", "hooks": {"PreToolUse": [{"matcher": None, "hookCallbackIds": ["gatehouse_pre_tool_use"]}]}},
}


def started(run: _ClaudeRun, monkeypatch) -> dict[str, Any]:
    seen: dict[str, Any] = {"sent": [], "turns": 0}

    async def spawn(argv: list[str], *, env: dict[str, str], floor: Any) -> None:
        seen.update(argv=argv, env=env, floor=floor)

    async def send(obj: dict[str, Any]) -> None:
        seen["sent"].append(obj)

    async def begin_turn() -> None:
        seen["turns"] += 1

    monkeypatch.setattr(run, "spawn", spawn)
    monkeypatch.setattr(run, "_send", send)
    monkeypatch.setattr(run, "_begin_turn", begin_turn)
    return seen


@pytest.mark.parametrize(
    ("runtime_mode", "interaction_mode", "driver_settings", "mode", "warned"),
    [
        ("full-access", "default", {"allow_bypass_permissions": True}, "bypassPermissions", False),
        ("full-access", "default", {}, "default", True),
        ("full-access", "plan", {}, "plan", False),
        ("auto-accept-edits", "default", {}, "acceptEdits", False),
    ],
)
async def test_start_spawns_the_cli_with_its_guardrails_then_initializes(
    tmp_path: Path, monkeypatch, runtime_mode, interaction_mode, driver_settings, mode, warned
) -> None:
    run = make_run(tmp_path, runtime_mode=runtime_mode, interaction_mode=interaction_mode,
                   settings={"claude_bin": "/opt/claude", **driver_settings})
    (run.config_dir / "agents").mkdir(parents=True)  # left by an earlier command: removed
    seen = started(run, monkeypatch)
    monkeypatch.setattr(os, "environ", {"PATH": "/bin"})
    await run._start()
    monkeypatch.undo()
    git_env = workspace_config.scan(run.workspace).git_env()
    assert seen["argv"] == [
        "/opt/claude", *BASE_ARGV, "--permission-mode", mode, "--setting-sources", "user", "--strict-mcp-config",
    ]  # fmt: skip
    home = tmp_path / "runtime" / "home"
    assert seen["env"] == {
        "PATH": "/bin", "LESSSECURE": "1", **git_env, **ISOLATION, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        **({"IS_SANDBOX": "1"} if mode == "bypassPermissions" else {}),
    }  # fmt: skip
    assert seen["floor"] is None
    assert seen["sent"] == [INITIALIZE] and seen["turns"] == 1
    assert run.cli_mode == mode
    assert not (run.config_dir / "agents").exists()
    assert (run.config_dir / "settings.json").read_text() == "{}\n"
    warnings = [p["text"] for kind, p in run.ctx.recorder.emitted if kind == "notice" and p.get("level") == "warning"]
    assert warnings == (
        ["full-access was requested but this server does not allow Claude Code's bypassPermissions; "
         "running in default mode (every tool call still goes through the gate)."] if warned else []
    )


async def test_start_resumes_a_session_whose_transcript_survived(tmp_path: Path, monkeypatch) -> None:
    run = make_run(tmp_path, settings={"claude_bin": "claude"}, resume_state={"session_id": "abc-123"})
    transcript = run.config_dir / "projects" / "-ws" / "abc-123.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("{}\n", encoding="utf-8")
    seen = started(run, monkeypatch)
    await run._start()
    assert seen["argv"][-2:] == ["--resume", "abc-123"] and run._resume_session == "abc-123"


async def test_start_holds_the_cli_in_the_floor_reaching_its_model_and_servers(tmp_path: Path, monkeypatch) -> None:
    reached: list[list[str]] = []
    floor = SimpleNamespace(reaching=lambda urls: reached.append(urls) or "the floor")
    run = make_run(tmp_path, floor=floor, settings={"claude_bin": "claude", "mcp_servers": MCP,
                                                    "env_values": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}})
    seen = started(run, monkeypatch)
    await run._start()
    assert seen["floor"] == "the floor"
    assert reached == [["http://127.0.0.1:9", "https://mcp.example/docs"]]


async def test_start_without_a_cli_fails_the_run_before_starting_anything(tmp_path: Path, monkeypatch) -> None:
    run = make_run(tmp_path, settings={"agents_dir": str(tmp_path / "no-agents"), "env_values": {"PATH": str(tmp_path)}})
    seen = started(run, monkeypatch)
    with pytest.raises(RunFailed) as failed:
        await run._start()
    assert failed.value.reason == "agent_not_found"
    assert failed.value.detail == (
        "Claude Code CLI not found: set GATEHOUSE_CLAUDE_BIN, put `claude` on PATH, or run `make agents`."
    )
    assert "argv" not in seen and seen["sent"] == []
