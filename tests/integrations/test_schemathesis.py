"""A bounded schemathesis run over the OpenAPI schema: every operation, authenticated with a
full-scope token, with the schema's own examples and generated ones. No answer is a 5xx,
and every answer matches its documented status, content type and body schema (the one
error shape included), for well-formed and malformed ids alike.

Bounded: GATEHOUSE_SCHEMATHESIS_EXAMPLES examples per operation (default 15), derandomised,
so a failure here is a bug, not bad luck.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.django_db

EXAMPLES = int(os.environ.get("GATEHOUSE_SCHEMATHESIS_EXAMPLES", "15"))


def _load_schema() -> Any:
    from django.core.wsgi import get_wsgi_application

    # The schema view reads no rows: loading it at collection needs no database.
    return schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application())


@pytest.fixture(autouse=True)
def _quick_waits_and_kept_connection(settings: Any) -> Any:
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    # A hook call that asks, a stream that follows: both end quickly here.
    settings.GATEHOUSE_HOOK_WAIT_S = 0.2
    settings.GATEHOUSE_SSE_MAX_S = 0.3
    settings.GATEHOUSE_SSE_POLL_S = 0.1
    settings.GATEHOUSE_API_RATE = ""
    # As Django's test client does: a request must not close the test's connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


schema = _load_schema()


@pytest.fixture
def auth_header(make_user: Any) -> dict[str, str]:
    from integrations.tokens import token_create

    user = make_user("fuzzer")
    return {"Authorization": f"Token {token_create(user=user)[1]}"}


@pytest.fixture
def seeded(db: Any, make_user: Any) -> None:
    """Rows for the ids 1..3 the generator often picks: a run with a pending approval."""
    from approvals.gate import gate_request
    from approvals.models import Policy
    from approvals.services import policy_save
    from runs.services import run_create

    policy_save(policy=Policy(name="fuzz", document={"default": "ask"}))
    for _ in range(2):
        run = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, run_policy={"approvals": {"timeout_s": -1}})
        gate_request(run_id=run.pk, tool="bash", input={"command": """awk 'BEGIN { print "hi" > "f" }'"""}, cwd=run.workspace, subtype="command")


# Derandomised, no example database: a failure is a bug, not bad luck.
bounded = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)


@schema.parametrize()
@bounded
def test_the_api_answers_as_documented(case: Any, auth_header: dict[str, str], seeded: None) -> None:
    response = case.call(headers=auth_header)
    case.validate_response(
        response,
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )


# The hook gateway reads the token on its own database threads: with the token committed
# (a transactional test), generated hook inputs reach the gateway instead of a 401.
@pytest.mark.django_db(transaction=True)
@schema.include(path_regex="^/api/v1/hooks/").parametrize()
@bounded
def test_the_hook_gateway_answers_as_documented(case: Any, auth_header: dict[str, str]) -> None:
    response = case.call(headers=auth_header)
    case.validate_response(
        response,
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )
    if response.request.headers.get("Authorization") == auth_header["Authorization"]:
        assert response.status_code != 401, response.text  # the token is seen: the input reached the gateway
