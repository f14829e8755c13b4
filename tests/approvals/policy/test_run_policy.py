"""The run policy: validation, materialised defaults, whole replacement, capabilities."""

from dataclasses import dataclass, field

import pytest

from approvals.policy import PolicyError, RunPolicy, check_capabilities, materialise, parse_run_policy, resolve_run_policy


def test_a_full_run_policy_parses_and_round_trips():
    doc = {"sandbox": "workspace-write", "web_search": "deny", "browser": "allow",
           "approvals": {"permission": "auto-approve", "plan_review": "auto-deny", "question": "ask",
                         "timeout_s": 300, "on_timeout": "continue", "on_reject": "retry", "max_retries": 2}}
    policy = parse_run_policy(doc)
    assert policy.permission == "auto-approve" and policy.timeout_s == 300.0 and policy.max_retries == 2
    assert parse_run_policy(policy.to_dict()) == policy


@pytest.mark.parametrize("doc, field, value", [
    ({"sandbox": "yolo"}, "sandbox", "yolo"),
    ({"web_search": "ask"}, "web_search", "ask"),
    ({"browser": True}, "browser", True),
    ({"approvals": {"question": "auto-approve"}}, "approvals.question", "auto-approve"),
    ({"approvals": {"permission": "maybe"}}, "approvals.permission", "maybe"),
    ({"approvals": {"plan_review": "retry"}}, "approvals.plan_review", "retry"),
    ({"approvals": {"on_timeout": "explode"}}, "approvals.on_timeout", "explode"),
    ({"approvals": {"on_reject": "ask"}}, "approvals.on_reject", "ask"),
    ({"approvals": {"timeout_s": "30"}}, "approvals.timeout_s", "30"),
    ({"approvals": {"timeout_s": True}}, "approvals.timeout_s", True),
    ({"approvals": {"timeout_s": 0}}, "approvals.timeout_s", 0),
    ({"approvals": {"timeout_s": 0.0}}, "approvals.timeout_s", 0.0),
    ({"approvals": {"max_retries": -1}}, "approvals.max_retries", -1),
    ({"approvals": {"max_retries": 1.5}}, "approvals.max_retries", 1.5),
    ({"approvals": {"retries": 1}}, "approvals.retries", 1),
    ({"sandbox_mode": "x"}, "sandbox_mode", "x"),
    ({"approvals": []}, "approvals", []),
])
def test_an_invalid_run_policy_names_the_field_and_value(doc, field, value):
    with pytest.raises(PolicyError) as info:
        parse_run_policy(doc)
    assert (info.value.code, info.value.field, info.value.value) == ("invalid_policy", field, value)


def test_inherit_values_materialise_to_the_defaults():
    assert materialise(RunPolicy()) == {
        "sandbox": "inherit", "web_search": "inherit", "browser": "inherit", "permission": "ask",
        "plan_review": "ask", "question": "ask", "timeout_s": 3600.0, "on_timeout": "continue",
        "on_reject": "continue", "max_retries": 3}


def test_zero_retries_means_no_retry_not_the_default():
    assert materialise(parse_run_policy({"approvals": {"max_retries": 0}}))["max_retries"] == 0
    assert materialise(parse_run_policy({"approvals": {}}))["max_retries"] == 3  # absent: inherit


def test_a_negative_timeout_means_no_deadline_and_explicit_values_are_kept():
    values = materialise(parse_run_policy({"sandbox": "read-only", "approvals": {
        "timeout_s": -1, "question": "ask", "on_reject": "continue", "max_retries": 5}}))
    assert values["timeout_s"] is None and values["question"] == "ask"
    assert values["sandbox"] == "read-only" and values["on_reject"] == "continue" and values["max_retries"] == 5


def test_the_nearer_policy_replaces_the_farther_one_whole():
    server = parse_run_policy({"sandbox": "read-only", "approvals": {"timeout_s": 600, "permission": "auto-deny"}})
    session = parse_run_policy({"approvals": {"permission": "ask"}})
    run = parse_run_policy({"web_search": "deny"})
    resolved = resolve_run_policy(run, session, server)
    assert resolved is run
    assert resolved.sandbox == "inherit" and resolved.timeout_s is None  # not merged from the server
    assert resolve_run_policy(None, session, server) is session
    assert resolve_run_policy(None, None) == RunPolicy()
    assert parse_run_policy(None) == RunPolicy()


@dataclass(frozen=True)
class Descriptor:
    name: str = "scripted"
    sandbox: frozenset = frozenset({"read-only", "workspace-write"})
    web_search: frozenset = frozenset({"deny"})
    browser: frozenset = frozenset()
    approval_modes: dict = field(default_factory=lambda: {
        "permission": frozenset({"ask", "auto-approve", "auto-deny"}), "plan_review": frozenset({"ask"}),
        "question": frozenset({"ask", "auto-deny"})})
    retry: bool = False


def test_inherit_values_are_always_accepted_by_any_driver():
    check_capabilities(RunPolicy(), Descriptor(sandbox=frozenset(), web_search=frozenset(), approval_modes={}))


def test_modelled_explicit_values_are_accepted():
    check_capabilities(parse_run_policy({"sandbox": "read-only", "web_search": "deny",
                                         "approvals": {"permission": "auto-deny", "question": "ask"}}), Descriptor())


@pytest.mark.parametrize("doc, dimension, value", [
    ({"sandbox": "unrestricted"}, "sandbox", "unrestricted"),
    ({"web_search": "allow"}, "web_search", "allow"),
    ({"browser": "deny"}, "browser", "deny"),
])
def test_an_explicit_value_the_driver_does_not_model_is_refused(doc, dimension, value):
    with pytest.raises(PolicyError) as info:
        check_capabilities(parse_run_policy(doc), Descriptor())
    err = info.value.to_dict()
    assert (err["code"], err["driver"], err["dimension"], err["value"]) == (
        "policy_capability_unsupported", "scripted", dimension, value)


def test_an_approval_mode_the_driver_does_not_model_is_refused():
    with pytest.raises(PolicyError) as info:
        check_capabilities(parse_run_policy({"approvals": {"plan_review": "auto-approve"}}), Descriptor())
    err = info.value.to_dict()
    assert (err["code"], err["driver"], err["kind"], err["mode"]) == (
        "human_decision_mode_unsupported", "scripted", "plan_review", "auto-approve")


def test_retry_on_a_driver_without_retry_is_left_to_the_run_time_fallback():
    check_capabilities(parse_run_policy({"approvals": {"on_timeout": "retry"}}), Descriptor(retry=False))
