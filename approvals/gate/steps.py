"""What an executed step did: recorded once, then the step is final."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from runs.events import Event, ToolFinished
from runs.leases import fence
from runs.models import Step
from runs.timeline import activity_record

from .lifecycle import StepMoveRefused, step_move

S = Step.Status


def bounded(text: str) -> str:
    """At most GATEHOUSE_OUTPUT_LIMIT characters of a step's output, saying what was cut."""
    limit = settings.GATEHOUSE_OUTPUT_LIMIT
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters not kept]"


def step_finish(
    *, run_id: int, step_id: int, output: str = "", exit_code: int | None = None, error: str = "", owner: str | None = None
) -> bool:
    """executing → finished, with its bounded output. Only an executing step of this run
    changes (a replayed or refused step, or a second report, changes nothing): False then."""
    with transaction.atomic():
        fence(run_id, owner)
        kept_output, kept_error = bounded(output), bounded(error)
        try:
            step_move(step_id, S.FINISHED, frm=S.EXECUTING, run_id=run_id, output=kept_output, exit_code=exit_code,
                      error=kept_error)
        except StepMoveRefused:
            return False  # not an executing step of this run (replayed, refused, reported twice)
        seq, tool = Step.objects.filter(pk=step_id).values_list("seq", "tool").get()
        finished: ToolFinished = {"step": seq, "tool": tool, "output": kept_output, "exit_code": exit_code, "error": kept_error}
        activity_record(run_id=run_id, kind="tool", event=Event.TOOL_FINISHED, payload=finished)
    return True
