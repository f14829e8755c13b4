"""What Gatehouse adds to a real agent CLI's run: the same CLI and fake model, through
Gatehouse with every request auto-allowed, and on its own with its permission checks off.

Claude Code (`claude -p … --permission-mode bypassPermissions`) and Codex (`codex exec
--dangerously-bypass-approvals-and-sandbox`) against the fake model servers of tests/fakes,
each asked for STEPS shell commands and a final answer. Through Gatehouse: the real worker
in this process (SQLite), a policy that allows everything, so no person is involved; the
time is the run's, from creation to finished. Both sides run without the CLI's own
sandbox (Claude Code has none by default; Codex runs under the run policy `sandbox:
unrestricted`, as `--dangerously-bypass-approvals-and-sandbox` does), so only the
permission path differs. Medians of ROUNDS; not a test.

    .venv/bin/python bench/cli_overhead.py [--steps 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
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
from drivers.codex import config as codex_config  # noqa: E402
from drivers.worker import Supervisor  # noqa: E402
from runs.models import Run  # noqa: E402
from runs.services import run_create  # noqa: E402
from tests.fakes import anthropic_server as anthropic  # noqa: E402
from tests.fakes import responses_server as responses  # noqa: E402

CLAUDE = ROOT / ".agents" / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
CODEX = ROOT / ".agents" / "node_modules" / ".bin" / "codex"


def claude_turns(steps: int) -> list[Any]:
    return [[anthropic.tool_use("Bash", {"command": f"echo step {i}", "description": f"step {i}"})] for i in range(steps)] + [
        [anthropic.text("All steps done.")]
    ]


def codex_turns(steps: int) -> list[Any]:
    return [[responses.exec_command(f"echo step {i}")] for i in range(steps)] + [[responses.message("All steps done.")]]


async def through_gatehouse(driver: str, workspace: Path, policy: str = "allow-all") -> float:
    sup = Supervisor()
    sup.ensure_background()
    started = time.monotonic()
    run = await sync_to_async(run_create)(driver=driver, prompt="Run the steps.", workspace=str(workspace), policy_name=policy)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        row = await sync_to_async(Run.objects.get)(pk=run.pk)
        if row.is_finished:
            break
        await asyncio.sleep(0.02)
    elapsed = time.monotonic() - started
    await sup.shutdown()
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


def codex_alone(base_url: str, workspace: Path) -> float:
    home = Path(tempfile.mkdtemp(dir=VAR))
    codex_home = home / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(codex_config.render_config(
        {"model": "fake-model", "base_url": base_url, "env_key": "FAKE_CODEX_API_KEY"}, {}, None))
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "CODEX_HOME": str(codex_home), "FAKE_CODEX_API_KEY": "dummy"}
    started = time.monotonic()
    subprocess.run([str(CODEX), "exec", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
                    "Run the steps."], cwd=workspace, env=env, capture_output=True, check=True, timeout=300)
    return time.monotonic() - started


async def main(steps: int, rounds: int) -> None:
    await sync_to_async(call_command)("migrate", verbosity=0)
    # Both sides run without the CLI's own sandbox (Codex's workspace-write sandbox costs
    # tens of ms per command on its own): what is compared is the permission path alone.
    await sync_to_async(Policy.objects.create)(name="allow-all", document={"default": "allow"})
    await sync_to_async(Policy.objects.create)(name="allow-all-unsandboxed", document={"default": "allow"},
                                               run_policy={"sandbox": "unrestricted"})
    settings.GATEHOUSE_HIBERNATE_AFTER_S = 0
    results: dict[str, tuple[list[float], list[float]]] = {}
    with anthropic.FakeAnthropicServer() as model:
        settings.GATEHOUSE_CLAUDE_BIN = str(CLAUDE)
        settings.GATEHOUSE_AGENT_ENV_VALUES = {"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "dummy"}
        gated, alone = [], []
        for i in range(rounds):
            model.add_turns(*claude_turns(steps))
            gated.append(await through_gatehouse("claude-code", _workspace(f"claude-g{i}")))
            model.add_turns(*claude_turns(steps))
            alone.append(await asyncio.to_thread(claude_alone, model.url, _workspace(f"claude-a{i}")))
        results["Claude Code 2.1.197"] = (gated, alone)
    with responses.FakeResponsesServer() as model:
        settings.GATEHOUSE_CODEX_BIN = str(CODEX)
        settings.GATEHOUSE_CODEX_BASE_URL = model.base_url
        settings.GATEHOUSE_CODEX_MODEL = "fake-model"
        settings.GATEHOUSE_CODEX_ENV_KEY = "FAKE_CODEX_API_KEY"
        settings.GATEHOUSE_AGENT_ENV_VALUES = {"FAKE_CODEX_API_KEY": "dummy"}
        gated, alone = [], []
        for i in range(rounds):
            model.add_turns(*codex_turns(steps))
            gated.append(await through_gatehouse("codex", _workspace(f"codex-g{i}"), "allow-all-unsandboxed"))
            model.add_turns(*codex_turns(steps))
            alone.append(await asyncio.to_thread(codex_alone, model.base_url, _workspace(f"codex-a{i}")))
        results["Codex 0.171.0"] = (gated, alone)
    print(f"{steps} shell commands and an answer, fake model, medians of {rounds} rounds")
    for name, (gated, alone) in results.items():
        g, a = statistics.median(gated), statistics.median(alone)
        print(f"  {name:20s} through Gatehouse {g:6.2f} s   alone {a:6.2f} s   overhead {100 * (g - a) / a:+5.1f} %")


def _workspace(name: str) -> Path:
    path = VAR / name
    path.mkdir()
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.steps, args.rounds))
