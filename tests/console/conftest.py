"""Console fixtures: reviewers with and without the decide permission, and approvals
created through the real gate (no worker needed: the gate is a service)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

DECIDE = "approvals.change_approval"


@pytest.fixture
def alice(make_user: Callable[..., Any]) -> Any:
    """A reviewer who may decide (a plain user with the permission, not a superuser)."""
    return make_user("alice", superuser=False, perms=(DECIDE, "runs.add_run", "runs.change_run", "runs.change_agentsession", "approvals.change_grant"))


@pytest.fixture
def viewer(make_user: Callable[..., Any]) -> Any:
    """Logged in, may look, may not decide."""
    return make_user("victor", superuser=False)


@pytest.fixture
def csrf_client() -> Callable[[Any], Client]:
    """A logged-in client that enforces CSRF like a browser, with the token it would send."""

    def make(user: Any) -> Client:
        client = Client(enforce_csrf_checks=True)
        client.force_login(user)
        client.get("/")  # sets the csrftoken cookie, as the page load does
        client.csrf_token = client.cookies["csrftoken"].value  # type: ignore[attr-defined]
        return client

    return make


def htmx_headers(client: Client, target: str = "") -> dict[str, str]:
    headers = {"HX-Request": "true", "X-CSRFToken": client.csrf_token}  # type: ignore[attr-defined]
    if target:
        headers["HX-Target"] = target
    return headers


@pytest.fixture
def make_approval(db: Any) -> Callable[..., Any]:
    """A run waiting on one approval, made by the real services (policy included)."""

    def make(
        command: str = "git push origin main",
        *,
        tool: str = "bash",
        input: dict[str, Any] | None = None,
        kind: str = "permission",
        subtype: str = "command",
        presentation: dict[str, Any] | None = None,
        prompt: str = "console test",
        run_policy: dict[str, Any] | None = None,
        policy: dict[str, Any] | None = None,
        driver: str = "scripted",
        user: Any = None,
        session: Any = None,
    ) -> Any:
        from approvals.gate import gate_request
        from approvals.models import Approval
        from runs.services import run_create

        if run_policy is None and kind == "question":
            run_policy = {"approvals": {"question": "ask"}}  # the default declines questions
        policy_name = ""
        if policy is not None:
            from approvals.models import Policy
            from approvals.services import policy_save

            policy_name = f"console-test-{Policy.objects.count() + 1}"
            saved = policy_save(policy=Policy(name=policy_name, document=policy))
            if user is not None:  # (set up as an administrator would: the run's starter may name it)
                saved.available_to_users.add(user)
        run = run_create(
            driver=driver, prompt=prompt, scenario={"steps": [{"message": "hello"}]} if driver == "scripted" else None,
            run_policy=run_policy, policy_name=policy_name, user=user, session=session,
        )
        outcome = gate_request(
            run_id=run.pk,
            tool=tool,
            input=input if input is not None else {"command": command},
            cwd=run.workspace,
            kind=kind,
            subtype=subtype,
            presentation=presentation if presentation is not None else {"title": "Run a command", "command": command},
        )
        assert outcome.outcome == "wait", outcome
        return Approval.objects.select_related("run", "step").get(pk=outcome.approval_id)

    return make
