"""Errors of the runs' writes, shared by the services, the drivers registry and the API."""

from __future__ import annotations

from infra.errors import DomainError


class RunError(DomainError):
    """A refused write on a run; `code` is stable for API clients, `status` its HTTP status."""

    STATUS = {"not_found": 404, "already_finished": 409, "policy_override_forbidden": 403, "foreign_session": 403,
              "forbidden": 403}
