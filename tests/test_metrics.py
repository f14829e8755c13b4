"""/metrics: off without its token setting, refused without the token, and every figure
read from the rows the gate and the decisions wrote."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from approvals.gate import gate_request
from approvals.models import Approval
from approvals.services import approval_decide
from runs.models import Activity, Run
from runs.services import run_create
from runs.timeline import activity_record

pytestmark = pytest.mark.django_db

TOKEN = "metrics-token-0123456789"
ASKED = "git push origin main"  # asked under the default policy (remote mutation)
SCENARIO = {"steps": [{"message": "hello"}]}


def scrape(client: Client, token: str | None = TOKEN) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    return client.get("/metrics", **headers)


def samples(body: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def value(found: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def ask(run: Run, command: str = ASKED) -> Approval:
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": command}, cwd=run.workspace,
                           presentation={"title": "Run a command", "command": command})
    assert outcome.outcome == "wait"
    return Approval.objects.get(pk=outcome.approval_id)


@pytest.fixture
def run(make_user: Callable[..., Any]) -> Run:
    return run_create(driver="scripted", prompt="p", scenario=SCENARIO, user=make_user("starter"))


def test_metrics_are_off_without_the_token_setting(client: Client, settings: Any) -> None:
    settings.GATEHOUSE_METRICS_TOKEN = ""
    assert scrape(client).status_code == HTTPStatus.NOT_FOUND
    assert scrape(client, None).status_code == HTTPStatus.NOT_FOUND


@pytest.mark.parametrize("authorization", [None, f"Bearer {TOKEN}x", "Bearer ", f"Token {TOKEN}", TOKEN, f"Basic {TOKEN}"])
def test_a_missing_or_wrong_token_is_refused_401(client: Client, settings: Any, authorization: str | None) -> None:
    settings.GATEHOUSE_METRICS_TOKEN = TOKEN
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization is not None else {}
    response = client.get("/metrics", **headers)
    assert response.status_code == HTTPStatus.UNAUTHORIZED
    assert b"gatehouse_" not in response.content


def test_a_signed_in_console_session_is_not_a_metrics_token(client: Client, settings: Any, reviewer: Any) -> None:
    settings.GATEHOUSE_METRICS_TOKEN = TOKEN
    client.force_login(reviewer)
    assert client.get("/metrics").status_code == HTTPStatus.UNAUTHORIZED


def test_the_scrape_is_prometheus_text_with_every_family(client: Client, settings: Any) -> None:
    settings.GATEHOUSE_METRICS_TOKEN = TOKEN
    response = scrape(client)
    assert response.status_code == HTTPStatus.OK
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    body = response.content.decode()
    for family, kind in (("gatehouse_approvals_pending", "gauge"), ("gatehouse_approval_decision_seconds", "histogram"),
                         ("gatehouse_decisions_total", "counter"), ("gatehouse_approvals_resolved_total", "counter"),
                         ("gatehouse_runs", "gauge"), ("gatehouse_egress_connections_total", "counter")):
        assert f"# TYPE {family} {kind}\n" in body, family


def test_pending_approvals_are_counted_by_kind_and_class(client: Client, settings: Any, run: Run) -> None:
    settings.GATEHOUSE_METRICS_TOKEN = TOKEN
    for _ in range(3):
        ask(run)
    found = samples(scrape(client).content)
    assert value(found, "gatehouse_approvals_pending", kind="permission", side_effect_class="remote-mutation") == 3
    assert value(found, "gatehouse_runs", driver="scripted", status="queued") == 1  # no worker took it


def test_decisions_are_counted_by_outcome_and_who_decided(client: Client, settings: Any, run: Run, reviewer: Any) -> None:
    settings.GATEHOUSE_METRICS_TOKEN = TOKEN
    allowed = gate_request(run_id=run.pk, tool="bash", input={"command": "ls"}, cwd=run.workspace, presentation={})
    assert (allowed.outcome, allowed.decided_by) == ("allow", "policy")
    first, second = ask(run), ask(run)
    approval_decide(approval_id=first.pk, user=reviewer, approve=True, via="api", hash=first.hash)
    approval_decide(approval_id=second.pk, user=reviewer, approve=False, via="console", hash=second.hash, reason="no")
    found = samples(scrape(client).content)
    assert value(found, "gatehouse_approvals_pending", kind="permission", side_effect_class="remote-mutation") == 0
    assert value(found, "gatehouse_decisions_total", kind="permission", outcome="allow", decided_by="policy") == 1
    assert value(found, "gatehouse_approvals_resolved_total", kind="permission", status="approved", decided_via="api") == 1
    assert value(found, "gatehouse_approvals_resolved_total", kind="permission", status="denied", decided_via="console") == 1


def test_the_steps_a_person_decided_count_under_the_surface_they_decided_on(client: Client, settings: Any, run: Run,
                                                                           reviewer: Any) -> None:
    from approvals.gate.resolution import gate_resolution

    settings.GATEHOUSE_METRICS_TOKEN = TOKEN
    approval = ask(run)
    approval_decide(approval_id=approval.pk, user=reviewer, approve=True, via="api", hash=approval.hash)
    outcome = gate_resolution(approval_id=approval.pk, retry_supported=False)
    assert outcome.outcome == "allow"
    found = samples(scrape(client).content)
    assert value(found, "gatehouse_decisions_total", kind="permission", outcome="allow", decided_by="api") == 1


def test_time_to_decide_falls_in_its_bucket(client: Client, settings: Any, run: Run, reviewer: Any, clock: Any) -> None:
    settings.GATEHOUSE_METRICS_TOKEN = TOKEN
    approval = ask(run)
    clock.advance(40)
    approval_decide(approval_id=approval.pk, user=reviewer, approve=True, via="console", hash=approval.hash)
    found = samples(scrape(client).content)
    labels = {"kind": "permission", "decided_via": "console"}
    assert value(found, "gatehouse_approval_decision_seconds_bucket", le="30.0", **labels) == 0
    assert value(found, "gatehouse_approval_decision_seconds_bucket", le="60.0", **labels) == 1
    assert value(found, "gatehouse_approval_decision_seconds_bucket", le="+Inf", **labels) == 1
    assert value(found, "gatehouse_approval_decision_seconds_count", **labels) == 1
    assert 40 <= value(found, "gatehouse_approval_decision_seconds_sum", **labels) < 60


def test_egress_refusals_and_asked_connections_are_counted(client: Client, settings: Any, run: Run, reviewer: Any) -> None:
    settings.GATEHOUSE_METRICS_TOKEN = TOKEN
    activity_record(run_id=run.pk, kind=Activity.Kind.NOTICE, event="notice",
                    payload={"warning": "network_refused", "host": "evil.example", "port": 443, "text": "refused"})
    outcome = gate_request(run_id=run.pk, tool="network", input={"host": "unlisted.example", "port": 443, "addresses": []},
                           cwd=run.workspace, subtype="network", presentation={"title": "Connect to unlisted.example:443"})
    assert outcome.outcome == "wait"
    approval = Approval.objects.get(pk=outcome.approval_id)
    approval_decide(approval_id=approval.pk, user=reviewer, approve=False, via="console", hash=approval.hash)
    from approvals.gate.resolution import gate_resolution

    gate_resolution(approval_id=approval.pk, retry_supported=False)
    found = samples(scrape(client).content)
    assert value(found, "gatehouse_egress_connections_total", outcome="refused", decided_by="policy") == 1
    assert value(found, "gatehouse_egress_connections_total", outcome="asked_refused", decided_by="console") == 1
