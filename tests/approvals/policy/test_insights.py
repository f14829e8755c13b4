"""Rules learned from approvals (issue 32, item 1), the policy core's part: which shapes are
suggested, and that a suggested allow rule never allows what a deny rule, a protected path
or a secret forbids."""

from __future__ import annotations

from pathlib import Path

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


def _request(tool: str, value: str) -> dict:
    if tool == "bash":
        return {"tool": "bash", "input": {"command": value}, "cwd": "/work/ws"}
    return {"tool": tool, "input": {"file_path": value}, "cwd": "/work/ws"}


@settings(max_examples=300, deadline=None)
@given(
    learned_from=st.tuples(st.sampled_from(["bash", "write", "read"]), st.sampled_from(PROGRAMS), st.sampled_from(ARGS),
                           st.sampled_from(PATHS)),
    tried=st.tuples(st.sampled_from(["bash", "write", "read"]), st.sampled_from(PROGRAMS), st.sampled_from(ARGS),
                    st.sampled_from(PATHS)),
)
def test_a_rule_learned_from_any_approval_never_allows_what_was_denied(learned_from, tried, tmp_path_factory):
    workspace = str(tmp_path_factory.getbasetemp() / "ws")
    Path(workspace).mkdir(exist_ok=True)
    base = compile_policy(POLICY)

    def request(parts):
        tool, program, args, path = parts
        value = f"{program} {args}".strip() if tool == "bash" else path
        req = _request(tool, value)
        req["cwd"] = workspace
        return validate_request(req)

    learned = request(learned_from)
    verdict = evaluate(base, learned)
    if verdict.decision != "ask":
        return  # only what was asked (and approved) is learned from
    suggested = suggest_grant(learned, verdict)
    if suggested is None:
        return
    rule = learn.rule_of(suggested[0])
    if rule is None:
        return
    richer = compile_policy(learn.with_rule(POLICY, *rule))
    target = request(tried)
    before = evaluate(base, target).decision
    after = evaluate(richer, target).decision
    if before in ("deny", "abort"):
        assert after == before, (rule, target, before, after)


def test_an_interpreter_alone_is_never_suggested_only_the_script_approved_could_be():
    # `node scripts/gen.js` approved forty times must not become `node`: it would allow any script.
    for runner in ("node", "python", "bash", "npx"):
        assert learn.suggest(approvals({"tool": "bash", "match": runner}, 40)) == [], runner
    assert [s.rule for s in learn.suggest(approvals({"tool": "bash", "match": "npm test"}, 40))] == ["npm test"]
