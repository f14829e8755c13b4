"""The gate: every tool request is recorded, decided and answered here.

- `request`: record a request and decide it (policy, grants, runtime mode, routing).
- `resolution`: turn a resolved approval into the driver's answer (fallbacks, retries).
- `resume`: the resume contract (answer replayed requests from the record).
- `lifecycle`: the step states and their allowed moves; `handout`: the last move of a decision.
- `external`: the rule policy's external decision point, asked about each permission request.
- `steps`: what an executed step did. `status`: a run is `waiting` while anything is pending.

Every write a worker makes here names its lease owner and is fenced (`runs.leases`).
"""

from .external import external_ask, external_point_of
from .lifecycle import ALLOWED_MOVES, OPEN, TERMINAL, StepMoveRefused, can_move, step_move
from .request import RUN_UNREAD, external_question, gate_request, gate_request_in
from .resolution import gate_resolution, recheck_after_interruption
from .resume import RecordedStep, answer_from_record, gate_replay, match_key, recorded_steps, steps_supersede
from .status import run_status_sync
from .steps import step_finish

__all__ = [
    "RUN_UNREAD",
    "ALLOWED_MOVES",
    "OPEN",
    "TERMINAL",
    "RecordedStep",
    "StepMoveRefused",
    "answer_from_record",
    "can_move",
    "external_ask",
    "external_point_of",
    "external_question",
    "gate_replay",
    "gate_request",
    "gate_request_in",
    "gate_resolution",
    "match_key",
    "recheck_after_interruption",
    "recorded_steps",
    "run_status_sync",
    "step_finish",
    "step_move",
    "steps_supersede",
]
