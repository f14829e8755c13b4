"""The external decision point in the rule policy (issue 30.9): validation, answers, how they
combine with Gatehouse's decision, and the administrator's ceiling."""

from __future__ import annotations

import importlib

import pytest

from approvals.policy import compile_policy, policy_problems
from approvals.policy.external import ExternalAnswer, ExternalPoint, combine, parse_answer, replay
from approvals.policy.strictness import loosenings

PRESETS = {p["name"]: p["document"] for p in importlib.import_module("approvals.migrations.0005_policy_presets").PRESETS}
STANDARD = PRESETS["Standard review"]
OPA = "http://127.0.0.1:8181/v1/data/gatehouse/decision"


def problems(external: object) -> list[tuple[str, str]]:
    return [(p.field, p.message) for p in policy_problems({"default": "ask", "external": external})]


def test_a_url_or_a_command_compiles_with_its_defaults() -> None:
    point = compile_policy({"external": {"url": OPA}}).external
    assert point == ExternalPoint(url=OPA, timeout_ms=500, may_loosen=False)
    point = compile_policy({"external": {"command": ["/usr/local/bin/decide", "--strict"], "timeout_ms": 2000,
                                         "may_loosen": True}}).external
    assert point is not None and point.command == ("/usr/local/bin/decide", "--strict") and point.may_loosen
    assert compile_policy({"default": "ask"}).external is None


@pytest.mark.parametrize(("external", "field", "says"), [
    ("http://x", "external", "must be an object with url or command (got string)"),
    ({}, "external", "needs url (an HTTP endpoint in the shape of OPA's data API) or command"),
    ({"url": OPA, "command": ["/bin/true"]}, "external", "give url or command, not both"),
    ({"url": "ftp://host/x"}, "external.url", "must be an http:// or https:// URL (got scheme 'ftp')"),
    ({"url": "http:///decide"}, "external.url", "with a host"),
    ({"url": OPA + "#frag"}, "external.url", "no fragment"),
    ({"url": 8181}, "external.url", "(got number)"),
    ({"command": "/usr/local/bin/decide --strict"}, "external.command", 'no shell reads it): ["/usr/local/bin/decide", ...]'),
    ({"command": []}, "external.command", "(got an empty list)"),
    ({"command": ["/bin/decide", ""]}, "external.command[1]", "must be a non-empty string"),
    ({"url": OPA, "timeout_ms": 0}, "external.timeout_ms", "from 1 to 10000 (got 0)"),
    ({"url": OPA, "timeout_ms": 60000}, "external.timeout_ms", "(got 60000)"),
    ({"url": OPA, "timeout_ms": "500"}, "external.timeout_ms", "(got string)"),
    ({"url": OPA, "timeout_ms": True}, "external.timeout_ms", "(got boolean)"),
    ({"url": OPA, "may_loosen": "yes"}, "external.may_loosen", "must be true or false (got string)"),
    ({"url": OPA, "timeout_s": 2}, "external.timeout_s", "unknown key 'timeout_s' in external (expected one of url, command"),
])
def test_a_bad_decision_point_is_refused_naming_the_field(external: object, field: str, says: str) -> None:
    found = problems(external)
    assert len(found) == 1, found
    assert found[0][0] == field and found[0][1].startswith(f"{field}: ") and says in found[0][1], found


def test_every_problem_of_the_section_is_listed() -> None:
    found = problems({"command": "decide", "timeout_ms": -1, "may_loosen": 1, "extra": None})
    assert [f for f, _ in found] == ["external.extra", "external.command", "external.timeout_ms", "external.may_loosen"]


def test_what_messages_call_it_hides_credentials_and_the_query() -> None:
    point = compile_policy({"external": {"url": "https://gate:s3cret@opa.example:8443/v1/data/x?token=abc"}}).external
    assert point is not None and point.target == "https://opa.example:8443/v1/data/x"
    assert "s3cret" not in repr(point) and "abc" not in repr(point)


