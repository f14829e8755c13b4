"""Rules learned from approvals (issue 32, item 1), the policy core's part: which shapes are
suggested, and that a suggested allow rule never allows what a deny rule, a protected path
or a secret forbids."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from approvals.policy import compile_policy, evaluate, validate_request
from approvals.policy import insights as learn
from approvals.policy.grants import suggest_grant

PYTEST = {"tool": "bash", "match": "pytest -q"}


def approvals(shape, n, *, cls="local-mutation", reviewer=1, outcome="approved", seconds=5.0, exact=False):
    return [learn.Record(shape, cls, outcome, reviewer, seconds, exact) for _ in range(n)]


def test_a_shape_approved_ten_times_by_a_person_and_never_denied_is_suggested():
    [found] = learn.suggest(approvals(PYTEST, 10))
    assert (found.section, found.rule, found.approved, found.denied) == ("commands", "pytest -q", 10, 0)
    assert learn.suggest(approvals(PYTEST, 9)) == []
    assert learn.suggest(approvals(PYTEST, 3), threshold=3)


def test_one_denial_or_a_class_never_suggested_or_an_exact_command_keeps_it_a_question():
    assert learn.suggest(approvals(PYTEST, 12) + approvals(PYTEST, 1, outcome="denied")) == []
    for cls in ("destructive", "protected", "remote-mutation", "outside-workspace"):
        assert learn.suggest(approvals({"tool": "bash", "match": "git push"}, 20, cls=cls)) == [], cls
    assert learn.suggest(approvals({"tool": "bash", "match": "python -c 'print(1)'"}, 20, exact=True)) == []


def test_what_a_grant_or_a_mode_approved_is_no_person_s_approval():
    assert learn.suggest(approvals(PYTEST, 20, outcome="approved-by-grant", reviewer=None)) == []
    assert learn.suggest(approvals(PYTEST, 20, reviewer=None)) == []


def test_each_shape_becomes_an_allow_rule_of_its_section():
    assert learn.rule_of({"tool": "write", "match": "src/**"}) == ("edits", "src/**")
    assert learn.rule_of({"tool": "read", "match": "docs/**"}) == ("reads", "docs/**")
    assert learn.rule_of({"tool": "network", "match": "pypi.org"}) == ("network", "pypi.org")
    assert learn.rule_of({"tool": "deployPreview"}) == ("tools", "deployPreview")
    doc = learn.with_rule({"commands": {"allow": ["ls"], "deny": ["git push"]}}, "commands", "pytest -q")
    assert doc["commands"] == {"allow": ["ls", "pytest -q"], "deny": ["git push"]}
    assert learn.with_rule(doc, "commands", "pytest -q") == doc  # already there: unchanged
    assert learn.with_rule({}, "tools", "deployPreview") == {"tools": {"deployPreview": "allow"}}


def test_fast_approvals_are_rubber_stamp_candidates():
    records = approvals(PYTEST, 5, seconds=0.8) + approvals({"tool": "bash", "match": "make"}, 5, seconds=40.0)
    assert [s.rule for s in learn.rubber_stamps(records)] == ["pytest -q"]


def test_rates_by_class_count_asked_approved_and_denied():
    records = approvals(PYTEST, 3) + approvals(PYTEST, 1, outcome="denied") + approvals(PYTEST, 1, outcome="expired")
    [row] = learn.rates_by(records, "class")
    assert (row["asked"], row["approved"], row["denied"], row["rate"]) == (5, 3, 1, 0.75)


# -- a learned rule never loosens what is forbidden ---------------------------------------------

POLICY = {
    "commands": {"deny": ["git push", "rm -rf", "curl"]},
    "edits": {"deny": [".env*", "secrets/**"]},
    "reads": {"deny": [".env*"]},
    "classes": {"read-only": "allow", "local-mutation": "ask", "remote-mutation": "ask", "destructive": "deny",
                "protected": "deny"},
    "default": "ask",
}
PROGRAMS = ["git push", "git status", "rm -rf", "rm", "curl", "pytest", "npm run build", "make", "cat", "ls", "python"]
ARGS = ["", "-q", "origin main", "build", ".env", "src/app.py", "https://example.com", "--force", "~/.ssh/id_rsa", "../x"]
PATHS = [".env", ".env.local", "secrets/key.pem", "src/app.py", ".git/config", "../outside.txt", "docs/a.md",
         ".bashrc", ".claude/settings.json"]


def _request(tool: str, value: str, workspace: str) -> dict:
    if tool == "bash":
        return validate_request({"tool": "bash", "input": {"command": value}, "cwd": workspace})
    return validate_request({"tool": tool, "input": {"file_path": value}, "cwd": workspace})


def _all_requests(workspace: str) -> list[dict]:
    out = [_request("bash", f"{program} {args}".strip(), workspace) for program in PROGRAMS for args in ARGS]
    return out + [_request(tool, path, workspace) for tool in ("write", "read") for path in PATHS]


WORKSPACE = str(Path(tempfile.gettempdir()) / "gatehouse-insights-property" / "ws")
Path(WORKSPACE).mkdir(parents=True, exist_ok=True)
BASE = compile_policy(POLICY)
REQUESTS = _all_requests(WORKSPACE)


def _learned(req: dict) -> list[tuple[str, str, str | None]]:
    """What approving `req` (if the policy asks about it) could teach, as insights suggests it."""
    verdict = evaluate(BASE, req)
    grant = suggest_grant(req, verdict) if verdict.decision == "ask" else None
    if grant is None:
        return []
    record = learn.Record(grant[0], verdict.side_effect_class or "", "approved", "reviewer", 5.0,
                          grant[1].startswith("Always allow exactly"))
    return [(s.section, s.rule, s.up_to) for s in learn.suggest([record], threshold=1)]


# every rule a person's approvals could teach (from what the policy asks, as the record holds it)
LEARNABLE = sorted({rule for req in REQUESTS for rule in _learned(req)}, key=str)
# every request the policy denies: no learned rule may allow one
FORBIDDEN = [req for req in REQUESTS if evaluate(BASE, req).decision in ("deny", "abort")]


def test_the_property_below_has_rules_to_learn_and_denials_to_keep():
    assert len(LEARNABLE) >= 10 and len(FORBIDDEN) >= 20, (len(LEARNABLE), len(FORBIDDEN))


@settings(max_examples=300, deadline=None)
@given(rule=st.sampled_from(LEARNABLE), target=st.sampled_from(FORBIDDEN))
def test_a_rule_learned_from_any_approval_never_allows_what_was_denied(rule, target):
    # (found by this property: `rm` learned from `rm -q` allowed `rm --force`, a destructive
    # command the classes deny; a learned command rule now carries `up_to`)
    before = evaluate(BASE, target).decision
    after = evaluate(compile_policy(learn.with_rule(POLICY, *rule)), target).decision
    assert after == before, (rule, target, before, after)


def test_a_learned_command_rule_is_bounded_by_the_classes_people_approved():
    [found] = learn.suggest(approvals({"tool": "bash", "match": "rm"}, 10, cls="local-mutation"))
    assert found.up_to == "local-mutation"
    doc = learn.with_rule(POLICY, "commands", found.rule, found.up_to)
    assert {"match": "rm", "up_to": "local-mutation"} in doc["commands"]["allow"]
    policy = compile_policy(doc)
    request = _request("bash", "rm -r src", WORKSPACE)
    assert evaluate(policy, request).decision == "deny"  # destructive: the class still decides
    assert evaluate(policy, _request("bash", "rm notes.txt", WORKSPACE)).decision == "allow"


@pytest.mark.parametrize("command", ["rm -r src", "rm -R src", "rm --recursive src", "rm -fr src", "command rm -r src",
                                     "sudo rm -r src", "bash -c 'rm -r src'", "env X=1 rm --force --recursive src",
                                     "/bin/rm -r src", "cd . && rm -r src"])
def test_a_bounded_learned_rule_is_not_got_around_by_a_respelling_or_a_wrapper(command):
    policy = compile_policy(learn.with_rule(POLICY, "commands", "rm", "local-mutation"))
    assert evaluate(policy, _request("bash", command, WORKSPACE)).decision != "allow", command
