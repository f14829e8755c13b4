"""A policy tried before it is live (issue 10): shadow verdicts recorded on every step and
compared, the dry run on a prepared history, the driver warnings, and the policies API."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from approvals.gate import gate_request
from approvals.models import Policy, PolicyVersion
from approvals.policy_replay import policy_dry_run, shadow_agreement
from approvals.policy_versions import policy_save
from approvals.policy_warnings import policy_warnings
from runs.models import Run, Step
from runs.services import run_create

pytestmark = pytest.mark.django_db

SCENARIO = {"steps": [{"message": "hi"}]}
LIVE = {"commands": {"allow": ["ls", "git status", "git push"], "ask": ["npm publish"]}, "default": "ask"}
STRICTER = {"commands": {"allow": ["ls", "git status"], "deny": ["git push"]}, "default": "ask"}


def command(run: Run, text: str) -> Step:
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": text}, cwd=run.workspace, subtype="command")
    return Step.objects.get(pk=outcome.step_id)


@pytest.fixture
def live() -> Policy:
    return policy_save(policy=Policy(name="live", document=LIVE))


# --- shadow -------------------------------------------------------------------------------------


def test_every_step_records_the_shadow_verdict_without_changing_the_decision(live: Policy) -> None:
    shadow = policy_save(policy=Policy(name="stricter", document=STRICTER))
    live.shadow_policy = shadow
    policy_save(policy=live)
    run = run_create(driver="scripted", scenario=SCENARIO, policy_name="live")
    assert run.shadow_version == PolicyVersion.objects.get(policy=shadow)

    pushed = command(run, "git push origin main")
    assert (pushed.verdict, pushed.status) == ("allow", "executing")  # the live policy decided
    assert (pushed.shadow_verdict, pushed.shadow_rule) == ("deny", "commands.deny[0]")
    assert pushed.shadow_version == run.shadow_version
    listed = command(run, "ls")
    assert (listed.verdict, listed.shadow_verdict) == ("allow", "allow")

    agreement = shadow_agreement(shadow=shadow)
    assert (agreement.compared, agreement.agreed, agreement.rate) == (2, 1, 0.5)
    assert agreement.pairs == {("allow", "deny"): 1}
    assert [s.pk for s in agreement.disagreements] == [pushed.pk]
    assert shadow_agreement(shadow=shadow, live=live).compared == 2


def test_a_run_without_a_shadow_records_none(live: Policy) -> None:
    run = run_create(driver="scripted", scenario=SCENARIO, policy_name="live")
    step = command(run, "ls")
    assert (run.shadow_version, step.shadow_verdict, step.shadow_version) == (None, "", None)


def test_the_shadow_is_evaluated_with_the_sessions_grants(live: Policy) -> None:
    from approvals.services import grant_create

    shadow = policy_save(policy=Policy(name="asks", document={"default": "ask"}))
    live.shadow_policy = shadow
    policy_save(policy=live)
    run = run_create(driver="scripted", scenario=SCENARIO, policy_name="live")
    grant_create(session_id=run.session_id, rule={"tool": "bash", "match": "git status"})
    step = command(run, "git status")
    assert (step.verdict, step.shadow_verdict, step.shadow_rule) == ("allow", "allow", "grant")


def _statements(run: Run, text: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        command(run, text)
    return len([q for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))])


def test_the_gate_costs_no_more_statements_per_allowed_step_under_a_shadow(live: Policy) -> None:
    plain = run_create(driver="scripted", scenario=SCENARIO, policy_name="live")
    command(plain, "ls")
    baseline = _statements(plain, "ls")
    # run, next seq, the step, the activity number, the activity, the hand-out move (+ the
    # test's read of the step): what an allowed step cost before versions and shadows.
    assert baseline <= 7

    live.shadow_policy = policy_save(policy=Policy(name="stricter", document=STRICTER))
    policy_save(policy=live)
    shadowed = run_create(driver="scripted", scenario=SCENARIO, policy_name="live")
    command(shadowed, "ls")  # the shadow's version is read and compiled once per process
    assert _statements(shadowed, "ls") == baseline


# --- dry run ------------------------------------------------------------------------------------


@pytest.fixture
def history(live: Policy) -> dict[str, Step]:
    """Two runs under `live`: allowed, asked and (by a grant) allowed requests."""
    from approvals.services import grant_create

    first = run_create(driver="scripted", scenario=SCENARIO, policy_name="live")
    second = run_create(driver="scripted", scenario=SCENARIO, policy_name="live")
    steps = {
        "ls": command(first, "ls"),
        "push": command(first, "git push origin main"),
        "publish": command(second, "npm publish"),
        "make": command(second, "make build"),
    }
    grant_create(session_id=second.session_id, rule={"tool": "bash", "match": "make build"})
    steps["granted"] = command(second, "make build")
    other = policy_save(policy=Policy(name="other", document={"default": "allow"}))
    command(run_create(driver="scripted", scenario=SCENARIO, policy_name=other.name), "git push origin main")
    return steps


def test_a_dry_run_counts_what_the_draft_would_decide_differently(live: Policy, history: dict[str, Step]) -> None:
    draft = {"commands": {"allow": ["ls", "npm publish"], "deny": ["git push"]}, "default": "ask"}
    result = policy_dry_run(document=draft, policy=live)
    assert (result.compared, result.scope) == (5, "policy")  # the other policy's step is not replayed
    changed = {(c.step, c.was, c.now, c.rule) for c in result.changed}
    assert changed == {
        (history["push"].pk, "allow", "deny", "commands.deny[0]"),
        (history["publish"].pk, "ask", "allow", "commands.allow[1]"),
    }
    assert result.counts == {"allow": 1, "deny": 1, "ask": 0, "abort": 0}
    # The step a grant allowed is replayed with that grant: still allowed, not a change.
    assert history["granted"].pk not in {c.step for c in result.changed}
    assert [c.step for c in result.changed] == sorted((c.step for c in result.changed), reverse=True)


def test_a_dry_run_honours_the_limit_and_the_runs_counts(live: Policy, history: dict[str, Step]) -> None:
    assert policy_dry_run(document=LIVE, policy=live).changed == []
    assert policy_dry_run(document=LIVE, policy=live, limit=2).compared == 2
    limited = policy_dry_run(document={**LIVE, "limits": {"max_tool_calls": 1}}, policy=live)
    # Every run's second request onwards crosses the limit: abort.
    assert {c.step for c in limited.changed} == {history["push"].pk, history["make"].pk, history["granted"].pk}
    assert limited.counts["abort"] == 3


def test_a_policy_that_decided_nothing_is_replayed_on_every_policys_history(history: dict[str, Step]) -> None:
    fresh = policy_save(policy=Policy(name="fresh", document={"default": "deny"}))
    result = policy_dry_run(document=fresh.document, policy=fresh)
    assert (result.compared, result.scope) == (6, "all")
    assert result.counts["deny"] == 6


def test_the_dry_run_api_answers_in_the_issues_shape(api: APIClient, live: Policy, history: dict[str, Step]) -> None:
    draft = {"commands": {"allow": ["ls"], "deny": ["git push"]}, "default": "ask"}
    response = api.post(f"/api/v1/policies/{live.pk}/dry-run/", {"document": draft, "limit": 500}, format="json")
    assert response.status_code == HTTPStatus.OK, response.content
    body = response.json()
    assert set(body) == {"compared", "changed", "counts"} and body["compared"] == 5
    assert body["counts"] == {"allow": 0, "deny": 1, "ask": 0, "abort": 0}
    (change,) = body["changed"]
    assert change == {"step": history["push"].pk, "request": history["push"].request, "was": "allow", "now": "deny",
                      "rule": "commands.deny[0]"}


def test_the_dry_run_api_refuses_a_bad_draft_and_people_who_may_not_change_policies(
    api: APIClient, live: Policy, make_user: Callable[..., Any]
) -> None:
    url = f"/api/v1/policies/{live.pk}/dry-run/"
    bad = api.post(url, {"document": {"commands": {"deny": [""]}}}, format="json")
    assert bad.status_code == HTTPStatus.BAD_REQUEST
    assert bad.json()["code"] == "invalid_policy" and "deny[0]" in bad.json()["message"]
    assert api.post(url, {"document": LIVE, "limit": 0}, format="json").json()["field"] == "limit"
    assert api.post(url, {"document": LIVE, "extra": 1}, format="json").json()["field"] == "extra"
    viewer = APIClient()
    viewer.force_authenticate(make_user("victor", superuser=False))
    refused = viewer.post(url, {"document": LIVE}, format="json")
    assert refused.status_code == HTTPStatus.FORBIDDEN
    assert api.post("/api/v1/policies/999999/dry-run/", {"document": LIVE}, format="json").status_code == HTTPStatus.NOT_FOUND


# --- warnings -----------------------------------------------------------------------------------


def _by_driver(document: dict[str, Any], run_policy: Any = None) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for warning in policy_warnings(document=document, run_policy=run_policy):
        if warning.field != "cannot_see":
            out.setdefault(warning.driver, set()).add(warning.field)
    return out


def test_read_rules_are_flagged_for_agents_that_do_not_report_reads() -> None:
    warned = _by_driver({"reads": {"deny": [".env*"]}, "edits": {"deny": ["secrets/**"]}})
    assert warned == {"codex": {"reads"}, "codex-hook": {"reads", "edits"}}


def test_run_policy_values_a_driver_cannot_honour_are_flagged() -> None:
    # (every driver models the sandbox now, the floor making it real: the browser is not)
    warned = _by_driver({}, {"browser": "deny", "approvals": {"plan_review": "ask", "on_reject": "retry"}})
    assert "run_policy.browser" in warned["codex"] and "run_policy.browser" not in warned.get("claude-code", set())
    assert "run_policy.approvals.plan_review" in warned["codex"]
    assert "run_policy.approvals.on_reject" in warned["codex"] and "run_policy.approvals.on_reject" not in warned["scripted"]
    messages = [w.message for w in policy_warnings(document={}, run_policy={"browser": "deny"}) if w.driver == "codex"]
    assert any("refused" in m and "browser deny" in m for m in messages)


def test_what_an_agent_cannot_see_is_listed_per_driver() -> None:
    from drivers import registry

    seen = [w for w in policy_warnings(document={}, run_policy=None) if w.field == "cannot_see"]
    for name in registry.names():
        assert [w.message.removeprefix("cannot see: ") for w in seen if w.driver == name] == list(registry.descriptor(name).cannot_see)


# --- the policies API ---------------------------------------------------------------------------


def test_policies_are_listed_with_their_version_and_warnings(api: APIClient, live: Policy) -> None:
    live.document = {**LIVE, "reads": {"deny": [".env*"]}}
    policy_save(policy=live, comment="no secrets")
    body = api.get("/api/v1/policies/?limit=100").json()
    names = [p["name"] for p in body["results"]]
    assert "live" in names and "Standard review" in names
    detail = api.get(f"/api/v1/policies/{live.pk}/").json()
    assert {"id", "name", "is_default", "version", "document", "run_policy", "warnings"} <= set(detail)
    assert (detail["version"], detail["version_number"], detail["is_default"]) == (live.version, 2, False)
    assert [w["driver"] for w in detail["warnings"] if w["field"] == "reads"] == ["codex", "codex-hook"]

    versions = api.get(f"/api/v1/policies/{live.pk}/versions/").json()
    assert [(v["number"], v["comment"]) for v in versions["results"]] == [(2, "no secrets"), (1, "")]
    assert versions["results"][1]["document"] == LIVE
    assert api.get("/api/v1/policies/999999/").status_code == HTTPStatus.NOT_FOUND
    assert api.get("/api/v1/policies/999999/versions/").status_code == HTTPStatus.NOT_FOUND
