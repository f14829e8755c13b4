"""Answers the way people give them (issue 30, items 1 and 3): some questions left
unanswered, a choice with the reviewer's own words beside it ("Other"), and secret
questions whose answer reaches the agent and is never kept or shown."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Approval, SecretAnswer
from approvals.policy import answers_for_agent, answers_of, mask_secrets, validate_questions
from runs.models import Activity, Step
from tests.flow import decide, finished, messages, pending_approval, start_run

QUESTIONS = [
    {"id": "color", "header": "Color", "question": "Which color?", "options": [{"label": "Red"}, {"label": "Blue"}],
     "allow_other": True},
    {"id": "scope", "header": "Scope", "question": "Which parts?", "options": [{"label": "Auth"}, {"label": "Export"}],
     "multi_select": True},
    {"id": "token", "header": "Token", "question": "The deploy token?", "secret": True},
]
ASK = {"approvals": {"question": "ask"}}
SECRET = "s3cr3t-token-value"


def test_a_question_without_options_is_answered_in_free_text():
    [q] = validate_questions([{"id": "why", "question": "Why?"}])
    assert q["allow_other"] and answers_of([q], {"why": "because"}) == {"why": "because"}


def test_a_choice_may_carry_the_reviewers_own_words():
    assert answers_of(QUESTIONS, {"color": ["Red"]}, {"color": "a darker red"}) == {"color": ["Red", "a darker red"]}
    assert answers_of(QUESTIONS, {}, {"color": "green"}) == {"color": "green"}
    with pytest.raises(Exception, match="takes no answer of your own"):
        answers_of(QUESTIONS, {}, {"scope": "everything"})


def test_the_agent_is_told_which_questions_stayed_unanswered_and_which_secret_it_cannot_have_again():
    told = answers_for_agent(QUESTIONS, {"color": ["Blue"], "token": "[secret]"})
    assert told["color"] == ["Blue"]
    assert "unanswered" in told["scope"] and "not kept" in told["token"]
    assert mask_secrets(QUESTIONS, {"color": ["Red"], "token": SECRET}) == {"color": ["Red"], "token": "[secret]"}


@pytest.mark.django_db(transaction=True)
async def test_a_partial_answer_with_other_and_a_secret_reaches_the_agent_and_the_secret_is_never_kept(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"question": {"questions": QUESTIONS}}, {"message": "done"}]}, run_policy=ASK)
    approval = await pending_approval(api, run["id"])
    assert [q.get("secret", False) for q in approval["presentation"]["questions"]] == [False, False, True]
    response = await decide(api, approval, "answer", answers={"color": ["Red"]}, other={"color": "a darker red", "token": SECRET})
    assert response.status_code == HTTPStatus.OK, response.content
    assert response.json()["answers"] == {"color": ["Red", "a darker red"], "token": "[secret]"}
    done = await finished(run["id"])
    assert done.status == "completed"
    # the agent (the scripted driver) got the secret: its echo masks it, and says the rest
    said = await sync_to_async(messages)(run["id"])
    assert said[0].startswith("Thanks, I got the answers:") and "a darker red" in said[0] and "unanswered" in said[0]
    assert "[secret]" in said[0]
    # the secret is nowhere: approval, step, activities, the drop box, the API
    def everything() -> str:
        rows = [repr(a.payload) for a in Activity.objects.filter(run_id=run["id"])]
        rows += [repr(s.answers) + repr(s.request) for s in Step.objects.filter(run_id=run["id"])]
        rows += [repr(a.answers) for a in Approval.objects.filter(run_id=run["id"])]
        return "\n".join(rows) + api.get(f"/api/v1/approvals/{approval['id']}/").content.decode() \
            + api.get(f"/api/v1/runs/{run['id']}/activities/").content.decode()

    assert SECRET not in await sync_to_async(everything)()
    assert not await sync_to_async(SecretAnswer.objects.exists)()
    resolved = await sync_to_async(Activity.objects.get)(run_id=run["id"], event="user-input.resolved")
    assert resolved.payload["summary"] == "Partially answered: Color = Red, a darker red; Token = [secret]"


@pytest.mark.django_db(transaction=True)
async def test_a_secret_question_can_always_be_declined(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"question": {"questions": QUESTIONS[2:]}}, {"message": "done"}]},
                          run_policy={"approvals": {"question": "ask", "on_reject": "continue"}})
    approval = await pending_approval(api, run["id"])
    assert (await decide(api, approval, "answer", decline=True)).status_code == HTTPStatus.OK
    assert (await finished(run["id"])).status == "completed"


FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Project name"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 9},
        "public": {"type": "boolean"},
    },
    "required": ["name", "replicas"],
}


@pytest.mark.django_db(transaction=True)
async def test_an_mcp_form_is_answered_over_the_api_checked_and_typed_for_the_server(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"elicitation": {"server": "tickets", "message": "Which project?", "schema": FORM}},
                                          {"message": "done"}]}, run_policy=ASK)
    approval = await pending_approval(api, run["id"])
    assert approval["kind"] == "question" and approval["subtype"] == "mcp-elicitation"
    assert approval["presentation"]["server"] == "tickets" and approval["presentation"]["message"] == "Which project?"
    # what the form does not allow is refused with the reason, and nothing is decided
    response = await decide(api, approval, "answer", answers={"name": "apollo", "replicas": "12"})
    assert response.status_code == HTTPStatus.BAD_REQUEST and "above the maximum 9" in response.content.decode()
    response = await decide(api, approval, "answer", answers={"public": "Yes"})
    assert response.status_code == HTTPStatus.BAD_REQUEST and "Project name needs an answer" in response.content.decode()
    response = await decide(api, approval, "answer", answers={"name": "apollo", "replicas": "3", "public": "No"})
    assert response.status_code == HTTPStatus.OK, response.content
    assert (await finished(run["id"])).status == "completed"
    said = await sync_to_async(messages)(run["id"])
    assert said[0] == 'The MCP server got: {"action": "accept", "content": {"name": "apollo", "public": false, "replicas": 3}}'


@pytest.mark.django_db(transaction=True)
async def test_a_declined_mcp_form_tells_the_server_declined(api: Any, worker: Any) -> None:
    run = await start_run(api, {"steps": [{"elicitation": {"server": "tickets", "message": "Which?", "schema": FORM}},
                                          {"message": "done"}]},
                          run_policy={"approvals": {"question": "ask", "on_reject": "continue"}})
    approval = await pending_approval(api, run["id"])
    response = await decide(api, approval, "answer", decline=True)
    assert response.status_code == HTTPStatus.OK, response.content
    assert (await finished(run["id"])).status == "completed"
    said = await sync_to_async(messages)(run["id"])
    assert said[0] == 'The MCP server got: {"action": "decline"}'
