"""Rules learned from approvals (issue 32, item 1) over the real record: the API's
suggestions, the console's insights page, and "Make this a rule" opening the policy's
admin page with the rule filled in. Requests are made and decided by the real services."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from approvals.gate import gate_request
from approvals.models import Approval, Policy
from approvals.services import approval_decide, policy_save
from runs.services import run_create

pytestmark = pytest.mark.django_db

DOCUMENT = {"commands": {"deny": ["rm -rf"]},
            "classes": {"read-only": "ask", "local-mutation": "ask", "remote-mutation": "ask", "destructive": "deny"},
            "default": "ask"}


@pytest.fixture
def policy() -> Policy:
    return policy_save(policy=Policy(name="learning", document=DOCUMENT))


def asked(policy: Policy, command: str) -> Approval:
    run = run_create(driver="scripted", prompt="insights", scenario={"steps": [{"message": "hi"}]}, policy_name=policy.name)
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": command}, cwd=run.workspace,
                           presentation={"title": "Run a command", "command": command})
    assert outcome.outcome == "wait", outcome
    return Approval.objects.get(pk=outcome.approval_id)


def decided(policy: Policy, command: str, reviewer: Any, n: int, *, approve: bool = True) -> None:
    for _ in range(n):
        approval = asked(policy, command)
        approval_decide(approval_id=approval.pk, user=reviewer, approve=approve, hash=approval.hash, via="console",
                        reason="" if approve else "no")


def api(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_command_approved_ten_times_is_suggested_with_what_it_would_have_allowed(policy: Policy, make_user: Callable[..., Any]) -> None:
    reviewer = make_user("rita")
    decided(policy, "pytest -q", reviewer, 10)
    decided(policy, "make build", reviewer, 10)
    decided(policy, "make build", reviewer, 1, approve=False)  # one denial: never suggested
    decided(policy, "git push origin main", reviewer, 12)  # a remote mutation: never suggested
    response = api(reviewer).get(f"/api/v1/insights/suggestions/?policy={policy.pk}")
    assert response.status_code == HTTPStatus.OK, response.content
    [suggestion] = response.json()
    assert {k: suggestion[k] for k in ("section", "rule", "approved", "denied", "reviewers")} == {
        "section": "commands", "rule": "pytest", "approved": 10, "denied": 0, "reviewers": 1}
    assert suggestion["would_allow"] == 10  # the ten `pytest -q` asked about, on the recorded history
    assert api(reviewer).get(f"/api/v1/insights/suggestions/?policy={policy.pk}&threshold=11").json() == []


def test_suggestions_need_the_permission_to_change_policies_and_a_policy(policy: Policy, make_user: Callable[..., Any]) -> None:
    starter = make_user("sam", superuser=False, perms=("runs.add_run",))
    assert api(starter).get(f"/api/v1/insights/suggestions/?policy={policy.pk}").status_code == HTTPStatus.FORBIDDEN
    admin = make_user("ada")
    assert api(admin).get("/api/v1/insights/suggestions/").status_code == HTTPStatus.BAD_REQUEST
    bad = api(admin).get(f"/api/v1/insights/suggestions/?policy={policy.pk}&days=0")
    assert bad.status_code == HTTPStatus.BAD_REQUEST and "days must be from 1 to 366" in bad.content.decode()
    assert api(admin).get("/api/v1/insights/suggestions/?policy=999999").status_code == HTTPStatus.NOT_FOUND


def test_the_insights_page_offers_make_this_a_rule_which_fills_in_the_policy(policy: Policy, make_user: Callable[..., Any]) -> None:
    reviewer = make_user("rita")
    decided(policy, "pytest -q", reviewer, 10)
    client = Client()
    client.force_login(reviewer)
    page = client.get(f"/insights/?policy={policy.pk}")
    assert page.status_code == HTTPStatus.OK
    html = page.content.decode()
    assert "<code>pytest</code>" in html and "10 of the last" in html
    link = f"/admin/approvals/policy/{policy.pk}/change/?add_rule=commands:pytest"
    assert link in html
    admin_page = client.get(link).content.decode()
    assert "is added to the document below, not saved" in admin_page
    assert "&quot;pytest&quot;" in admin_page  # in the document's text area
    assert "Rule learned from approvals" in admin_page
    policy.refresh_from_db()
    assert "allow" not in policy.document["commands"]  # nothing saved until the administrator saves


def test_the_insights_page_is_for_people_who_may_change_policies(make_user: Callable[..., Any]) -> None:
    client = Client()
    client.force_login(make_user("sam", superuser=False, perms=("runs.add_run",)))
    assert client.get("/insights/").status_code == HTTPStatus.FORBIDDEN
