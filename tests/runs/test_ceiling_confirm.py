"""The presets' friction (issue 32.2) under the ceiling: Standard review and Sandboxed make
destructive approvals take a second reviewer. A run policy that does not name the class
keeps it; naming it weaker is a loosening (403 without the override permission); a policy
without its own `confirm` still has the default policy's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from approvals.models import Policy
from runs.errors import RunError
from runs.services import run_create

pytestmark = pytest.mark.django_db

SCENARIO = {"steps": [{"message": "hi"}]}
SECOND = {"destructive": "second-reviewer"}


@pytest.fixture
def starter(make_user: Callable[..., Any]) -> Any:
    return make_user("bob", superuser=False, perms=("runs.add_run",))


def test_a_run_under_the_default_preset_takes_a_second_reviewer_for_destructive_requests(starter: Any) -> None:
    assert run_create(driver="scripted", scenario=SCENARIO, user=starter).run_policy["approvals"]["confirm"] == SECOND


def test_a_run_policy_that_does_not_name_the_class_keeps_it_and_may_add_more(starter: Any) -> None:
    run = run_create(driver="scripted", scenario=SCENARIO, user=starter,
                     run_policy={"sandbox": "read-only", "approvals": {"confirm": {"remote-mutation": "typed"}}})
    assert run.run_policy["approvals"]["confirm"] == {**SECOND, "remote-mutation": "typed"}
    assert run.run_policy["sandbox"] == "read-only"


def test_naming_it_weaker_is_a_loosening(starter: Any, make_user: Callable[..., Any]) -> None:
    with pytest.raises(RunError) as refused:
        run_create(driver="scripted", scenario=SCENARIO, user=starter,
                   run_policy={"approvals": {"confirm": {"destructive": "typed"}}})
    assert refused.value.code == "policy_override_forbidden" and "approvals.confirm" in refused.value.fields["fields"]
    assert "destructive: typed instead of second-reviewer" in refused.value.message
    olga = make_user("olga", superuser=False, perms=("runs.add_run", "runs.override_policy"))
    run = run_create(driver="scripted", scenario=SCENARIO, user=olga, run_policy={"approvals": {"confirm": {"destructive": "none"}}})
    assert "confirm" not in run.run_policy["approvals"]


def test_a_policy_without_its_own_confirm_has_the_default_policy_s(starter: Any) -> None:
    from approvals.selectors import policy_for_run
    from approvals.services import policy_save

    policy_save(policy=Policy(name="no pushes", document={**policy_for_run("")[1], "commands": {"deny": ["git push"]}}))
    run = run_create(driver="scripted", scenario=SCENARIO, user=starter, policy_name="no pushes")
    assert run.run_policy["approvals"]["confirm"] == SECOND
    policy_save(policy=Policy(name="no friction", document=policy_for_run("")[1],
                              run_policy={"approvals": {"confirm": {"destructive": "none"}}}))
    with pytest.raises(RunError) as refused:
        run_create(driver="scripted", scenario=SCENARIO, user=starter, policy_name="no friction")
    assert any("approvals.confirm" in why for why in refused.value.fields["loosenings"])
