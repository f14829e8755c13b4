"""The step lifecycle: one table of allowed moves, each move a compare-and-set.

    requested ─▶ waiting ─▶ allowed ─▶ executing ─▶ finished
        │           │          │           │
        │           ├─▶ answered (questions, plans: the answers are on the step)
        ├───────────┴─▶ denied / aborted
        └─▶ allowed / answered / denied / aborted (decided at once, no person)

A step is recorded `requested` and decided in the same transaction (a request decided at
once, or sent to a person, is inserted where those moves leave it: `step_record`). `allowed` is the
decision; `executing` starts when the gate hands that decision to the driver (same
transaction), so a worker that dies after it leaves a step that *may* have run: on resume
it is asked again as an interrupted side effect (`executing → waiting`), never re-run
silently. `finished` is final: a finished step is never executed again, whatever the
driver. Only these moves exist; anything else is refused (`StepMoveRefused`).
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from runs.models import Step

S = Step.Status

ALLOWED_MOVES: dict[str, frozenset[str]] = {
    S.REQUESTED: frozenset({S.WAITING, S.ALLOWED, S.DENIED, S.ABORTED, S.ANSWERED}),
    S.WAITING: frozenset({S.ALLOWED, S.DENIED, S.ABORTED, S.ANSWERED}),
    S.ALLOWED: frozenset({S.EXECUTING, S.ABORTED}),
    # Back to waiting when a worker died while it ran (the interrupted side effect is asked);
    # aborted when, after such a restart, the agent went another way.
    S.EXECUTING: frozenset({S.FINISHED, S.WAITING, S.ABORTED}),
    S.FINISHED: frozenset(),
    S.DENIED: frozenset(),
    S.ABORTED: frozenset(),
    S.ANSWERED: frozenset(),
}

TERMINAL = frozenset(state for state, moves in ALLOWED_MOVES.items() if not moves)
# Steps a resumed run may still have to answer: nothing final was recorded for them.
OPEN = frozenset(ALLOWED_MOVES) - TERMINAL


class StepMoveRefused(Exception):
    """A move the table does not allow, or a step that is no longer where the caller thought."""

    def __init__(self, step_id: int, to: str, found: str | None) -> None:
        super().__init__(f"step {step_id}: cannot move to {to} from {found or 'nowhere (no such step)'}")
        self.step_id = step_id
        self.to = to
        self.found = found


def can_move(frm: str, to: str) -> bool:
    return to in ALLOWED_MOVES.get(frm, frozenset())


def _check_path(step_id: int, path: tuple[str, ...]) -> None:
    if not path:
        raise ValueError("a step move needs at least one state")
    for a, b in zip(path, path[1:], strict=False):
        if not can_move(a, b):
            raise StepMoveRefused(step_id, b, a)


def _stamp(path: tuple[str, ...], fields: dict[str, Any]) -> None:
    """Lifecycle timestamps, set once: started when it executes, finished when final."""
    if S.EXECUTING in path:
        fields.setdefault("started_at", timezone.now())
    if path[-1] in TERMINAL:
        fields.setdefault("finished_at", timezone.now())


def step_record(*path: str, **fields: Any) -> Step:
    """Insert a new step where `requested` → `path` leaves it (one INSERT, no UPDATE after):
    the same moves as `step_move`, checked against the same table, for a request that is
    decided (or sent to a person) in the transaction that records it."""
    _check_path(0, (S.REQUESTED, *path))
    _stamp(path, fields)
    return Step.objects.create(status=path[-1], **fields)


def step_move(
    step_id: int, *path: str, frm: str | frozenset[str] | None = None, run_id: int | None = None, **fields: Any
) -> None:
    """Move a step along `path` (one or more states, each move in the table) by one
    compare-and-set: `step_move(id, ALLOWED, EXECUTING)` records the decision and its
    hand-out at once.

    `frm` narrows where it may start (default: every state the table lets reach the first
    state of `path`). Raises `StepMoveRefused` when no row changed: the step is elsewhere.
    Lifecycle timestamps are set here, once.
    """
    _check_path(step_id, path)
    allowed_from = {s for s, moves in ALLOWED_MOVES.items() if path[0] in moves}
    if frm is not None:
        allowed_from &= {frm} if isinstance(frm, str) else set(frm)
    _stamp(path, fields)
    rows = Step.objects.filter(pk=step_id, status__in=allowed_from)
    if run_id is not None:
        rows = rows.filter(run_id=run_id)  # a step of this run only
    changed = rows.update(status=path[-1], **fields)
    if changed != 1:
        found = Step.objects.filter(pk=step_id).values_list("status", flat=True).first()
        raise StepMoveRefused(step_id, path[0], found)
