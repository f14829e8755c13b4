"""Agents get an allow-listed environment: none of the server's secrets, for every driver.

The server's environment is given Gatehouse's secrets (monkeypatched into os.environ); each
driver's agent process then prints its environment (`env`, run as the agent's own command)
and, for the real CLIs, /proc/<pid>/environ of the CLI itself is read while its first
request waits at the gate. None of the secrets may appear; a name the operator listed in
GATEHOUSE_AGENT_ENV must.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from drivers import agent_env
from drivers.base import GateAnswer, ToolRequest
from drivers.claude_code import ClaudeCodeDriver
from drivers.codex import CodexDriver
from drivers.scripted import ScriptedDriver
from tests.drivers.fake_context import FakeRunContext
from tests.drivers.test_claude_code import make_ctx as claude_ctx
from tests.drivers.test_claude_code import processes_in, require_cli
from tests.drivers.test_codex import make_ctx as codex_ctx
from tests.fakes import anthropic_server as anthropic
from tests.fakes import responses_server as responses

# name -> value put into the server's environment; none of them may reach an agent.
SECRETS = {
    "GATEHOUSE_SECRET_KEY": "secret-key-value-4711",
    "DATABASE_URL": "postgres://gatehouse:db-password-4711@db/gatehouse",
    "REDIS_URL": "redis://:redis-password-4711@redis:6379/0",
    "DJANGO_X": "django-x-value-4711",
    "DJANGO_LISTED": "listed-but-forbidden-4711",
}
# Listed by the operator: one ordinary name (passes) and one forbidden name (never passes).
LISTED = ["AGENT_PASS_ME", "DJANGO_LISTED"]
PASSED = {"AGENT_PASS_ME": "operator-listed-value-0815"}
# Set by value for every agent, where one name is forbidden.
FORBIDDEN_VALUE = {"GATEHOUSE_VALUE": "forbidden-value-4711"}
UNLISTED = {"SOME_OTHER_SERVER_VAR": "unlisted-value-4711"}


@pytest.fixture
def server_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**SECRETS, **PASSED, **UNLISTED}.items():
        monkeypatch.setenv(name, value)


def operator_settings(**extra: Any) -> dict[str, Any]:
    values = {**FORBIDDEN_VALUE, **extra.pop("env_values", {})}
    return {"env_names": LISTED, "env_values": values, **extra}


def assert_clean(text: str, *, what: str) -> None:
    """`text` (an environment dump) has no secret and no unlisted variable, and has the listed one."""
    leaked = [name for name, value in {**SECRETS, **FORBIDDEN_VALUE, **UNLISTED}.items() if name in text or value in text]
    assert not leaked, f"{what} saw {leaked}"
    assert "AGENT_PASS_ME=operator-listed-value-0815" in text, f"{what} lacks the operator-listed variable"


def proc_environ(pid: int) -> str:
    return Path(f"/proc/{pid}/environ").read_bytes().replace(b"\0", b"\n").decode(errors="replace")


def refused_notices(ctx: FakeRunContext) -> list[dict[str, Any]]:
    return [p for k, p in ctx.activities if k == "notice" and p.get("refused_env")]


# -- the shared builder (pure) -------------------------------------------------------------------


def test_build_passes_only_the_allow_list() -> None:
    source = {
        "PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "UTC",
        "HOME": "/root", "USER": "root", "AWS_SECRET_ACCESS_KEY": "aws", "ANTHROPIC_API_KEY": "sk",
        **SECRETS, **PASSED,
    }  # fmt: skip
    env = agent_env.build(operator_settings(), prefixes=("ANTHROPIC_",), fixed={"HOME": "/run/home"}, source=source)
    assert env == {
        "PATH": "/usr/bin", "LANG": "C.UTF-8", "LC_ALL": "C", "TERM": "xterm", "TZ": "UTC",
        "ANTHROPIC_API_KEY": "sk", "AGENT_PASS_ME": "operator-listed-value-0815", "HOME": "/run/home",
        "LESSSECURE": "1",
    }  # fmt: skip


def test_forbidden_names_never_pass_even_when_a_driver_or_operator_names_them() -> None:
    source = {"GATEHOUSE_X": "1", "DATABASE_URL": "db", "django_lower": "1", "REDIS_URL": "r"}
    env = agent_env.build(
        {"env_names": ["GATEHOUSE_X", "DATABASE_URL", "django_lower"], "env_values": {"REDIS_URL": "r", "DJANGO_Y": "y"}},
        names=("REDIS_URL",),
        prefixes=("GATEHOUSE_",),
        source=source,
    )
    assert env == {"LESSSECURE": "1"}  # (set for every agent: agent_env step 6)
    assert agent_env.refused({"env_names": ["GATEHOUSE_X", "OK"], "env_values": {"DJANGO_Y": "y"}}) == ["DJANGO_Y", "GATEHOUSE_X"]


def test_path_loses_entries_that_would_mean_the_workspace() -> None:
    env = agent_env.build({}, source={"PATH": ":/usr/local/bin:.:bin::/usr/bin:"})
    assert env["PATH"] == "/usr/local/bin:/usr/bin"


def test_refused_notice_names_what_was_not_passed() -> None:
    assert agent_env.refused_notice({"env_names": ["AWS_REGION"]}, driver="x") is None
    notice = agent_env.refused_notice(operator_settings(), driver="codex")
    assert notice is not None and notice["level"] == "warning"
    assert notice["refused_env"] == ["DJANGO_LISTED", "GATEHOUSE_VALUE"] and "DJANGO_LISTED" in notice["text"]


def test_settings_read_agent_env_names_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.exceptions import ImproperlyConfigured

    from infra.env import env_names

    monkeypatch.setenv("GH_TEST_NAMES", " AWS_REGION, HTTPS_PROXY ,")
    assert env_names("GH_TEST_NAMES", []) == ["AWS_REGION", "HTTPS_PROXY"]
    monkeypatch.setenv("GH_TEST_NAMES", "AWS_REGION,not a name")
    with pytest.raises(ImproperlyConfigured, match="not a name"):
        env_names("GH_TEST_NAMES", [])


def test_worker_passes_the_settings_to_every_driver(settings: Any) -> None:
    from drivers.registry import driver_settings

    settings.GATEHOUSE_AGENT_ENV = ["AWS_REGION"]
    settings.GATEHOUSE_AGENT_ENV_VALUES = {"ANTHROPIC_BASE_URL": "http://proxy"}
    for name in ("scripted", "claude-code", "codex"):
        options = driver_settings(name)
        assert options["env_names"] == ["AWS_REGION"] and options["env_values"] == {"ANTHROPIC_BASE_URL": "http://proxy"}


def test_git_in_a_workspace_without_a_repository_never_finds_the_one_above(tmp_path: Path, settings: Any) -> None:
    # Gatehouse's workspaces lie in its var directory, often inside its own checkout: there
    # `git stash` or `git checkout main` in a fresh workspace would change the server's code.
    import subprocess

    from drivers.registry import driver_settings

    outer = tmp_path / "checkout"
    settings.GATEHOUSE_WORKSPACES_DIR = outer / "var" / "workspaces"
    settings.GATEHOUSE_RUNTIME_DIR = outer / "var" / "runtime"
    workspace = settings.GATEHOUSE_WORKSPACES_DIR / "run-1"
    workspace.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    options = driver_settings("scripted")
    env = agent_env.build(options, source={"PATH": os.environ["PATH"]})

    assert env["GIT_CEILING_DIRECTORIES"] == f"{outer}/var/workspaces:{outer}/var/runtime"
    found = subprocess.run(["git", "rev-parse", "--git-dir"], cwd=workspace, env=env, capture_output=True, text=True)
    assert found.returncode != 0 and "not a git repository" in found.stderr
    unbounded = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=workspace,
                               env={"PATH": os.environ["PATH"]}, capture_output=True, text=True)
    assert unbounded.stdout.strip() == str(outer)  # what the ceiling keeps it from
    # an operator's value does not replace it
    assert agent_env.build({**options, "env_values": {"GIT_CEILING_DIRECTORIES": "/"}},
                           source={})["GIT_CEILING_DIRECTORIES"] == env["GIT_CEILING_DIRECTORIES"]


# -- scripted: the commands of a scenario ----------------------------------------------------------


async def test_scripted_commands_get_the_allow_listed_environment(tmp_path: Path, server_secrets: None) -> None:
    workspace, runtime = tmp_path / "ws", tmp_path / "runtime"
    workspace.mkdir()
    runtime.mkdir()
    ctx = FakeRunContext(
        workspace=workspace,
        runtime_dir=runtime,
        decide=lambda r: GateAnswer("allow"),
        scenario={"steps": [{"tool": "bash", "input": {"command": "env"}}]},
        settings=operator_settings(),
    )
    result = await ScriptedDriver().run(ctx)

    assert result.status == "completed"
    [step] = ctx.finished.values()
    assert_clean(step["output"], what="a scripted command")
    assert f"HOME={runtime / 'home'}" in step["output"]


# -- the real CLIs ------------------------------------------------------------------------------------


def _cli_environ_then(decision: GateAnswer, seen: dict[str, str], workspace: Path) -> Any:
    """A decider that first reads the agent CLI's own environment (it is waiting for us)."""

    def decide(request: ToolRequest) -> GateAnswer:
        for pid in processes_in(workspace):
            # The floor's own bubblewrap (its init runs in the workspace) has bubblewrap's
            # environment, not the agent's: kept apart, and checked for secrets too.
            floor = Path(f"/proc/{pid}/comm").read_text().strip() == "bwrap"
            seen[f"floor:{pid}" if floor else str(pid)] = proc_environ(pid)
        return decision

    return decide


