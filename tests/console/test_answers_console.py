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


@pytest.mark.django_db
def test_an_mcp_form_is_shown_with_the_fields_inputs_and_a_wrong_value_is_refused_with_the_reason(make_approval: Any, alice: Any) -> None:
    from drivers import elicitation
    from tests.approvals.test_answers import FORM

    request = elicitation.tool_request("tickets", {"message": "Which <b>project</b>?", "requestedSchema": FORM}, "/tmp")
    approval = make_approval(tool=request.tool, input=dict(request.input), kind="question", subtype=request.subtype,
                             presentation=dict(request.presentation))
    client = Client()
    client.force_login(alice)
    page = client.get("/").content.decode()
    assert "A form from the MCP server <code>tickets</code>" in page
    assert "Which &lt;b&gt;project&lt;/b&gt;?" in page  # the server's text, escaped
    assert 'type="number" name="q:replicas:other" autocomplete="off" value="" step="1" min="1" max="9" required' in page
    assert 'type="text" name="q:name:other" autocomplete="off" value="" required' in page
    assert 'type="radio" name="q:public" value="Yes"' in page
    response = client.post(f"/approvals/{approval.pk}/answer/", {
        "hash": approval.hash, "q:name:other": "apollo", "q:replicas:other": "12",
    }, headers={"HX-Request": "true"})
    assert "above the maximum 9" in response.content.decode()
    approval.refresh_from_db()
    assert approval.status == "pending"
    response = client.post(f"/approvals/{approval.pk}/answer/", {
        "hash": approval.hash, "q:name:other": "apollo", "q:replicas:other": "3", "q:public": "Yes",
    }, headers={"HX-Request": "true"})
    assert response.status_code == HTTPStatus.OK
    approval.refresh_from_db()
    assert approval.answers == {"name": "apollo", "replicas": "3", "public": ["Yes"]}
