"""Errors shared by the gate, the decision services and the API."""

from __future__ import annotations

from infra.errors import DomainError


class ApprovalError(DomainError):
    """A refused decision. `code` is stable; `status` is the HTTP status the API answers."""

    STATUS = {
        "already_resolved": 409,
        "stale": 409,
        "expired": 410,
        "kind_mismatch": 400,
        "invalid_decision": 400,
        "unavailable": 404,
        "own_run": 403,
        "forbidden": 403,
        "hash_required": 400,
        "confirmation_required": 400,
        "second_reviewer_required": 409,
        "batch_not_allowed": 409,
        "grant_not_allowed": 409,
        # Edit before approve (issue 32.3).
        "edit_unsupported": 409,
        "edit_not_allowed": 409,
        "invalid_edit": 400,
        "edit_denied": 400,
    }

    def __init__(self, code: str, message: str, **fields: object) -> None:  # (a decision's refusal names no field)
        super().__init__(code, message, **fields)


# Every decision names the request it decides: the approval's hash, as shown (API and console).
HASH_REQUIRED = "Send the approval's hash with every decision (GET the approval to read it)."