@pytest.mark.agents
async def test_claude_code_gets_none_of_the_server_secrets(tmp_path: Path, server_secrets: None) -> None:
    require_cli()
    seen: dict[str, str] = {}
    with anthropic.FakeAnthropicServer() as model:
        model.add_turns([anthropic.tool_use("Bash", {"command": "env", "description": "print the environment"})], [anthropic.text("ok")])
        ctx = claude_ctx(tmp_path, model, lambda r: GateAnswer("allow"))
        ctx.decide = _cli_environ_then(GateAnswer("allow"), seen, ctx.workspace)
        ctx.settings = operator_settings(**ctx.settings)
        result = await asyncio.wait_for(ClaudeCodeDriver().run(ctx), 60)
        assert result.status == "completed", ctx.activities
        [env_output] = model.tool_results()

    assert [pid for pid in seen if not pid.startswith("floor:")], "the CLI's process was not found while it waited"
    for pid, environ in seen.items():
        if pid.startswith("floor:"):
            assert not [n for n, v in {**SECRETS, **FORBIDDEN_VALUE, **UNLISTED}.items() if n in environ or v in environ]
        else:
            assert_clean(environ, what=f"the Claude Code process {pid}")
    assert_clean(env_output["text"], what="a command Claude Code ran")
    assert "CLAUDE_CONFIG_DIR=" in env_output["text"]
    assert [n["refused_env"] for n in refused_notices(ctx)] == [["DJANGO_LISTED", "GATEHOUSE_VALUE"]]


