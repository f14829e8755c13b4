"""The administrator's run policy is a ceiling: which requested values loosen it (issue 9).

Each row is (ceiling document, requested document, fields that loosen). Both sides are
materialised first, so a field the request leaves out is the built-in default.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from approvals.policy import materialise, parse_run_policy
from approvals.policy.run_policy import (
    CEILING_FIELDS,
    FALLBACK,
    FEATURE,
    ROUTING,
    SANDBOX,
    describe_loosening,
    given_fields,
    loosened_fields,
)


def _loosened(ceiling: dict, requested: dict) -> list[str]:
    return loosened_fields(materialise(parse_run_policy(requested)), materialise(parse_run_policy(ceiling)))


def approvals(**values: object) -> dict:
    return {"approvals": values}


# The built-in defaults: permission ask, plan review ask, question ask, 3600 s, continue, continue, 3.
BUILT_IN: dict = {}

ROWS = [
    # -- nothing given, or the ceiling itself ------------------------------------------------
    (BUILT_IN, {}, []),
    (approvals(timeout_s=10), approvals(timeout_s=10), []),
    # -- approval routing --------------------------------------------------------------------
    (BUILT_IN, approvals(permission="auto-approve"), ["approvals.permission"]),
    (BUILT_IN, approvals(plan_review="auto-approve"), ["approvals.plan_review"]),
    (BUILT_IN, approvals(permission="auto-deny", plan_review="auto-deny"), []),
    (approvals(permission="auto-deny"), approvals(permission="auto-deny"), []),
    (approvals(permission="auto-deny"), approvals(permission="ask"), ["approvals.permission"]),
    (approvals(permission="auto-deny"), {}, ["approvals.permission"]),  # omitted = the default ask
    (approvals(permission="auto-approve"), approvals(permission="ask"), []),
    (approvals(permission="auto-approve"), {}, []),
    (approvals(plan_review="auto-deny"), approvals(plan_review="ask"), ["approvals.plan_review"]),
    # A question's answer authorises nothing: ask and auto-deny are both at the ceiling.
    (BUILT_IN, approvals(question="ask"), []),
    (approvals(question="ask"), approvals(question="auto-deny"), []),
    # -- timeouts ----------------------------------------------------------------------------
    (BUILT_IN, approvals(timeout_s=3599.5), []),
    (BUILT_IN, approvals(timeout_s=3601), ["approvals.timeout_s"]),
    (approvals(timeout_s=30), approvals(timeout_s=29.5), []),
    (approvals(timeout_s=30), approvals(timeout_s=31), ["approvals.timeout_s"]),
    (BUILT_IN, approvals(timeout_s=-1), ["approvals.timeout_s"]),  # no deadline
    (approvals(timeout_s=600), approvals(timeout_s=600), []),
    (approvals(timeout_s=7200), {}, []),  # the default 3600 s is shorter
    (approvals(timeout_s=600), {}, ["approvals.timeout_s"]),  # the default 3600 s is longer
    (approvals(timeout_s=10), {}, ["approvals.timeout_s"]),
    (approvals(timeout_s=10), approvals(timeout_s=-5), ["approvals.timeout_s"]),
    (approvals(timeout_s=-1), approvals(timeout_s=-1), []),
    (approvals(timeout_s=-1), approvals(timeout_s=3600), []),
    # -- fallbacks ---------------------------------------------------------------------------
    (BUILT_IN, approvals(on_timeout="continue", on_reject="continue"), []),  # the defaults
    (BUILT_IN, approvals(on_timeout="abort", on_reject="retry"), []),  # tighter than continue
    (approvals(on_timeout="abort"), approvals(on_timeout="continue"), ["approvals.on_timeout"]),
    (approvals(on_reject="abort"), approvals(on_reject="continue"), ["approvals.on_reject"]),
    (approvals(on_reject="abort"), approvals(on_reject="retry"), ["approvals.on_reject"]),
    (approvals(on_reject="abort"), {}, ["approvals.on_reject"]),  # omitted = the default continue
    (approvals(on_reject="retry"), approvals(on_reject="continue"), ["approvals.on_reject"]),
    (approvals(on_reject="continue"), approvals(on_reject="retry"), []),
    (approvals(on_reject="continue"), approvals(on_reject="abort"), []),
    (approvals(on_reject="continue"), {}, []),  # the default continue
    (approvals(on_timeout="retry", on_reject="retry"), approvals(on_timeout="abort", on_reject="abort"), []),
    (approvals(on_timeout="retry", on_reject="retry"), approvals(on_timeout="abort"), ["approvals.on_reject"]),
    # -- retries: counted only when the request retries --------------------------------------
    (approvals(on_reject="retry", max_retries=1), approvals(on_reject="retry", max_retries=1), []),
    (approvals(on_reject="retry", max_retries=1), approvals(on_reject="retry", max_retries=0), []),
    (approvals(on_reject="retry", max_retries=1), approvals(on_reject="retry", max_retries=2), ["approvals.max_retries"]),
    (approvals(on_reject="retry", max_retries=1), approvals(on_reject="retry"), ["approvals.max_retries"]),  # default 3
    (approvals(on_timeout="retry", max_retries=0), approvals(on_timeout="retry"), ["approvals.max_retries"]),
    (approvals(max_retries=0), approvals(max_retries=50), []),  # aborts: the count never matters
    (approvals(max_retries=0), {}, []),
    # -- sandbox -----------------------------------------------------------------------------
    ({"sandbox": "workspace-write"}, {"sandbox": "read-only"}, []),
    ({"sandbox": "workspace-write"}, {"sandbox": "workspace-write"}, []),
    ({"sandbox": "workspace-write"}, {"sandbox": "unrestricted"}, ["sandbox"]),
    ({"sandbox": "read-only"}, {"sandbox": "workspace-write"}, ["sandbox"]),
    ({"sandbox": "read-only"}, {}, ["sandbox"]),  # inherit: the driver's default may be wider
    ({"sandbox": "workspace-write"}, {}, ["sandbox"]),
    ({"sandbox": "unrestricted"}, {}, []),
    ({"sandbox": "unrestricted"}, {"sandbox": "workspace-write"}, []),
    (BUILT_IN, {"sandbox": "read-only"}, []),  # the narrowest is narrower than any default
    (BUILT_IN, {"sandbox": "workspace-write"}, ["sandbox"]),
    (BUILT_IN, {"sandbox": "unrestricted"}, ["sandbox"]),
    (BUILT_IN, {"sandbox": "inherit"}, []),
    # -- web search and browser --------------------------------------------------------------
    (BUILT_IN, {"web_search": "deny", "browser": "deny"}, []),
    (BUILT_IN, {"web_search": "allow"}, ["web_search"]),
    (BUILT_IN, {"browser": "allow"}, ["browser"]),
    ({"web_search": "deny"}, {}, ["web_search"]),
    ({"web_search": "deny"}, {"web_search": "allow"}, ["web_search"]),
    ({"browser": "deny"}, {"browser": "inherit"}, ["browser"]),
    ({"web_search": "allow"}, {}, []),
    ({"web_search": "allow"}, {"web_search": "deny"}, []),
    # -- several at once: all named, in document order ---------------------------------------
    (
        {"sandbox": "read-only", "approvals": {"timeout_s": 10, "on_reject": "abort"}},
        {"sandbox": "unrestricted", "web_search": "allow",
         "approvals": {"permission": "auto-approve", "timeout_s": -1, "on_reject": "continue"}},
        ["sandbox", "web_search", "approvals.permission", "approvals.timeout_s", "approvals.on_reject"],
    ),
    # -- a tightening in every field at once -------------------------------------------------
    (
        {"sandbox": "unrestricted", "web_search": "allow", "browser": "allow",
         "approvals": {"permission": "auto-approve", "plan_review": "auto-approve", "question": "ask",
                       "timeout_s": 600, "on_timeout": "continue", "on_reject": "retry", "max_retries": 5}},
        {"sandbox": "read-only", "web_search": "deny", "browser": "deny",
         "approvals": {"permission": "ask", "plan_review": "auto-deny", "question": "auto-deny",
                       "timeout_s": 60, "on_timeout": "abort", "on_reject": "retry", "max_retries": 1}},
        [],
    ),
]


@pytest.mark.parametrize("ceiling, requested, expected", ROWS)
def test_which_requested_values_loosen_the_ceiling(ceiling: dict, requested: dict, expected: list[str]) -> None:
    assert _loosened(ceiling, requested) == expected


def _document(draw: st.DrawFn) -> dict:
    doc: dict = {}
    for name, values in (("sandbox", SANDBOX), ("web_search", FEATURE), ("browser", FEATURE)):
        if draw(st.booleans()):
            doc[name] = draw(st.sampled_from(values))
    section: dict = {}
    for name in ("permission", "plan_review"):
        if draw(st.booleans()):
            section[name] = draw(st.sampled_from(ROUTING))
    if draw(st.booleans()):
        section["question"] = draw(st.sampled_from(("inherit", "ask", "auto-deny")))
    if draw(st.booleans()):
        section["timeout_s"] = draw(st.sampled_from([-1, 1, 10, 30, 31, 600]))
    for name in ("on_timeout", "on_reject"):
        if draw(st.booleans()):
            section[name] = draw(st.sampled_from(FALLBACK))
    if draw(st.booleans()):
        section["max_retries"] = draw(st.integers(0, 5))
    if section:
        doc["approvals"] = section
    return doc


documents = st.composite(_document)()


@given(documents)
def test_a_policy_never_loosens_itself(doc: dict) -> None:
    assert _loosened(doc, doc) == []


@pytest.mark.slow
@settings(max_examples=100, suppress_health_check=[HealthCheck.filter_too_much])  # 100 chains that tighten
@given(documents, documents, documents)
# (found by Hypothesis in CI: a ceiling that never retries has a count it never uses)
@example({"approvals": {"max_retries": 0}}, {}, {"approvals": {"on_reject": "retry"}})
def test_tightening_is_transitive(a: dict, b: dict, c: dict) -> None:
    """If b does not loosen a and c does not loosen b, c does not loosen a."""
    assume(not _loosened(a, b) and not _loosened(b, c))
    assert _loosened(a, c) == []


@given(documents, documents)
def test_only_known_fields_are_named_in_order(ceiling: dict, requested: dict) -> None:
    loose = _loosened(ceiling, requested)
    assert loose == [field for field in CEILING_FIELDS if field in loose]


def test_an_omitted_field_is_explained_as_the_built_in_default() -> None:
    requested, ceiling = materialise(parse_run_policy({})), materialise(parse_run_policy(approvals(timeout_s=10)))
    said = describe_loosening("approvals.timeout_s", requested, ceiling, given=False)
    assert "not given" in said and "3600 s" in said and "10 s" in said
    assert describe_loosening("sandbox", {"sandbox": "unrestricted"}, {"sandbox": "inherit"}, given=True) == (
        "sandbox unrestricted is looser than the administrator's policy (the driver's default)"
    )


def test_given_fields_are_the_explicit_ones() -> None:
    policy = parse_run_policy({"sandbox": "inherit", "approvals": {"permission": "ask", "max_retries": 0}})
    assert given_fields(policy) == {"approvals.permission", "approvals.max_retries"}
