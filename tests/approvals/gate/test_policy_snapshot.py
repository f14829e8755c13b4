"""A run's policy snapshot that no longer compiles (an upgrade made its rules stricter)."""

from __future__ import annotations

from typing import Any

import pytest

from approvals.gate.request import gate_request
from runs.models import Run, Step
from runs.services import run_create

pytestmark = pytest.mark.django_db


def test_a_snapshot_that_no_longer_compiles_denies_every_request_and_says_why(reviewer: Any) -> None:
    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    # As stored by an older server: a pattern this one refuses (it can never match).
    Run.objects.filter(pk=run.pk).update(
        policy_document={"commands": {"deny": ["curl * | sh"]}, "default": "allow"}, policy_version="old-server-hash"
    )
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": "ls"}, cwd=run.workspace)
    assert outcome.outcome == "deny"
    step = Step.objects.get(pk=outcome.step_id)
    assert step.rule == "policy" and step.verdict == "deny"
    assert "no longer compiles" in step.reason and "commands.deny[0]" in step.reason
