"""What Gatehouse adds to a real agent CLI's run: the same CLI and fake model, through
Gatehouse with every request auto-allowed, and on its own with its permission checks off.

Claude Code (`claude -p … --permission-mode bypassPermissions`) and Codex (`codex exec
--dangerously-bypass-approvals-and-sandbox`; also `codex app-server`, the mode Gatehouse
drives, with its checks off and with a bare client accepting each request) against the fake model servers of tests/fakes,
each asked for STEPS shell commands and a final answer; the fake model runs in a process of
its own (`bench/fake_model.py`), as a real one is remote, so it never waits for this
process's GIL while Gatehouse writes its records. Through Gatehouse: the real worker
in this process (SQLite), a policy that allows everything, so no person is involved; the
time is the run's, from creation to finished. Both sides run without the CLI's own
sandbox (Claude Code has none by default; Codex runs under the run policy `sandbox:
unrestricted`, as `--dangerously-bypass-approvals-and-sandbox` does), so only the
permission path differs. Codex is the native program on both sides (the driver starts it
directly, not through npm's Node launcher); `codex exec` through the launcher is printed
too. OpenCode (`opencode-ai`) through the `opencode` driver (`opencode serve`) and the
`acp` driver (`opencode acp`), against `opencode run` with every permission `allow` in the
same Gatehouse-made configuration, and against `opencode acp` driven by a bare ACP client
(its permissions allowed, nothing recorded); claude-code-acp through the `acp` driver
against the same adapter driven by a bare ACP client in its `bypassPermissions` mode
(without the fs and terminal capabilities it runs its own tools). Medians of ROUNDS; not a
test.

    .venv/bin/python bench/cli_overhead.py [--steps 5] [--rounds 3] [--cli claude,codex,opencode,claude-code-acp]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
VAR = Path(tempfile.mkdtemp(prefix="gatehouse-bench-"))
os.environ["GATEHOUSE_VAR_DIR"] = str(VAR)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
os.environ.setdefault("GATEHOUSE_LOG_LEVEL", "WARNING")
os.environ["GATEHOUSE_WAIT_POLL_S"] = "0.2"

import django  # noqa: E402

django.setup()

from asgiref.sync import sync_to_async  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from approvals.models import Policy  # noqa: E402
from drivers.acp import agents as acp_agents  # noqa: E402
from drivers.codex import config as codex_config  # noqa: E402
from drivers.codex.driver import APPROVAL_POLICY  # noqa: E402
from drivers.opencode import config as opencode_config  # noqa: E402
from drivers.processes import group_members  # noqa: E402
from drivers.worker import DriverWorker, supervisor  # noqa: E402
from runs.models import Run  # noqa: E402
from runs.services import run_create  # noqa: E402

CLAUDE = ROOT / ".agents" / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
CODEX_LAUNCHER = ROOT / ".agents" / "node_modules" / ".bin" / "codex"  # npm's Node launcher
CODEX = codex_config.native_binary(str(CODEX_LAUNCHER))  # the program it starts (the driver starts it directly)
OPENCODE = ROOT / ".agents" / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
CLAUDE_CODE_ACP = ROOT / ".agents" / "node_modules" / "@zed-industries" / "claude-code-acp" / "dist" / "index.js"


async def through_gatehouse(driver: str, workspace: Path, policy: str = "allow-all", options: dict[str, Any] | None = None) -> float:
    """One run through the real worker of this process (`drivers` consumer and supervisor,
    as `serve` runs them): created, started by its doorbell, driven to its end."""
    sup = supervisor()
    started = time.monotonic()
    run = await sync_to_async(run_create)(driver=driver, prompt="Run the steps.", workspace=str(workspace), policy_name=policy,
                                                options=options or {})
    # Wait for the run's own task (no polling of the database, which would compete for the
    # CPU with the run it measures).
    async with asyncio.timeout(300):
        while run.pk not in sup.tasks:
            await asyncio.sleep(0.001)
        await sup.tasks[run.pk]
    elapsed = time.monotonic() - started
    row = await sync_to_async(Run.objects.get)(pk=run.pk)
    assert row.status == "completed", (row.status, row.failure_reason, row.failure_detail)
    return elapsed


def claude_alone(model_url: str, workspace: Path) -> float:
    home = Path(tempfile.mkdtemp(dir=VAR))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "IS_SANDBOX": "1",
           "ANTHROPIC_BASE_URL": model_url, "ANTHROPIC_API_KEY": "dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "TERM": "dumb"}
    started = time.monotonic()
    subprocess.run([str(CLAUDE), "-p", "Run the steps.", "--output-format", "stream-json", "--verbose",
                    "--permission-mode", "bypassPermissions"], cwd=workspace, env=env, capture_output=True, check=True, timeout=300)
    return time.monotonic() - started


def codex_alone(base_url: str, workspace: Path, binary: str = CODEX) -> float:
    env = _codex_env(base_url, workspace)
    started = time.monotonic()
    subprocess.run([binary, "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
                    "Run the steps."], cwd=workspace, env=env, capture_output=True, check=True, timeout=300)
    return time.monotonic() - started


def _codex_env(base_url: str, workspace: Path, run_policy: dict[str, str] | None = None) -> dict[str, str]:
    home = Path(tempfile.mkdtemp(dir=VAR))
    codex_home = home / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(codex_config.render_config(
        {"model": "fake-model", "base_url": base_url, "env_key": "FAKE_CODEX_API_KEY"}, run_policy or {},
        workspace if run_policy is not None else None))
    return {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(codex_home), "FAKE_CODEX_API_KEY": "dummy"}


def codex_protocol_floor(base_url: str, workspace: Path, approval_policy: str = APPROVAL_POLICY) -> float:
    """`codex app-server` (the protocol Gatehouse drives, with the driver's config.toml and
    approval policy) answered by a minimal client that accepts every request at once and
    records nothing: what the app-server mode costs before Gatehouse does anything. With
    `approval_policy="never"`: the same app-server with its own permission checks off (it
    asks the client nothing)."""
    env = _codex_env(base_url, workspace, {"sandbox": "unrestricted"})
    started = time.monotonic()
    proc = subprocess.Popen([str(CODEX), "app-server"], cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps(message) + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def until(done: Any) -> dict[str, Any]:
        for line in proc.stdout:  # type: ignore[union-attr]
            message = json.loads(line)
            if "id" in message and "method" in message:  # an approval request: accepted at once
                send({"id": message["id"], "result": {"decision": "accept"}})
            elif done(message):
                return message
        raise RuntimeError("codex app-server exited")

    send({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "bench", "title": "bench", "version": "0"},
                                                     "capabilities": {"experimentalApi": False}}})
    until(lambda m: m.get("id") == 1)
    send({"method": "initialized"})
    send({"id": 2, "method": "thread/start", "params": {"cwd": str(workspace), "approvalPolicy": approval_policy,
                                                       "sandbox": "danger-full-access"}})
    thread = until(lambda m: m.get("id") == 2)["result"]["thread"]["id"]
    send({"id": 3, "method": "turn/start", "params": {"threadId": thread, "input": [
        {"type": "text", "text": "Run the steps.", "text_elements": []}]}})
    until(lambda m: m.get("method") == "turn/completed")
    proc.stdin.close()
    proc.wait(timeout=30)
    return time.monotonic() - started


def _opencode_settings(base_url: str) -> dict[str, Any]:
    """The driver settings of an OpenCode run against the fake model (as the worker makes them)."""
    return {"agents_dir": str(ROOT / ".agents"), "opencode_bin": str(OPENCODE), "opencode_base_url": base_url,
            "opencode_model": "fake-model", "opencode_env_key": "FAKE_OPENAI_KEY", "env_values": {"FAKE_OPENAI_KEY": "dummy"},
            "env_names": []}


def _opencode_env_allowing_all(base_url: str) -> dict[str, str]:
    """The environment the drivers give OpenCode (isolation flags, own HOME and XDG
    directories, Gatehouse's configuration), with every permission `allow`: OpenCode's own
    checks off, so it asks no one."""
    env = opencode_config.environment(_opencode_settings(base_url), Path(tempfile.mkdtemp(dir=VAR)))
    config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    config["permission"] = {"*": "allow"}
    env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
    return env


def opencode_alone(base_url: str, workspace: Path) -> float:
    env = _opencode_env_allowing_all(base_url)
    started = time.monotonic()
    subprocess.run([str(OPENCODE), "run", "Run the steps."], cwd=workspace, env=env, capture_output=True, check=True, timeout=300)
    return time.monotonic() - started


def acp_alone(argv: list[str], env: dict[str, str], workspace: Path, mode: str = "", meta: dict[str, Any] | None = None,
              terminate: bool = False) -> float:
    """An ACP agent driven by a bare client that offers no fs or terminal capability (the
    agent runs its own tools), allows any permission it is asked for at once and records
    nothing; `mode` is set with session/set_mode before the prompt. Its own process group,
    as under the driver."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=workspace, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, bufsize=1, start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    def until(request_id: int) -> dict[str, Any]:
        for line in proc.stdout:  # type: ignore[union-attr]
            message = json.loads(line)
            if message.get("method") == "session/request_permission":
                options = message["params"]["options"]
                chosen = next((o for o in options if o.get("kind") == "allow_once"), options[0])
                send({"id": message["id"], "result": {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}})
            elif "id" in message and "method" in message:
                send({"id": message["id"], "error": {"code": -32601, "message": "not offered"}})
            elif message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"ACP agent refused: {message['error']}")
                return message["result"]
        raise RuntimeError("ACP agent exited")

    send({"id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {
        "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}}})
    until(1)
    send({"id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": [], **({"_meta": meta} if meta else {})}})
    session = until(2)["sessionId"]
    if mode:
        send({"id": 3, "method": "session/set_mode", "params": {"sessionId": session, "modeId": mode}})
        until(3)
    send({"id": 4, "method": "session/prompt", "params": {"sessionId": session, "prompt": [{"type": "text", "text": "Run the steps."}]}})
    stop = until(4)["stopReason"]
    assert stop == "end_turn", stop
    # Stopped as the driver stops it: stdin closed; an agent that stays after EOF
    # (drivers/acp/agents.py, STAYS_AFTER_EOF) is sent SIGTERM with it; then its group exits.
    proc.stdin.close()
    if terminate:
        os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)
    while group_members(proc.pid):
        time.sleep(0.005)
    return time.monotonic() - started


