"""The approval card's Edit (issue 32.3): offered for a command or a file write where the
driver can carry the edit, posted with the hash and CSRF like every decision, the decided
card and the run's timeline show the diff, agent text escaped."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from approvals.models import Approval
from runs.models import Step
from tests.console.conftest import htmx_headers

pytestmark = pytest.mark.django_db


def test_a_command_card_offers_edit_prefilled_with_the_command(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval("git push origin <main>")
    client.force_login(alice)
    html = client.get("/").content.decode()
    assert 'class="edit-request"' in html and "Approve edited" in html
    assert 'name="edited:command"' in html
    assert "git push origin &lt;main&gt;</textarea>" in html  # the agent's command, escaped
    assert f'id="approval-{approval.pk}-edited"' in html


def test_no_edit_where_the_driver_cannot_carry_it_or_two_reviewers_must_approve(
    client: Client, alice: Any, make_approval: Callable[..., Any]
) -> None:
    make_approval(driver="codex")
    make_approval("git push origin feature", run_policy={"approvals": {"confirm": {"remote-mutation": "second-reviewer"}}})
    client.force_login(alice)
    html = client.get("/").content.decode()
    assert html.count('data-kind="permission"') == 2
    assert "Approve edited" not in html


def test_approve_edited_posts_the_edit_and_the_card_shows_the_diff(
    csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]
) -> None:
    approval = make_approval("git push origin main")
    client = csrf_client(alice)
    response = client.post(
        f"/approvals/{approval.pk}/approve/",
        {"hash": approval.hash, "edited:command": "git push origin <b>feature</b>\r\n"},
        headers=htmx_headers(client),
    )
    assert response.status_code == HTTPStatus.OK
    html = response.content.decode()
    approval.refresh_from_db()
    assert approval.status == Approval.Status.APPROVED
    assert approval.edited_input == {"command": "git push origin <b>feature</b>\n"}  # CRLF as the agent's line ends
    assert "with an edit" in html
    assert '<span class="del">-git push origin main</span>' in html
    assert '<span class="add">+git push origin &lt;b&gt;feature&lt;/b&gt;</span>' in html
    timeline = client.get(f"/runs/{approval.run_id}/").content.decode()
    assert "Approved with the reviewer&#x27;s edit" in timeline or "Approved with the reviewer's edit" in timeline
    assert '<span class="add">+git push origin &lt;b&gt;feature&lt;/b&gt;</span>' in timeline
    assert Step.objects.get(pk=approval.step_id).request["input"]["command"] == "git push origin <b>feature</b>\n"


def test_an_edit_the_policy_denies_keeps_the_card_pending_with_the_rule_and_the_edit(
    csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]
) -> None:
    approval = make_approval("git push origin main")
    client = csrf_client(alice)
    response = client.post(
        f"/approvals/{approval.pk}/approve/",
        {"hash": approval.hash, "edited:command": "git push --force origin main"},
        headers=htmx_headers(client),
    )
    html = response.content.decode()
    assert "the policy refuses the edited request" in html
    assert '<code class="rule">classes.destructive</code>' in html
    assert "git push --force origin main</textarea>" in html  # the reviewer's edit, kept to fix
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING


def test_an_edit_without_the_csrf_token_is_refused(csrf_client: Callable[[Any], Client], alice: Any, make_approval: Callable[..., Any]) -> None:
    approval = make_approval("git push origin main")
    client = csrf_client(alice)
    response = client.post(f"/approvals/{approval.pk}/approve/", {"hash": approval.hash, "edited:command": "ls"},
                           headers={"HX-Request": "true"})
    assert response.status_code == HTTPStatus.FORBIDDEN
    approval.refresh_from_db()
    assert approval.status == Approval.Status.PENDING
