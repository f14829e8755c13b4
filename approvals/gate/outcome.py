"""What the gate tells the worker for one request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

# "wait": a person must decide; the worker waits on `approval_id` and asks again.
Outcome = Literal["allow", "deny", "abort", "answer", "wait"]


@dataclass(frozen=True)
class GateOutcome:
    """The driver's answer for one step, or `wait` on an approval."""

    step_id: int
    outcome: Outcome
    reason: str = ""
    decided_by: str = "policy"
    approval_id: int | None = None
    answers: Mapping[str, Any] | None = None
    plan_mode: str = ""
    scope: str = "once"
    timed_out: bool = False
    # A replayed step that already ran: outcome "deny", the agent is told it ran.
    already_done: bool = False
    recorded_output: str = ""
    # An allowed permission a reviewer edited (issue 32.3): the input to run instead.
    updated_input: Mapping[str, Any] | None = None
