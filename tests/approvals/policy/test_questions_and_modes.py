"""Question helpers and runtime modes (issue 4 helpers)."""

import pytest

from approvals.policy import (
    DEFAULT_POLICY,
    PolicyError,
    answers_of,
    apply_runtime_mode,
    compile_policy,
    describe_answers,
    evaluate,
    is_complete,
    validate_questions,
)

QUESTIONS = [
    {"id": "color", "header": "Color", "question": "Which colour?",
     "options": [{"label": "Red", "description": ""}, {"label": "Blue", "description": "calm"}]},
    {"id": "scope", "header": "Scope", "question": "Which areas?", "multi_select": True,
     "options": [{"label": "Auth", "description": ""}, {"label": "Export", "description": ""}]},
    {"id": "name", "header": "Name", "question": "What name?", "options": [], "allow_other": True},
]


def test_answers_are_normalised_by_question_id():
    answers = answers_of(QUESTIONS, {"color": "Red", "scope": ["Auth", "Export", "Auth"], "name": "Ada"})
    assert answers == {"color": ["Red"], "scope": ["Auth", "Export"], "name": "Ada"}
    assert is_complete(QUESTIONS, answers)
    assert describe_answers(QUESTIONS, answers) == "Answered: Color = Red; Scope = Auth, Export; Name = Ada"


def test_a_partial_answer_is_described_as_partial_and_is_not_complete():
    answers = answers_of(QUESTIONS, {"color": ["Blue"], "scope": []})
    assert answers == {"color": ["Blue"]} and not is_complete(QUESTIONS, answers)
    assert describe_answers(QUESTIONS, answers) == "Partially answered: Color = Blue"


def test_no_answer_is_described_as_declined():
    assert describe_answers(QUESTIONS, None) == "Declined: no human answer"
    assert describe_answers(QUESTIONS, {}) == "Declined: no human answer"
    assert not is_complete(QUESTIONS, None)


@pytest.mark.parametrize("raw, field", [
    ({"colour": ["Red"]}, "answers.colour"),
    ({"color": ["Green"]}, "answers.color"),
    ({"color": "free text"}, "answers.color"),  # no Other on this question
    ({"color": ["Red", "Blue"]}, "answers.color"),  # single select
    ({"scope": [1]}, "answers.scope"),
])
def test_unknown_ids_labels_and_shapes_are_refused(raw, field):
    with pytest.raises(PolicyError) as info:
        answers_of(QUESTIONS, raw)
    assert (info.value.code, info.value.field) == ("invalid_answer", field)


@pytest.mark.parametrize("questions", [
    [], "x", [{"id": "", "question": "q", "allow_other": True}], [{"id": "a"}],
    [{"id": "a", "question": "q", "allow_other": True}, {"id": "a", "question": "q", "allow_other": True}],
    [{"id": "a", "question": "q", "options": [{"label": "x"}, {"label": "x"}]}],
    [{"id": "a", "question": "q", "allow_other": "yes"}],
])
def test_malformed_questions_are_refused(questions):
    with pytest.raises(PolicyError):
        validate_questions(questions)


def test_a_question_without_options_is_answered_in_free_text():
    # Codex's plain questions (issue 30.1): neither options nor "Other", answered in words.
    plain = validate_questions([{"id": "a", "question": "Which branch?"}])
    assert answers_of(plain, {"a": "main"}) == {"a": "main"}
    assert describe_answers(plain, {"a": "main"}) == "Answered: a = main"


POLICY = compile_policy(DEFAULT_POLICY)
WS = "/home/dev/project"


def decide(request, mode):
    request = {"cwd": WS, **request}
    return apply_runtime_mode(evaluate(POLICY, request), mode=mode, request=request, workspace=WS)


ASKED_EDIT = {"tool": "write", "input": {"file_path": "src/a.py"}}
OUTSIDE_EDIT = {"tool": "write", "input": {"file_path": "../other/a.py"}}
UNKNOWN = {"tool": "bash", "input": {"command": "python x.py"}}
REMOTE = {"tool": "bash", "input": {"command": "git push"}}
DESTRUCTIVE = {"tool": "bash", "input": {"command": "rm -rf /"}}
UNPARSEABLE = {"tool": "bash", "input": {"command": "python 'x"}}


def ask_everything(request, mode):
    policy = compile_policy({"default": "ask"})
    request = {"cwd": WS, **request}
    return apply_runtime_mode(evaluate(policy, request), mode=mode, request=request, workspace=WS)


def test_approval_required_keeps_the_policy_as_written():
    assert decide(UNKNOWN, "approval-required") == ("ask", "policy")
    assert decide(REMOTE, "approval-required") == ("ask", "policy")


def test_auto_accept_edits_approves_asked_edits_inside_the_workspace_only():
    assert ask_everything(ASKED_EDIT, "auto-accept-edits") == ("allow", "mode")
    assert ask_everything(OUTSIDE_EDIT, "auto-accept-edits") == ("ask", "policy")
    assert ask_everything({"tool": "write", "input": {"file_path": "src/../../x"}}, "auto-accept-edits") == (
        "ask", "policy")
    assert ask_everything(UNKNOWN, "auto-accept-edits") == ("ask", "policy")


def test_auto_approves_asks_except_remote_mutations_and_destructive_ones():
    assert decide(UNKNOWN, "auto") == ("allow", "mode")
    assert decide(REMOTE, "auto") == ("ask", "policy")
    assert ask_everything({"tool": "bash", "input": {"command": "rm -rf build"}}, "auto") == ("ask", "policy")
    assert decide(UNPARSEABLE, "auto") == ("ask", "policy")


def test_full_access_approves_every_ask():
    assert decide(REMOTE, "full-access") == ("allow", "mode")
    assert ask_everything(OUTSIDE_EDIT, "full-access") == ("allow", "mode")


@pytest.mark.parametrize("mode", ["approval-required", "auto-accept-edits", "auto", "full-access"])
def test_deny_abort_and_allow_hold_in_every_mode(mode):
    assert decide(DESTRUCTIVE, mode) == ("deny", "policy")
    assert decide({"tool": "bash", "input": {"command": "ls"}}, mode) == ("allow", "policy")
    abort = evaluate(compile_policy({"limits": {"max_tool_calls": 0}}), {"tool": "bash", "input": {"command": "ls"}})
    assert apply_runtime_mode(abort, mode=mode, request={}, workspace=WS) == ("abort", "policy")


def test_an_unknown_mode_is_refused():
    with pytest.raises(PolicyError):
        decide(UNKNOWN, "yolo")
