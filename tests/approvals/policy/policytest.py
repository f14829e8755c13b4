"""A table-test helper in the spirit of a policy testkit.

`assert_cases(policy, cases)` evaluates every case and, when any disagree, fails once
with a table of all disagreements (tool, input, expected, got).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from approvals.policy import compile_policy, evaluate

CWD = "/home/dev/project"


def _case(case) -> tuple[str, dict, str, str | None, dict]:
    tool, tool_input, decision, rule, *rest = case
    extra = rest[0] if rest else {}
    return tool, tool_input, decision, rule, extra


def disagreements(policy: Mapping, cases: Sequence) -> list[tuple[str, str, str, str]]:
    compiled = compile_policy(policy)
    rows = []
    for case in cases:
        tool, tool_input, want_decision, want_rule, extra = _case(case)
        request = {"tool": tool, "input": tool_input, "cwd": extra.get("cwd", CWD)}
        verdict = evaluate(compiled, request, run_view=extra.get("run_view"), grants=extra.get("grants", ()))
        got = (verdict.decision, verdict.rule)
        want = (want_decision, want_rule if want_rule is not None else verdict.rule)
        if got != want:
            rows.append((tool, json.dumps(tool_input, ensure_ascii=False), f"{want[0]} {want[1]}",
                         f"{got[0]} {got[1]}"))
    return rows


def format_table(rows) -> str:
    header = ("tool", "input", "expected", "got")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(4)]
    line = " | ".join(f"{{:<{w}}}" for w in widths)
    out = [line.format(*header), "-+-".join("-" * w for w in widths)]
    out += [line.format(*row) for row in rows]
    return "\n".join(out)


def assert_cases(policy: Mapping, cases: Sequence) -> None:
    rows = disagreements(policy, cases)
    if rows:
        table = format_table(rows)
        print(table)
        raise AssertionError(f"{len(rows)} of {len(cases)} cases disagree:\n{table}")


# The rule policy of the policy-engine issue, used by many tables.
ISSUE_POLICY = {
    "commands": {
        "allow": ["ls", "cat", "git status", "npm run test:*"],
        "ask": ["git commit"],
        "deny": [{"match": "git push", "reason": "The application publishes the changes."}, "rm -rf"],
        "default": "ask",
    },
    "edits": {"allow": ["src/**"], "ask": [], "deny": [".env*"], "default": "ask"},
    "tools": {"webSearch": "allow", "deployPreview": "ask", "dropDatabase": {"decision": "deny", "reason": "Never."}},
    "classes": {"read-only": "allow", "local-mutation": "allow", "remote-mutation": "ask", "destructive": "deny"},
    "limits": {"max_tool_calls": 200, "max_denials": 20},
    "default": "ask",
}
