"""A recursive read reads every file under its path: a `reads` deny or ask rule on a file
is not sidestepped by searching the directory that holds it (`grep -r KEY .`, `rg KEY`,
the Grep tool with or without a path), inside the workspace or from a tree that contains
it."""

from __future__ import annotations

from pathlib import Path

import pytest

from approvals.policy import DEFAULT_POLICY, compile_policy, evaluate, path_eval
from tests.approvals.policy.policytest import assert_cases, bash, secrets_context, secrets_workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return secrets_workspace(tmp_path)


def test_a_reads_deny_holds_for_recursive_searches_of_the_tree_that_holds_the_file(workspace: Path) -> None:
    policy = {"reads": {"deny": [".env*"]}, **DEFAULT_POLICY}
    assert_cases(policy, [
        ("bash", bash("grep -r KEY ."), "deny", "reads.deny[0]"),
        ("bash", bash("grep -rn KEY"), "deny", "reads.deny[0]"),  # no path: the working directory
        ("bash", bash("rg KEY"), "deny", "reads.deny[0]"),
        ("bash", bash("rg -n KEY ."), "deny", "reads.deny[0]"),
        ("bash", bash("grep -R KEY config"), "deny", "reads.deny[0]"),
        ("bash", bash("grep -r KEY .."), "deny", "reads.deny[0]"),  # a tree that contains the workspace
        ("bash", bash(f"grep -r KEY {workspace.parent}"), "deny", "reads.deny[0]"),
        ("Grep", {"pattern": "KEY"}, "deny", "reads.deny[0]"),
        ("Grep", {"pattern": "KEY", "path": "."}, "deny", "reads.deny[0]"),
        ("Grep", {"pattern": "KEY", "path": "config"}, "deny", "reads.deny[0]"),
        # A tree without such a file, and a non-recursive search, are decided as before.
        ("bash", bash("grep -rn KEY src"), "allow", None),
        ("bash", bash("rg KEY src"), "allow", None),
        ("Grep", {"pattern": "KEY", "path": "src"}, "allow", "classes.read-only"),
        ("bash", bash("grep KEY src/app.py"), "allow", None),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_respelled_wrapped_and_relocated_searches_are_held_to_the_same_rule(workspace: Path) -> None:
    """Trying to get around it: other spellings of recursion, wrappers and nested shells, a
    `cd` out and back, a link to the workspace, other programs that read a whole tree."""
    (workspace / "loop").symlink_to(workspace)
    policy = {"reads": {"deny": [".env*"]}, **DEFAULT_POLICY}
    assert_cases(policy, [(("bash", bash(command), "deny", "reads.deny[0]")) for command in (
        "grep --recursive KEY .", "grep -d recurse KEY .", "grep --directories=recurse KEY .", "egrep -r KEY .",
        "grep -rIl KEY", "env grep -r KEY .", "sudo grep -r KEY .", "bash -c 'grep -r KEY .'",
        "cd .. && grep -r KEY ws", "cd src && grep -r KEY ..", "grep -r KEY ./src/..", "grep -r KEY loop",
        "grep -r KEY $PWD", "ag KEY", "ack KEY", "ugrep -r KEY .", "tar cf - . | cat", "cp -r . /tmp/copy",
        "zip -r /tmp/copy.zip .", "rsync -a . /tmp/copy",
    )] + [
        ("Grep", {"pattern": "KEY", "path": "../ws"}, "deny", "reads.deny[0]"),
        ("Grep", {"pattern": "KEY", "path": "loop"}, "deny", "reads.deny[0]"),
        ("Grep", {"pattern": "KEY", "glob": "*.py"}, "deny", "reads.deny[0]"),  # its filters are not trusted
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_the_reason_names_the_file_the_search_would_read(workspace: Path) -> None:
    compiled = compile_policy({"reads": {"deny": [".env*"]}, **DEFAULT_POLICY})
    verdict = evaluate(compiled, {"tool": "bash", "input": bash("grep -r KEY ."), "cwd": str(workspace)},
                       paths=secrets_context(workspace))
    assert verdict.decision == "deny", verdict
    assert "reads `.env`" in verdict.reason or "reads `config/.env.local`" in verdict.reason, verdict.reason


def test_an_ask_rule_asks_for_a_search_that_reaches_its_files(workspace: Path) -> None:
    policy = {"reads": {"ask": ["config/**"]}, **DEFAULT_POLICY}
    assert_cases(policy, [
        ("bash", bash("grep -r KEY ."), "ask", "reads.ask[0]"),
        ("bash", bash("grep -r KEY src"), "allow", None),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_a_tree_too_large_to_check_is_asked_about(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(10):
        (workspace / "src" / f"m{i}.py").write_text("")
    monkeypatch.setattr(path_eval, "TREE_SCAN_LIMIT", 5)
    policy = {"reads": {"deny": ["secrets/**"]}, **DEFAULT_POLICY}
    assert_cases(policy, [
        ("bash", bash("grep -r KEY src"), "ask", "reads.tree"),
        ("bash", bash("grep KEY src/app.py"), "allow", None),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_without_reads_rules_or_a_file_system_nothing_is_walked(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(path_eval, "TREE_SCAN_LIMIT", 1)  # any walk would ask
    assert_cases(DEFAULT_POLICY, [("bash", bash("grep -r KEY src"), "allow", None)],
                 paths=secrets_context(workspace), cwd=str(workspace))
    # Policy examples resolve by text alone: the same answer on every machine.
    assert_cases({"reads": {"deny": [".env*"]}, **DEFAULT_POLICY}, [("bash", bash("grep -r KEY src"), "allow", None)],
                 paths=secrets_context(workspace, filesystem=False), cwd=str(workspace))