def opencode_acp_alone(base_url: str, workspace: Path) -> float:
    return acp_alone([str(OPENCODE), "acp"], _opencode_env_allowing_all(base_url), workspace)


def claude_code_acp_alone(model_url: str, workspace: Path) -> float:
    """claude-code-acp as the `acp` driver starts it (its environment, settingSources []),
    in its own bypassPermissions mode."""
    cfg = {"agents_dir": str(ROOT / ".agents"), "env_names": [],
           "env_values": {"ANTHROPIC_BASE_URL": model_url, "ANTHROPIC_API_KEY": "dummy"}}
    spec = acp_agents.agent_for({"agent": "claude-code-acp"}, cfg)
    env = acp_agents.environment(spec, cfg, Path(tempfile.mkdtemp(dir=VAR)), {})
    env["IS_SANDBOX"] = "1"  # bypassPermissions is offered to root only with it
    return acp_alone(list(spec.argv), env, workspace, "bypassPermissions", acp_agents.session_meta(spec, workspace),
                     terminate=spec.profile in acp_agents.STAYS_AFTER_EOF)


async def main(steps: int, rounds: int, clis: set[str]) -> None:
    await sync_to_async(call_command)("migrate", verbosity=0)
    # Both sides run without the CLI's own sandbox (Codex's workspace-write sandbox costs
    # tens of ms per command on its own): what is compared is the permission path alone.
    await sync_to_async(Policy.objects.create)(name="allow-all", document={"default": "allow"})
    await sync_to_async(Policy.objects.create)(name="allow-all-unsandboxed", document={"default": "allow"},
                                               run_policy={"sandbox": "unrestricted"})
    settings.GATEHOUSE_HIBERNATE_AFTER_S = 0
    # The worker `serve` runs: the `drivers` consumer (each run's doorbell starts it) and the
    # supervisor. (An earlier version had only a supervisor, whose reconcile loop found each
    # new run: two more queries before every run that the doorbell does not cost.)
    from channels.layers import get_channel_layer

    from project.asgi import application

    worker = asyncio.create_task(
        DriverWorker(application=application, channels=["drivers"], channel_layer=get_channel_layer()).arun()
    )
    try:
        await _measure(steps, rounds, clis)
    finally:
        worker.cancel()
        await supervisor().shutdown()


