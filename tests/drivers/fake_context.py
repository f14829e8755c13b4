"""An in-memory RunContext for driver protocol tests: no database, a scripted decider.

The gate is faked here only to test a driver's wire protocol in isolation against the
real CLI; the end-to-end tests go through the worker, the services and the API.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drivers.base import GateAnswer, ToolRequest

Decider = Callable[[ToolRequest], "GateAnswer | Awaitable[GateAnswer]"]


@dataclass
class FakeRunContext:
    workspace: Path
    runtime_dir: Path
    decide: Decider
    prompt: str = ""
    run_id: int = 1
    scenario: Mapping[str, Any] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    runtime_mode: str = "approval-required"
    interaction_mode: str = "default"
    run_policy: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    requests: list[ToolRequest] = field(default_factory=list)
    decisions: list[GateAnswer] = field(default_factory=list)
    finished: dict[int, dict[str, Any]] = field(default_factory=dict)
    activities: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    resuming: bool = False
    agent_state: Mapping[str, Any] = field(default_factory=dict)
    conversation: Mapping[str, Any] = field(default_factory=dict)
    conversation_resumed: bool = False
    # The run's sandbox floor, as the worker builds it (drivers/runfloor.py) from the
    # settings, this workspace, runtime directory and run policy; None for no floor.
    floor: Any = "as the worker builds it"
    _cancel: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: Any = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self._worker_floor = self.floor == "as the worker builds it"
        self._build_floor()

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if name in ("workspace", "runtime_dir", "run_policy") and getattr(self, "_worker_floor", False):
            self._build_floor()  # a test moved the run elsewhere: so does its floor

    def _build_floor(self) -> None:
        if self._worker_floor:
            from drivers.runfloor import run_floor

            Path(self.runtime_dir).mkdir(parents=True, exist_ok=True)
            object.__setattr__(self, "floor", run_floor(workspace=self.workspace, runtime_dir=self.runtime_dir,
                                                        run_policy=self.run_policy))

    @property
    def resume_state(self) -> Mapping[str, Any]:
        return (self.agent_state if self.resuming else self.conversation) or {}

    async def gate(self, request: ToolRequest) -> GateAnswer:
        self.requests.append(request)
        decision = self.decide(request)
        if asyncio.iscoroutine(decision) or isinstance(decision, asyncio.Future):
            decision = await decision
        decision = decision.replace(step_id=next(self._ids))
        self.decisions.append(decision)
        return decision

    async def step_finished(self, step_id: int, *, output: str = "", exit_code: int | None = None, error: str = "") -> None:
        self.finished[step_id] = {"output": output, "exit_code": exit_code, "error": error}

    async def emit(self, kind: str, payload: Mapping[str, Any]) -> None:
        self.activities.append((kind, dict(payload)))

    async def save_agent_state(self, state: Mapping[str, Any]) -> None:
        self.agent_state = dict(state)

    async def resumed_conversation(self) -> None:
        self.conversation_resumed = True

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    async def wait_cancelled(self) -> None:
        await self._cancel.wait()

    def cancel(self) -> None:
        self._cancel.set()
