"""A broken agent fails its own run, with a reason in its log; the worker and other runs go on.

Each driver's CLI is replaced by tests/fakes/broken_agent.py (garbage, a truncated line, a
10 MB line, silence, an exit mid-request) while a healthy scripted run shares the worker.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from runs.models import Activity, Run
from tests.flow import eventually, start_run

pytestmark = [pytest.mark.django_db(transaction=True)]

BROKEN = Path(__file__).resolve().parents[1] / "fakes" / "broken_agent.py"
# What each fault must fail the run with (the reason stored on the run).
EXPECTED = {
    "garbage": "agent_protocol_error",
    "truncated": "agent_protocol_error",
    "huge": "agent_protocol_error",
    "silent": "agent_timeout",
    "exit": "agent_exited",
}


@pytest.fixture
def broken(settings: Any, tmp_path: Path) -> Any:
    # The drivers start `<bin>` directly: a wrapper runs the fake with this Python.
    wrapper = tmp_path / "broken-agent"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {BROKEN} \"$@\"\n")
    wrapper.chmod(0o755)
    settings.GATEHOUSE_CLAUDE_BIN = str(wrapper)
    settings.GATEHOUSE_CODEX_BIN = str(wrapper)
    settings.GATEHOUSE_AGENT_IDLE_TIMEOUT_S = 2

    def use(mode: str) -> None:
        settings.GATEHOUSE_AGENT_ENV_VALUES = {"FAKE_AGENT_MODE": mode}

    return use


@pytest.mark.parametrize("mode", sorted(EXPECTED))
@pytest.mark.parametrize("driver", ["claude-code", "codex"])
async def test_a_broken_agent_fails_only_its_own_run(api: Any, worker: Any, broken: Any, driver: str, mode: str) -> None:
    broken(mode)
    response = await sync_to_async(api.post)("/api/v1/runs/", {"driver": driver, "prompt": "go"}, format="json")
    bad = response.json()
    good = await start_run(api, {"steps": [{"tool": "bash", "input": {"command": "sleep 1; ls"}}, {"message": "fine"}]})
    failed = await eventually(lambda: Run.objects.filter(pk=bad["id"], status__in=Run.FINISHED).first(), timeout=60)
    assert (failed.status, failed.failure_reason) == ("failed", EXPECTED[mode])
    notices = await sync_to_async(lambda: [a.payload for a in Activity.objects.filter(run_id=bad["id"], kind="notice")])()
    assert any(EXPECTED[mode] in str(n) for n in notices), notices  # the reason is in the run's log
    healthy = await eventually(lambda: Run.objects.filter(pk=good["id"], status__in=Run.FINISHED).first(), timeout=60)
    assert healthy.status == "completed"
    assert worker._background is not None and not worker._background.done()  # the worker lives on
