"""A table-test helper in the spirit of a policy testkit.

`assert_cases(policy, cases)` evaluates every case and, when any disagree, fails once
with a table of all disagreements (tool, input, expected, got).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from approvals.policy import Decision, PathContext, RunView, compile_policy, evaluate

CWD = "/home/dev/project"


def _case(case) -> tuple[str, dict, str, str | None, dict]:
    tool, tool_input, decision, rule, *rest = case
    extra = rest[0] if rest else {}
    return tool, tool_input, decision, rule, extra


def disagreements(policy: Mapping, cases: Sequence, *, paths: PathContext | None = None,
                  cwd: str | None = None, run_view: RunView | None = None) -> list[tuple[str, str, str, str]]:
    compiled = compile_policy(policy)
    rows = []
    for case in cases:
        tool, tool_input, want_decision, want_rule, extra = _case(case)
        request = {"tool": tool, "input": tool_input, "cwd": extra.get("cwd", cwd or CWD)}
        verdict = evaluate(compiled, request, run_view=extra.get("run_view", run_view), grants=extra.get("grants", ()),
                           paths=paths)
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


def assert_cases(policy: Mapping, cases: Sequence, *, paths: PathContext | None = None, cwd: str | None = None,
                 run_view: RunView | None = None) -> None:
    rows = disagreements(policy, cases, paths=paths, cwd=cwd, run_view=run_view)
    if rows:
        table = format_table(rows)
        print(table)
        raise AssertionError(f"{len(rows)} of {len(cases)} cases disagree:\n{table}")


def assert_at_least(policy: Mapping, cases: Sequence, *, paths: PathContext | None = None,
                    cwd: str | None = None, run_view: RunView | None = None) -> None:
    """Like assert_cases, but a case passes with its decision or a stricter one."""
    compiled = compile_policy(policy)
    rows = []
    for case in cases:
        tool, tool_input, want, _, extra = _case(case)
        request = {"tool": tool, "input": tool_input, "cwd": extra.get("cwd", cwd or CWD)}
        verdict = evaluate(compiled, request, run_view=extra.get("run_view", run_view), grants=extra.get("grants", ()),
                           paths=paths)
        if verdict.decision.severity < Decision(want).severity:
            rows.append((tool, json.dumps(tool_input, ensure_ascii=False), f"at least {want}",
                         f"{verdict.decision} {verdict.rule}"))
    if rows:
        table = format_table(rows)
        print(table)
        raise AssertionError(f"{len(rows)} of {len(cases)} cases are too lenient:\n{table}")


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

# The deny list of issue 9 ("no way around a rule"): everything else allowed by its default.
DENY_LIST_POLICY = {"commands": {"deny": ["rm -rf", "git push", "curl"], "default": "allow"}, "default": "ask"}


def bash(command: str) -> dict:
    return {"command": command}


def secrets_workspace(root: Path) -> Path:
    """A workspace under `root` holding secrets a `reads` rule may deny (`.env`,
    `config/.env.local`) beside ordinary code (`src/app.py`); `root/home` is its home."""
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("KEY = None\n")
    (ws / "config").mkdir()
    (ws / "config" / ".env.local").write_text("KEY=local\n")
    (ws / ".env").write_text("KEY=hunter2\n")
    return ws


def secrets_context(ws: Path, *, filesystem: bool = True) -> PathContext:
    """The PathContext of a `secrets_workspace`."""
    return PathContext(workspace=str(ws), homes=(str(ws.parent / "home"),), filesystem=filesystem)


class Sandbox:
    """Paths of a sandbox made by `make_sandbox`; `context` is the run's PathContext."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.workspace = str(root / "var" / "workspaces" / "run-1")
        self.home = str(root / "home" / "dev")
        self.agent_home = str(root / "var" / "runtime" / "run-1" / "home")
        self.var = str(root / "var")
        self.context = PathContext(self.workspace, (self.home, self.agent_home), (self.var,))


def make_sandbox(root: Path) -> Sandbox:
    """The workspace lies inside Gatehouse's var directory (as by default), beside another
    run's; it holds ordinary files, a `.env`, a git hooks directory and symlinks that lead
    out of it (to /etc, to the home's .ssh and .bashrc, up two levels) and one that stays in."""
    box = Sandbox(root)
    ws = Path(box.workspace)
    for directory in (ws / "src", ws / "build", ws / ".git" / "hooks", ws / ".claude",
                      Path(box.home) / ".ssh", Path(box.agent_home) / ".ssh", root / "var" / "workspaces" / "other"):
        directory.mkdir(parents=True, exist_ok=True)
    for file in (ws / "src" / "app.py", ws / ".env", ws / "README.md", Path(box.home) / ".ssh" / "id_rsa",
                 Path(box.home) / ".bashrc", root / "var" / "secret_key"):
        file.write_text("x")
    (ws / "etc-link").symlink_to("/etc")
    (ws / "keys").symlink_to(Path(box.home) / ".ssh")
    (ws / "rc").symlink_to(Path(box.home) / ".bashrc")
    (ws / "up").symlink_to("../..")
    (ws / "other-run").symlink_to(root / "var" / "workspaces" / "other")
    (ws / "source-link").symlink_to("src")
    (ws / "hooks-link").symlink_to(".git/hooks")
    (root / "elsewhere").mkdir()
    (ws / "elsewhere-link").symlink_to(root / "elsewhere")  # out of the workspace, to nothing protected
    (ws / "rmlink").symlink_to("/bin/rm")  # a program under another name
    (ws / "shlink").symlink_to("/bin/sh")
    return box
