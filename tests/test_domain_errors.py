"""An app's refusal reaches API clients through one base (infra.errors.DomainError): the
API's exception handler and the idempotency layer know the base, not the apps."""

from __future__ import annotations

from http import HTTPStatus

from approvals.errors import ApprovalError
from infra.errors import DomainError
from integrations.idempotency import _is_domain_error
from project.api import exception_handler
from runs.errors import RunError


class _ParcelError(DomainError):
    """A refusal of an app the API has never heard of."""

    STATUS = {"lost": 410}


def test_a_refusal_of_any_app_is_answered_with_its_code_status_and_fields() -> None:
    response = exception_handler(_ParcelError("lost", "The parcel is gone.", field="parcel"), {})
    assert response is not None
    assert response.status_code == HTTPStatus.GONE
    assert response.data == {"code": "lost", "message": "The parcel is gone.", "field": "parcel"}


def test_a_code_without_a_status_of_its_own_is_a_bad_request() -> None:
    response = exception_handler(_ParcelError("odd", "Odd."), {})
    assert response is not None and response.status_code == HTTPStatus.BAD_REQUEST


def test_the_runs_and_the_decisions_refusals_keep_their_statuses_and_fields() -> None:
    run = exception_handler(RunError("workspace_agent_config", "no", field="workspace", files=["CLAUDE.md"]), {})
    assert run is not None and run.status_code == HTTPStatus.BAD_REQUEST
    assert run.data == {"code": "workspace_agent_config", "message": "no", "field": "workspace", "files": ["CLAUDE.md"]}
    decision = exception_handler(ApprovalError("already_resolved", "This request was already decided."), {})
    assert decision is not None and decision.status_code == HTTPStatus.CONFLICT
    assert decision.data == {"code": "already_resolved", "message": "This request was already decided."}


def test_idempotency_keeps_the_answer_to_a_refusal_of_any_app_and_not_to_a_crash() -> None:
    assert _is_domain_error(_ParcelError("lost", "gone"))
    assert not _is_domain_error(RuntimeError("boom"))