async def _measure(steps: int, rounds: int, clis: set[str]) -> None:
    results: dict[str, tuple[list[float], list[float]]] = {}
    floors: dict[str, list[float]] = {}
    others: dict[str, tuple[str, list[float]]] = {}  # another baseline for a result: its name, times
    if "claude" in clis:
        with fake_model("claude", steps, 2 * rounds) as url:
            settings.GATEHOUSE_CLAUDE_BIN = str(CLAUDE)
            settings.GATEHOUSE_AGENT_ENV_VALUES = {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "dummy"}
            gated, alone = [], []
            for i in range(rounds):
                gated.append(await through_gatehouse("claude-code", _workspace(f"claude-g{i}")))
                alone.append(await asyncio.to_thread(claude_alone, url, _workspace(f"claude-a{i}")))
            results["Claude Code 2.1.197"] = (gated, alone)
    if "codex" in clis:
        with fake_model("codex", steps, 4 * rounds) as url:
            settings.GATEHOUSE_CODEX_BIN = str(CODEX_LAUNCHER)  # the driver starts what it launches
            settings.GATEHOUSE_CODEX_BASE_URL = url
            settings.GATEHOUSE_CODEX_MODEL = "fake-model"
            settings.GATEHOUSE_CODEX_ENV_KEY = "FAKE_CODEX_API_KEY"
            settings.GATEHOUSE_AGENT_ENV_VALUES = {"FAKE_CODEX_API_KEY": "dummy"}
            gated, alone, unchecked, floor, launched = [], [], [], [], []
            for i in range(rounds):
                gated.append(await through_gatehouse("codex", _workspace(f"codex-g{i}"), "allow-all-unsandboxed"))
                alone.append(await asyncio.to_thread(codex_alone, url, _workspace(f"codex-a{i}")))
                unchecked.append(await asyncio.to_thread(codex_protocol_floor, url, _workspace(f"codex-n{i}"), "never"))
                floor.append(await asyncio.to_thread(codex_protocol_floor, url, _workspace(f"codex-f{i}")))
                launched.append(await asyncio.to_thread(codex_alone, url, _workspace(f"codex-l{i}"), str(CODEX_LAUNCHER)))
            results["Codex 0.171.0"] = (gated, alone)
            floors["Codex 0.171.0"] = floor
            floors["Codex 0.171.0, checks off"] = unchecked
            floors["Codex 0.171.0, launched by npm"] = launched
    if "opencode" in clis:
        with fake_model("chat", steps, 4 * rounds) as url:
            settings.GATEHOUSE_OPENCODE_BIN = str(OPENCODE)
            settings.GATEHOUSE_OPENCODE_BASE_URL = url
            settings.GATEHOUSE_OPENCODE_MODEL = "fake-model"
            settings.GATEHOUSE_OPENCODE_ENV_KEY = "FAKE_OPENAI_KEY"
            settings.GATEHOUSE_AGENT_ENV_VALUES = {"FAKE_OPENAI_KEY": "dummy"}
            served, acp, alone, acp_bare = [], [], [], []
            for i in range(rounds):
                served.append(await through_gatehouse("opencode", _workspace(f"opencode-g{i}")))
                acp.append(await through_gatehouse("acp", _workspace(f"opencode-acp-g{i}"), options={"agent": "opencode"}))
                alone.append(await asyncio.to_thread(opencode_alone, url, _workspace(f"opencode-a{i}")))
                acp_bare.append(await asyncio.to_thread(opencode_acp_alone, url, _workspace(f"opencode-acp-a{i}")))
            results["OpenCode 1.18.33, `opencode` driver"] = (served, alone)
            results["OpenCode 1.18.33, `acp` driver"] = (acp, alone)
            others["OpenCode 1.18.33, `acp` driver"] = ("`opencode acp`, a bare ACP client", acp_bare)
    if "claude-code-acp" in clis:
        # The adapter's Bash is `mcp__acp__Bash` when the client offers a terminal (the
        # driver does), its own `Bash` when it does not (the bare client): two fakes.
        with fake_model("claude-acp", steps, rounds) as gated_url, fake_model("claude", steps, rounds) as alone_url:
            settings.GATEHOUSE_AGENT_ENV_VALUES = {"ANTHROPIC_BASE_URL": gated_url, "ANTHROPIC_API_KEY": "dummy"}
            gated, alone = [], []
            for i in range(rounds):
                gated.append(await through_gatehouse("acp", _workspace(f"cc-acp-g{i}"), options={"agent": "claude-code-acp"}))
                alone.append(await asyncio.to_thread(claude_code_acp_alone, alone_url, _workspace(f"cc-acp-a{i}")))
            results["claude-code-acp 0.16.2, `acp` driver"] = (gated, alone)
    print(f"{steps} shell commands and an answer, fake model, medians of {rounds} rounds")
    print("  (paired: the median of each round's own ratio, its runs one after the other: steadier than the ratio of")
    print("  the medians while this machine's speed drifts from minute to minute)")
    for name, (gated, alone) in results.items():
        g, a = statistics.median(gated), statistics.median(alone)
        print(f"  {name:20s} through Gatehouse {g:6.2f} s   alone {a:6.2f} s   overhead {100 * (g - a) / a:+5.1f} %  "
              f"(paired {_paired(gated, alone):+5.1f} %; target <= 10 %)")
        if name in floors:
            f, n = statistics.median(floors[name]), statistics.median(floors[f"{name}, checks off"])
            print(f"  {'':20s} app-server, its permission checks off (approvalPolicy never) {n:6.2f} s: "
                  f"Gatehouse adds {100 * (g - n) / n:+5.1f} % (paired {_paired(gated, floors[f'{name}, checks off']):+5.1f} %); "
                  f"the app-server mode costs {100 * (n - a) / a:+5.1f} % over `exec`")
            print(f"  {'':20s} app-server answered at once by a bare client {f:6.2f} s: Gatehouse adds {100 * (g - f) / f:+5.1f} % to the "
                  f"protocol it drives; the protocol costs {100 * (f - a) / a:+5.1f} % over `exec`")
            lau = statistics.median(floors[f"{name}, launched by npm"])
            print(f"  {'':20s} `codex exec` through npm's Node launcher (as typed at a prompt) {lau:6.2f} s: "
                  f"Gatehouse {100 * (g - lau) / lau:+5.1f} % against it")
        if name in others:
            label, times = others[name]
            o = statistics.median(times)
            print(f"  {'':20s} {label} {o:6.2f} s: Gatehouse {100 * (g - o) / o:+5.1f} % against it")


def _paired(gated: list[float], baseline: list[float]) -> float:
    """The median over rounds of gated/baseline - 1, in %: each round's two runs are minutes
    closer together than the two lists' medians."""
    return 100 * statistics.median(g / b - 1 for g, b in zip(gated, baseline, strict=True))


@contextmanager
def fake_model(kind: str, steps: int, copies: int) -> Iterator[str]:
    """The fake model in its own process (bench/fake_model.py): its URL."""
    child = subprocess.Popen([sys.executable, str(ROOT / "bench" / "fake_model.py"), kind, str(steps), str(copies)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip()
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)


def _workspace(name: str) -> Path:
    path = VAR / name
    path.mkdir()
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cli", default="claude,codex,opencode,claude-code-acp", help="which CLIs to measure (comma-separated)")
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.rounds, set(args.cli.split(","))))