@pytest.mark.parametrize(("raw", "decision", "says"), [
    (b'{"result": {"decision": "deny", "reason": "no pushes on Friday"}}', "deny", "no pushes on Friday"),
    (b'{"result": {"decision": "allow"}}', "allow", "said allow"),
    (b'{"result": {"decision": "ask", "reason": "  two\\nlines "}}', "ask", "two lines"),
    (b'{"result": {"decision": "deny", "reason": "red\\u001b[31m alert\\u0007"}}', "deny", "red [31m alert"),
])
def test_an_answer_is_read(raw: bytes, decision: str, says: str) -> None:
    answer = parse_answer(raw, "http://opa/x")
    assert (answer.decision, answer.failed) == (decision, False) and says in answer.reason


@pytest.mark.parametrize(("raw", "says"), [
    (b"allow", "not JSON"),
    (b"[1]", "a JSON array, not an object"),
    (b"{}", 'no "result": an undefined rule in OPA answers {}'),
    (b'{"result": true}', '"result" is a boolean'),
    (b'{"result": {"decision": "maybe"}}', "must be one of allow, ask, deny (got 'maybe')"),
    (b'{"result": {"decision": "abort"}}', "(got 'abort')"),
    (b'{"result": {"decision": "deny", "reason": 7}}', '"result.reason" must be a string'),
    (b"\xff\xfe", "not JSON"),
    (b" " * (64 * 1024 + 1), "longer than 64 KiB"),
])
def test_a_malformed_answer_is_a_failure_that_says_why(raw: bytes, says: str) -> None:
    answer = parse_answer(raw, "http://opa/x")
    assert answer.failed and answer.decision == "ask"
    assert answer.reason.startswith("The external decision point http://opa/x gave a malformed answer") and says in answer.reason


def said(decision: str) -> ExternalAnswer:
    return ExternalAnswer(decision=decision, reason="because")


@pytest.mark.parametrize(("gate", "answer", "decision", "decided", "effect"), [
    ("allow", "deny", "deny", True, "tightened"),
    ("allow", "ask", "ask", True, "tightened"),
    ("ask", "deny", "deny", True, "tightened"),
    ("ask", "allow", "ask", False, "may-not-loosen"),
    ("deny", "allow", "deny", False, "not-looser"),
    ("abort", "deny", "abort", False, "not-looser"),
    ("allow", "allow", "allow", False, "agreed"),
])
def test_by_default_the_most_restrictive_wins(gate: str, answer: str, decision: str, decided: bool, effect: str) -> None:
    combined = combine(gate, said(answer), may_loosen=False)
    assert (combined.decision, combined.decided, combined.effect) == (decision, decided, effect)


def test_may_loosen_turns_an_ask_into_an_allow_never_a_deny_nor_a_protected_path() -> None:
    loosened = combine("ask", said("allow"), may_loosen=True)
    assert (loosened.decision, loosened.decided, loosened.effect) == ("allow", True, "loosened")
    assert combine("deny", said("allow"), may_loosen=True).decision == "deny"
    assert combine("abort", said("allow"), may_loosen=True).decision == "abort"
    protected = combine("ask", said("allow"), may_loosen=True, protected=True)
    assert (protected.decision, protected.decided, protected.effect) == ("ask", False, "protected")
    # and it still tightens
    assert combine("allow", said("deny"), may_loosen=True).decision == "deny"


def test_a_failure_asks_a_person_and_never_loosens() -> None:
    failed = ExternalAnswer.failure("The external decision point x gave no answer within 500 ms.")
    on_allow = combine("allow", failed, may_loosen=True)
    assert (on_allow.decision, on_allow.decided, on_allow.effect, on_allow.person) == ("ask", True, "failed", True)
    on_ask = combine("ask", failed, may_loosen=True)
    assert (on_ask.decision, on_ask.decided, on_ask.person) == ("ask", False, True)
    assert combine("deny", failed, may_loosen=True).decision == "deny"