@pytest.mark.agents
async def test_codex_gets_none_of_the_server_secrets(tmp_path: Path, server_secrets: None, codex_bin: str) -> None:
    seen: dict[str, str] = {}
    with responses.FakeResponsesServer() as model:
        model.add_turns([responses.exec_command("env", call_id="call_env")], [responses.message("ok")])
        ctx = codex_ctx(tmp_path, lambda r: GateAnswer("allow"), codex_bin=codex_bin, model_server=model)
        ctx.decide = _cli_environ_then(GateAnswer("allow"), seen, ctx.workspace)
        ctx.settings = operator_settings(**ctx.settings)
        result = await asyncio.wait_for(CodexDriver().run(ctx), 60)
        assert result.status == "completed", ctx.activities
        env_output = model.tool_output("call_env") or ""

    codex_processes = {pid: environ for pid, environ in seen.items() if "CODEX_HOME=" in environ}
    assert codex_processes, "the Codex process was not found while it waited"
    for pid, environ in codex_processes.items():
        assert_clean(environ, what=f"the Codex process {pid}")
    assert_clean(env_output, what="a command Codex ran")
    assert "FAKE_CODEX_API_KEY" in next(iter(codex_processes.values()))
    assert [n["refused_env"] for n in refused_notices(ctx)] == [["DJANGO_LISTED", "GATEHOUSE_VALUE"]]


@pytest.fixture
def codex_bin() -> str:
    from tests.drivers.test_codex import _codex_bin

    path = _codex_bin()
    if path is None:
        message = "the Codex CLI is not installed (run `make agents`, or set GATEHOUSE_CODEX_BIN)"
        if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return path


def test_less_runs_no_shell_for_an_agent(tmp_path: Path) -> None:
    """Even in a terminal with keys typed into it (`script -c`), `less` under the agent's
    environment refuses `!cmd`."""
    import shutil
    import subprocess

    if not (shutil.which("script") and shutil.which("less")):
        pytest.skip("script(1) or less is not installed")
    page = tmp_path / "page.txt"
    page.write_text("hello\n")
    proof = tmp_path / "ran"
    keys = f"!touch {proof}\n\nqq"
    env = agent_env.build({}, source={"PATH": os.environ["PATH"], "TERM": "xterm"})

    def less(environment: dict[str, str]) -> bool:
        proof.unlink(missing_ok=True)
        subprocess.run(["script", "-qc", f"less {page}", "/dev/null"], input=keys, text=True, env=environment,
                       capture_output=True, timeout=20, check=False)
        return proof.exists()

    assert not less(env)
    assert not less({**env, "LESSSECURE": "0"})  # any value keeps it on
    assert less({k: v for k, v in env.items() if k != "LESSSECURE"})  # the premise: without it, a shell runs
