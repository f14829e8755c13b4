"""`approvals.confirm` in the run policy (issue 32.2): what a person's approval takes per
side-effect class — parsed with errors that name the field, materialised, inherited class by
class, and compared against the ceiling (removing or weakening a requirement loosens it)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from approvals import policy as core
from approvals.policy import PolicyError, RunPolicy, materialise, parse_run_policy, resolve_run_policy
from approvals.policy.run_policy import CONFIRM, CONFIRM_ORDER, describe_loosening, given_fields, loosened_fields

FRICTION = {"approvals": {"confirm": {"destructive": "typed", "remote-mutation": "second-reviewer"}}}


def test_the_issue_s_example_parses_materialises_and_round_trips() -> None:
    policy = parse_run_policy(FRICTION)
    assert policy.confirm == (("destructive", "typed"), ("remote-mutation", "second-reviewer"))
    assert materialise(policy)["confirm"] == {"destructive": "typed", "remote-mutation": "second-reviewer"}
    assert parse_run_policy(policy.to_dict()) == policy
    assert "approvals.confirm" in given_fields(policy)


def test_none_takes_nothing_more_and_no_requirement_leaves_no_key() -> None:
    assert "confirm" not in materialise(parse_run_policy({"approvals": {"confirm": {"destructive": "none"}}}))
    assert "confirm" not in materialise(RunPolicy())


@pytest.mark.parametrize(("doc", "field", "value"), [
    ({"approvals": {"confirm": "typed"}}, "approvals.confirm", "string"),
    ({"approvals": {"confirm": ["destructive"]}}, "approvals.confirm", "array"),
    ({"approvals": {"confirm": {"dangerous": "typed"}}}, "approvals.confirm.dangerous", "typed"),
    ({"approvals": {"confirm": {"destructive": "twice"}}}, "approvals.confirm.destructive", "twice"),
    ({"approvals": {"confirm": {"destructive": True}}}, "approvals.confirm.destructive", True),
])
def test_a_bad_confirm_is_refused_naming_the_field(doc: dict, field: str, value: object) -> None:
    with pytest.raises(PolicyError) as refused:
        parse_run_policy(doc)
    assert (refused.value.code, refused.value.field, refused.value.value) == ("invalid_policy", field, value)
    assert field in refused.value.message


def test_confirm_is_inherited_class_by_class_and_a_confirm_only_layer_leaves_the_rest_to_the_farther() -> None:
    ceiling = parse_run_policy({"approvals": {"timeout_s": 600, "confirm": {"destructive": "second-reviewer"}}})
    run = parse_run_policy({"sandbox": "read-only", "approvals": {"confirm": {"remote-mutation": "typed"}}})
    resolved = resolve_run_policy(run, ceiling)
    assert resolved.sandbox == "read-only" and resolved.timeout_s is None  # the rest: replaced whole
    assert dict(resolved.confirm) == {"destructive": "second-reviewer", "remote-mutation": "typed"}
    # naming a class replaces the farther requirement, "none" included
    dropped = resolve_run_policy(parse_run_policy({"approvals": {"confirm": {"destructive": "none"}}}), ceiling)
    assert dict(dropped.confirm) == {"destructive": "none"}
    assert dropped.timeout_s == 600  # a layer with nothing but confirm: the other fields are the farther one's
    preset = parse_run_policy({"approvals": {"confirm": {"destructive": "second-reviewer"}}})
    server = parse_run_policy({"approvals": {"timeout_s": 60}})
    assert resolve_run_policy(preset, server).timeout_s == 60


@pytest.mark.parametrize(("requested", "ceiling", "loose"), [
    ({}, {"destructive": "typed"}, True),  # removed
    ({"destructive": "none"}, {"destructive": "typed"}, True),  # removed by name
    ({"destructive": "typed"}, {"destructive": "second-reviewer"}, True),  # weakened
    ({"destructive": "second-reviewer"}, {"destructive": "typed"}, False),  # strengthened
    ({"destructive": "typed"}, {}, False),  # added
    ({"destructive": "typed"}, {"destructive": "typed", "local-mutation": "none"}, False),
    ({"destructive": "typed", "remote-mutation": "typed"}, {"remote-mutation": "second-reviewer"}, True),
])
def test_removing_or_weakening_a_requirement_loosens_adding_one_tightens(requested: dict, ceiling: dict, loose: bool) -> None:
    def mat(confirm: dict) -> dict:
        return materialise(parse_run_policy({"approvals": {"confirm": confirm}}))

    assert ("approvals.confirm" in loosened_fields(mat(requested), mat(ceiling))) is loose
    if loose:
        sentence = describe_loosening("approvals.confirm", mat(requested), mat(ceiling), given=True)
        assert sentence.startswith("approvals.confirm asks less of a reviewer") and "instead of" in sentence


requirements = st.dictionaries(st.sampled_from(core.CLASSES), st.sampled_from(CONFIRM), max_size=6)


@given(requested=requirements, ceiling=requirements)
def test_confirm_loosens_exactly_when_some_class_asks_less(requested: dict, ceiling: dict) -> None:
    mine = materialise(parse_run_policy({"approvals": {"confirm": requested}}))
    theirs = materialise(parse_run_policy({"approvals": {"confirm": ceiling}}))
    weaker = any(CONFIRM_ORDER[requested.get(c, "none")] < CONFIRM_ORDER[ceiling.get(c, "none")] for c in core.CLASSES)
    assert ("approvals.confirm" in loosened_fields(mine, theirs)) is weaker
    # a run that names no class weaker than the ceiling inherits the rest class by class: never looser
    named = {c: v for c, v in requested.items() if CONFIRM_ORDER[v] >= CONFIRM_ORDER[ceiling.get(c, "none")]}
    inherited = resolve_run_policy(parse_run_policy({"approvals": {"confirm": named}}),
                                   parse_run_policy({"approvals": {"confirm": ceiling}}))
    assert "approvals.confirm" not in loosened_fields(materialise(inherited), theirs)


# --- the word a typed confirmation asks for ----------------------------------------------------

POLICY = core.compile_policy({"classes": {"destructive": "ask", "remote-mutation": "ask", "local-mutation": "ask"},
                              "default": "ask"})


@pytest.mark.parametrize(("command", "requirement", "word"), [
    ("git push origin main", "typed", "main"),
    ("git push --force origin +feature", "typed", "feature"),
    ("git push origin refs/heads/release", "typed", "release"),
    ("git push upstream", "typed", "upstream"),
    ("ls && rm -r src", "typed", "rm"),  # the command that made it ask
    ("/bin/rm -r src", "typed", "rm"),
    ("git push origin main", "second-reviewer", ""),
])
def test_the_word_is_the_program_or_the_push_s_branch(command: str, requirement: str, word: str) -> None:
    request = {"tool": "bash", "input": {"command": command}, "cwd": "/w"}
    verdict = core.evaluate(POLICY, request)
    needs = {"destructive": requirement, "remote-mutation": requirement}
    assert core.confirmation_for(needs, request, verdict) == (requirement, word)


def test_a_file_change_asks_for_the_file_name_and_another_tool_for_its_name() -> None:
    edit = {"tool": "write", "input": {"file_path": "/w/src/app.py", "content": ""}, "cwd": "/w"}
    assert core.confirmation_for({"local-mutation": "typed"}, edit, core.evaluate(POLICY, edit)) == ("typed", "app.py")
    assert core.confirmation_word({"tool": "mcp__db__drop", "input": {}}, None) == "mcp__db__drop"


def test_the_strictest_requirement_of_the_asking_commands_wins() -> None:
    request = {"tool": "bash", "input": {"command": "rm -r build && git push origin main"}, "cwd": "/w"}
    verdict = core.evaluate(POLICY, request)
    assert core.confirmation_for({"destructive": "typed", "remote-mutation": "second-reviewer"}, request, verdict) == (
        "second-reviewer", "")
    assert core.confirmation_for({}, request, verdict) == ("", "")
    assert core.confirmation_for({"read-only": "typed"}, request, verdict) == ("", "")
