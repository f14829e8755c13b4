"""A turn's payload says `phase: start` / `phase: end` whatever the driver (ACP, Claude Code,
Codex, OpenCode, scripted); turns recorded before that (`event: started/completed`) are
still matched when a run resumes across the change."""

from __future__ import annotations

from pathlib import Path

from drivers.base import GateAnswer
from drivers.runcontext import _TURN_EVENTS, _turn_as_now
from drivers.scripted import ScriptedDriver
from runs.events import Event
from tests.drivers.fake_context import FakeRunContext


async def test_the_scripted_driver_says_a_turn_by_its_phase(tmp_path: Path) -> None:
    ctx = FakeRunContext(
        workspace=tmp_path, runtime_dir=tmp_path / "rt", decide=lambda _request: GateAnswer("allow"),
        prompt="say hello", scenario={"steps": [{"message": "hello"}]}, floor=None,
    )
    result = await ScriptedDriver().run(ctx)
    assert result.status == "completed"
    assert [(k, p) for k, p in ctx.activities if k == "turn"] == [
        ("turn", {"phase": "start", "prompt": "say hello"}),
        ("turn", {"phase": "end"}),
    ]


def test_the_run_context_names_a_turn_s_event_by_its_phase() -> None:
    assert _TURN_EVENTS == {"start": Event.TURN_STARTED, "end": Event.TURN_COMPLETED}


def test_a_turn_recorded_before_the_phase_is_read_as_a_driver_says_it_now() -> None:
    assert _turn_as_now("turn", {"event": "started", "turn_id": "u1", "runtime_mode": "m"}) == {
        "phase": "start", "turn_id": "u1", "runtime_mode": "m"}
    assert _turn_as_now("turn", {"event": "completed"}) == {"phase": "end"}
    # what is already said by its phase, and what is not a turn, is left as it is
    assert _turn_as_now("turn", {"phase": "end", "status": "completed"}) == {"phase": "end", "status": "completed"}
    assert _turn_as_now("tool", {"event": "started", "item_id": "i"}) == {"event": "started", "item_id": "i"}
