"""The audit export: every decision of the runs a user may see, streamed as JSON lines or CSV,
filtered, and refused with the API's error body for a bad parameter."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.http import StreamingHttpResponse
from django.utils import timezone
from rest_framework.test import APIClient

from approvals.gate import gate_request
from approvals.gate.resolution import gate_resolution
from approvals.models import Approval
from approvals.services import approval_decide
from runs.models import Run, Step
from runs.services import run_create

pytestmark = pytest.mark.django_db

URL = "/api/v1/decisions/export"
ASKED = "git push origin main"  # asked under the default policy
SCENARIO = {"steps": [{"message": "hello"}]}


def client_for(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def body(response: Any) -> str:
    assert isinstance(response, StreamingHttpResponse)
    return b"".join(response.streaming_content).decode()


def jsonl(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body(response).splitlines()]


def ask(run: Run, command: str = ASKED) -> Approval:
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": command}, cwd=run.workspace,
                           presentation={"title": "Run a command", "command": command})
    assert outcome.outcome == "wait"
    return Approval.objects.get(pk=outcome.approval_id)


class World:
    def __init__(self, make_user: Callable[..., Any]) -> None:
        self.starter = make_user("starter", superuser=False, perms=("runs.add_run",))
        self.other = make_user("other", superuser=False, perms=("runs.add_run",))
        self.admin = make_user("admin")
        self.run = run_create(driver="scripted", prompt="mine", scenario=SCENARIO, user=self.starter)
        self.other_run = run_create(driver="scripted", prompt="theirs", scenario=SCENARIO, user=self.other)
        allowed = gate_request(run_id=self.run.pk, tool="bash", input={"command": "ls"}, cwd=self.run.workspace)
        assert allowed.outcome == "allow"
        self.approved = ask(self.run)
        approval_decide(approval_id=self.approved.pk, user=self.admin, approve=True, via="api", hash=self.approved.hash)
        gate_resolution(approval_id=self.approved.pk, retry_supported=False)  # what the run's worker does
        self.pending = ask(self.run, "git push origin release")
        self.denied = ask(self.other_run)
        approval_decide(approval_id=self.denied.pk, user=self.admin, approve=False, via="console", hash=self.denied.hash,
                        reason="not today")
        gate_resolution(approval_id=self.denied.pk, retry_supported=False)  # the default run policy: the agent is told no


@pytest.fixture
def world(make_user: Callable[..., Any]) -> World:
    return World(make_user)


def test_the_export_streams_json_lines_of_every_decision(world: World) -> None:
    response = client_for(world.admin).get(URL, {"format": "jsonl"})
    assert response.status_code == HTTPStatus.OK
    assert isinstance(response, StreamingHttpResponse)
    assert response["Content-Type"] == "application/x-ndjson"
    rows = jsonl(response)
    assert [(r["run"], r["request"]["input"]["command"]) for r in rows] == [
        (world.run.pk, "ls"), (world.run.pk, ASKED), (world.run.pk, "git push origin release"), (world.other_run.pk, ASKED),
    ]
    allowed, approved, pending, denied = rows
    assert allowed["verdict"] == "allow" and allowed["outcome"] == "allow" and allowed["decided_by"] == "policy"
    assert allowed["approval"] is None and allowed["hash"] is None and allowed["reviewer"] is None
    assert approved["verdict"] == "ask" and approved["rule"]
    assert approved["outcome"] == "allow" and approved["decided_by"] == "api"
    assert (approved["approval"], approved["hash"], approved["reviewer"]) == (world.approved.pk, world.approved.hash, "admin")
    assert approved["approval_status"] == "approved" and approved["decided_at"]
    assert pending["outcome"] == "pending" and pending["approval_status"] == "pending"
    assert denied["outcome"] == "deny" and denied["decided_by"] == "console"
    assert denied["denial_reason"] == "not today" and denied["approval_status"] == "denied"
    step = Step.objects.get(run=world.run, seq=approved["step"])
    assert approved["policy_version"] == step.policy_version == world.run.policy_version
    assert approved["policy"] == (world.run.policy.name if world.run.policy else None)
    assert approved["policy_version_number"] == (step.decided_under.number if step.decided_under else None)
    assert approved["side_effect_class"] == "remote-mutation"
    assert approved["session"] == world.run.session_id


def test_the_csv_export_has_a_header_and_one_line_per_decision(world: World) -> None:
    from approvals.audit import COLUMNS

    response = client_for(world.admin).get(URL, {"format": "csv"})
    assert response.status_code == HTTPStatus.OK
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="decisions.csv"' in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(body(response))))
    assert tuple(rows[0]) == COLUMNS
    records = [dict(zip(COLUMNS, r, strict=True)) for r in rows[1:]]
    assert len(records) == 4
    approved = records[1]
    assert json.loads(approved["request"])["input"]["command"] == ASKED
    assert approved["hash"] == world.approved.hash and approved["reviewer"] == "admin"
    assert records[0]["approval"] == ""  # decided by the policy: no approval


def test_a_csv_cell_a_spreadsheet_would_run_as_a_formula_is_written_as_text() -> None:
    from approvals.audit import _cell

    assert _cell("=HYPERLINK(\"http://evil\")") == "'=HYPERLINK(\"http://evil\")"
    assert _cell("-rf") == "'-rf"
    assert _cell("git push") == "git push"
    assert _cell(None) == ""


def test_a_user_exports_only_the_decisions_of_runs_they_may_see(world: World) -> None:
    mine = jsonl(client_for(world.starter).get(URL))
    assert {r["run"] for r in mine} == {world.run.pk}
    theirs = jsonl(client_for(world.other).get(URL))
    assert {r["run"] for r in theirs} == {world.other_run.pk}
    reviewer = world.other.__class__.objects.create_user(username="nobody")
    assert jsonl(client_for(reviewer).get(URL)) == []


def test_an_anonymous_export_is_refused(world: World) -> None:
    response = APIClient().get(URL)
    assert response.status_code == HTTPStatus.UNAUTHORIZED
    assert response.json()["code"] == "not_authenticated"


@pytest.mark.parametrize(("params", "runs_seen", "count"), [
    ({"outcome": "allow"}, "mine", 2),
    ({"outcome": "pending"}, "mine", 1),
    ({"outcome": "deny"}, "theirs", 1),
    ({"outcome": "abort"}, "none", 0),
    ({"reviewer": "admin"}, "both", 2),
    ({"reviewer": "someone-else"}, "none", 0),
])
def test_the_export_filters_by_outcome_and_reviewer(world: World, params: dict[str, str], runs_seen: str, count: int) -> None:
    rows = jsonl(client_for(world.admin).get(URL, params))
    assert len(rows) == count
    expected = {"mine": {world.run.pk}, "theirs": {world.other_run.pk}, "both": {world.run.pk, world.other_run.pk}, "none": set()}[runs_seen]
    assert {r["run"] for r in rows} == expected


def test_the_export_filters_by_run_session_and_policy(world: World) -> None:
    admin = client_for(world.admin)
    assert {r["run"] for r in jsonl(admin.get(URL, {"run": world.other_run.pk}))} == {world.other_run.pk}
    assert {r["run"] for r in jsonl(admin.get(URL, {"session": world.run.session_id}))} == {world.run.pk}
    assert world.run.policy_id is not None
    assert len(jsonl(admin.get(URL, {"policy": world.run.policy_id}))) == 4  # both runs ran under the default
    assert jsonl(admin.get(URL, {"policy": world.run.policy_id + 1000})) == []


def test_the_export_filters_by_time(world: World) -> None:
    admin = client_for(world.admin)
    now = timezone.now()
    later = (now + timedelta(hours=1)).isoformat()
    earlier = (now - timedelta(hours=1)).isoformat()
    assert len(jsonl(admin.get(URL, {"from": earlier, "to": later}))) == 4
    assert jsonl(admin.get(URL, {"from": later})) == []
    assert jsonl(admin.get(URL, {"to": earlier})) == []
    today = now.date().isoformat()
    assert len(jsonl(admin.get(URL, {"from": today, "to": today}))) == 4  # a date as `to`: up to its end
    first = Step.objects.order_by("id").first()
    assert first is not None
    Step.objects.filter(pk=first.pk).update(created_at=now - timedelta(days=3))
    assert len(jsonl(admin.get(URL, {"from": (now - timedelta(days=1)).date().isoformat()}))) == 3


@pytest.mark.parametrize(("params", "field"), [
    ({"from": "yesterday"}, "from"),
    ({"to": "2026-13-01"}, "to"),
    ({"from": "2026-02-30"}, "from"),
    ({"from": "2026-12-03", "to": "2026-12-01"}, "from"),
    ({"format": "xml"}, "format"),
    ({"outcome": "maybe"}, "outcome"),
    ({"run": "abc"}, "run"),
])
def test_a_bad_parameter_is_refused_400_naming_it(world: World, params: dict[str, str], field: str) -> None:
    response = client_for(world.admin).get(URL, params, HTTP_ACCEPT="text/csv")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response["Content-Type"] == "application/json"
    error = response.json()
    assert error["code"] == "invalid" and error["field"] == field
    assert error["message"].startswith(f"{field}:")


def test_the_export_is_in_the_openapi_schema(world: World) -> None:
    schema = client_for(world.admin).get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/v1/decisions/export"]["get"]
    assert {"application/x-ndjson", "text/csv"} <= set(operation["responses"]["200"]["content"])
    assert {p["name"] for p in operation["parameters"]} >= {"format", "from", "to", "run", "session", "policy", "reviewer",
                                                             "outcome"}


def test_the_exports_queries_do_not_grow_with_its_rows(world: World) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    admin = client_for(world.admin)

    def queries() -> int:
        with CaptureQueriesContext(connection) as seen:
            body(admin.get(URL, {"format": "csv"}))
        return len(seen.captured_queries)

    before = queries()
    for _ in range(5):
        ask(world.run, "git push origin feature")
    assert queries() == before


def test_under_asgi_the_export_streams_from_an_async_iterator(world: World) -> None:
    """Under Daphne a sync iterator would be read whole before the first byte is sent."""
    from django.test import AsyncRequestFactory

    from approvals.api import DecisionExportApi

    request = AsyncRequestFactory().get(URL, {"format": "jsonl"})
    request.user = world.admin
    response = DecisionExportApi.as_view()(request)
    assert isinstance(response, StreamingHttpResponse) and response.is_async
    from asgiref.sync import async_to_sync

    async def read() -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    rows = [json.loads(line) for line in async_to_sync(read)().decode().splitlines()]
    assert len(rows) == 4
