"""Refusals of the repositories' writes (registering, preparing a workspace, delivering)."""

from __future__ import annotations

from infra.errors import DomainError


class RepositoryError(DomainError):
    """`code` is stable for API clients; a message never carries a credential (repos.git.scrub)."""

    STATUS = {"not_found": 404, "forbidden": 403, "no_changes": 409, "run_not_finished": 409, "not_a_repository_run": 409,
              "workspace_not_here": 409, "delivery_pending": 409}
