"""An MCP server's form (elicitation) as questions, and the answers back as typed content.

Pure: drivers/elicitation.py with the question rules of approvals/policy/questions.py.
Through the real Codex: tests/drivers/test_codex_mcp.py.
"""

from __future__ import annotations

import pytest

from approvals.policy import PolicyError, answers_of, validate_questions
from drivers import elicitation

FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Project name", "description": "Short name", "minLength": 2, "maxLength": 8},
        "email": {"type": "string", "format": "email"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 9},
        "ratio": {"type": "number"},
        "public": {"type": "boolean"},
        "region": {"type": "string", "oneOf": [{"const": "eu-1", "title": "Europe"}, {"const": "us-2", "title": "America"}]},
        "size": {"type": "string", "enum": ["s", "m"]},
        "tags": {"type": "array", "items": {"anyOf": [{"const": "a", "title": "Alpha"}, {"const": "b", "title": "Beta"}]}},
    },
    "required": ["name", "replicas"],
}


def test_each_field_becomes_a_question_the_question_rules_accept():
    questions = elicitation.questions_of(FORM)
    assert validate_questions(questions)  # the gate's own validation holds
    by_id = {q["id"]: q for q in questions}
    assert by_id["name"] == {
        "id": "name", "header": "Project name", "question": "Short name", "options": [], "multi_select": False,
        "allow_other": True, "required": True, "min_length": 2, "max_length": 8,
    }
    assert by_id["email"]["format"] == "email"
    assert (by_id["replicas"]["value_type"], by_id["replicas"]["minimum"], by_id["replicas"]["maximum"]) == ("integer", 1, 9)
    assert by_id["ratio"]["value_type"] == "number" and "required" not in by_id["ratio"]
    assert [o["label"] for o in by_id["public"]["options"]] == ["Yes", "No"]
    assert [(o["label"], o["description"]) for o in by_id["region"]["options"]] == [("Europe", "eu-1"), ("America", "us-2")]
    assert [o["label"] for o in by_id["size"]["options"]] == ["s", "m"] and not by_id["size"]["allow_other"]
    assert by_id["tags"]["multi_select"] is True


def test_answers_go_back_in_each_field_s_type_and_unanswered_ones_are_left_out():
    questions = elicitation.questions_of(FORM)
    record = answers_of(questions, {"name": "apollo", "replicas": "3", "public": "Yes", "region": ["America"],
                                    "tags": ["Alpha", "Beta"], "ratio": "0.5"})
    assert elicitation.content_of(FORM, record) == {
        "name": "apollo", "replicas": 3, "public": True, "region": "us-2", "tags": ["a", "b"], "ratio": 0.5,
    }


@pytest.mark.parametrize(("answers", "message"), [
    ({"replicas": "3"}, "Project name needs an answer"),
    ({"name": "   ", "replicas": "3"}, "Project name needs an answer"),  # blanks are no answer
    ({"name": ["apollo"], "replicas": "3"}, "is not an option"),  # free text dressed as a choice
    ({"name": "apollo"}, "replicas needs an answer"),
    ({"name": "apollo", "replicas": "three"}, "is not a whole number"),
    ({"name": "apollo", "replicas": "12"}, "above the maximum 9"),
    ({"name": "apollo", "replicas": "0"}, "below the minimum 1"),
    ({"name": "a", "replicas": "1"}, "at least 2 characters"),
    ({"name": "apollo-rocket", "replicas": "1"}, "at most 8 characters"),
    ({"name": "apollo", "replicas": "1", "email": "not an address"}, "is not an e-mail address"),
    ({"name": "apollo", "replicas": "1", "ratio": "nan"}, "is not a number"),
    ({"name": "apollo", "replicas": "1", "size": "xl"}, "is not an option"),
])
def test_an_answer_the_form_does_not_allow_is_refused_with_the_reason(answers, message):
    with pytest.raises(PolicyError) as caught:
        answers_of(elicitation.questions_of(FORM), answers)
    assert caught.value.code == "invalid_answer"
    assert message in caught.value.message


@pytest.mark.parametrize(("schema", "reason"), [
    ({"type": "object", "properties": {"address": {"type": "object"}}}, "field 'address' is of type 'object'"),
    ({"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}}}, "list of free values"),
    ({"type": "object", "properties": {}}, "no fields"),
    ({"type": "string"}, "not an object of fields"),
    ({"type": "object", "properties": {"n": {"type": "string", "enum": [1, 2]}}}, "only text choices"),
    ({"type": "object", "properties": {"n": {"type": "string", "enum": []}}}, "offers no choice"),
])
def test_a_form_the_console_cannot_show_is_unsupported_with_the_reason(schema, reason):
    with pytest.raises(elicitation.Unsupported) as caught:
        elicitation.questions_of(schema)
    assert reason in str(caught.value)


def test_a_url_elicitation_is_unsupported():
    with pytest.raises(elicitation.Unsupported, match="'url' elicitation"):
        elicitation.request_of({"mode": "url", "message": "Sign in", "url": "https://x.example", "elicitationId": "1"})


def test_choices_whose_titles_collide_are_shown_by_value():
    schema = {"type": "object", "properties": {"env": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Prod", "Prod"]}}}
    [q] = elicitation.questions_of(schema)
    assert [o["label"] for o in q["options"]] == ["p1", "p2"]
    assert elicitation.content_of(schema, {"env": ["p2"]}) == {"env": "p2"}


def test_question_constraints_are_validated_like_the_rest():
    base = {"id": "n", "question": "How many?"}
    with pytest.raises(PolicyError, match="value_type must be one of"):
        validate_questions([{**base, "value_type": "date"}])
    with pytest.raises(PolicyError, match="minimum must be a number"):
        validate_questions([{**base, "minimum": 1}])  # a text question has no minimum
    with pytest.raises(PolicyError, match="format must be one of"):
        validate_questions([{**base, "format": "phone"}])
    assert validate_questions([{**base, "value_type": "number", "minimum": 0.5}])[0]["minimum"] == 0.5