def test_its_ask_is_for_a_person_its_allow_is_not() -> None:
    assert combine("ask", said("ask"), may_loosen=False).person
    assert combine("allow", said("ask"), may_loosen=False).person
    assert not combine("ask", said("allow"), may_loosen=False).person


def test_the_dry_run_replays_a_recorded_answer_under_the_drafts_trust() -> None:
    strict, loose = ExternalPoint(url=OPA), ExternalPoint(url=OPA, may_loosen=True)
    recorded = {"decision": "allow", "reason": "fine", "failed": False}
    assert replay("ask", recorded, strict) is not None and replay("ask", recorded, strict).decision == "ask"  # type: ignore[union-attr]
    assert replay("ask", recorded, loose).decision == "allow"  # type: ignore[union-attr]
    assert replay("allow", {"decision": "ask", "reason": "late", "failed": True}, strict).decision == "ask"  # type: ignore[union-attr]
    assert replay("allow", None, strict) is None and replay("allow", {}, strict) is None


# --- The administrator's ceiling ------------------------------------------------------------------

WITH_POINT = {**STANDARD, "external": {"url": OPA, "timeout_ms": 500}}


def test_a_policy_without_the_defaults_decision_point_is_looser() -> None:
    assert loosenings(STANDARD, WITH_POINT) == [
        f"external: the default policy's decision point ({OPA}) is not consulted by this one"
    ]
    assert loosenings(WITH_POINT, WITH_POINT) == []


def test_another_decision_point_is_looser() -> None:
    other = {**STANDARD, "external": {"command": ["/usr/local/bin/decide"]}}
    assert loosenings(other, WITH_POINT) == [
        f"external: consults /usr/local/bin/decide, not the default policy's decision point ({OPA})"
    ]


def test_trusting_it_more_or_giving_it_less_time_is_looser() -> None:
    found = loosenings({**STANDARD, "external": {"url": OPA, "timeout_ms": 100, "may_loosen": True}}, WITH_POINT)
    assert [f.split(":")[0] for f in found] == ["external.may_loosen", "external.timeout_ms"]
    # more time for a point that only tightens, or trusting it less, is not
    assert loosenings({**STANDARD, "external": {"url": OPA, "timeout_ms": 2000}}, WITH_POINT) == []
    trusted = {**STANDARD, "external": {"url": OPA, "may_loosen": True}}
    assert loosenings(WITH_POINT, trusted) == []
    assert loosenings({**STANDARD, "external": {"url": OPA, "timeout_ms": 2000, "may_loosen": True}}, trusted) == [
        "external.timeout_ms: 2000 ms is more time than the default policy's 500 ms for a decision point that may "
        "loosen (an answer the default's would not wait for may allow)"
    ]


def test_adding_a_decision_point_only_tightens_unless_it_may_loosen() -> None:
    assert loosenings(WITH_POINT, STANDARD) == []
    found = loosenings({**STANDARD, "external": {"url": OPA, "may_loosen": True}}, STANDARD)
    assert found == [f"external: its decision point ({OPA}) may turn an ask into an allow (may_loosen); "
                     "the default policy consults none"]


@pytest.mark.parametrize("fmt", ["claude", "codex"])
def test_an_export_says_the_decision_point_is_not_carried(fmt: str) -> None:
    from approvals.policy import export_policy

    exported = export_policy({**STANDARD, "external": {"url": "http://u:pw@127.0.0.1:8181/v1/data/x?t=1"}}, fmt)
    notes = [n for n in exported.unexpressed if n.startswith("external")]
    assert notes == [f"external (http://127.0.0.1:8181/v1/data/x): {'Claude Code' if fmt == 'claude' else 'Codex'}'s "
                     "permission rules consult no decision point (Gatehouse's gate does)"]
