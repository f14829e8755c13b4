"""The console's question form: a secret asked in a password field, a choice with the
reviewer's own words beside it (issue 30)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from approvals.models import SecretAnswer
from tests.approvals.test_answers import QUESTIONS, SECRET


@pytest.mark.django_db
def test_the_console_asks_a_secret_in_a_password_field_and_takes_a_choice_with_other(make_approval: Any, alice: Any) -> None:
    approval = make_approval(tool="AskUserQuestion", input={"questions": QUESTIONS}, kind="question", subtype="question",
                             presentation={"title": "The agent asks", "questions": QUESTIONS})
    client = Client()
    client.force_login(alice)
    page = client.get("/").content.decode()
    assert 'type="password" name="q:token:other"' in page
    response = client.post(f"/approvals/{approval.pk}/answer/", {
        "hash": approval.hash, "q:color": "Blue", "q:color:other": "navy", "q:token:other": SECRET,
    }, headers={"HX-Request": "true"})
    assert response.status_code == HTTPStatus.OK and SECRET not in response.content.decode()
    approval.refresh_from_db()
    assert approval.answers == {"color": ["Blue", "navy"], "token": "[secret]"}
    assert SecretAnswer.objects.get(approval=approval).answers == {"token": SECRET}  # until the agent takes it
