"""A git command that runs the repository's hooks runs what they call: often the
workspace's own files (`npm test`, husky's `.husky/pre-commit`, `.pre-commit-config.yaml`),
which the agent may edit without asking. The hooks themselves are protected paths; a
repository that has any makes the git commands that run them asked about."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from approvals.policy import DEFAULT_POLICY, PathContext

from .policytest import assert_cases, bash, make_sandbox


@pytest.fixture
def sandbox(tmp_path):
    """A sandbox of this test's own (the shared one is the module's): hooks are installed per test."""
    return make_sandbox(tmp_path)


RUN_HOOKS = ("git commit -m wip", "git merge feature", "git checkout -b x", "git pull", "git rebase main",
             "git cherry-pick abc", "git revert HEAD", "cd src && git commit -m y", "git -C . commit -m z")
NO_HOOKS = ("git status", "git log --oneline", "git diff", "git add -A", "git branch", "git show HEAD")


def _repo(workspace: str) -> Path:
    subprocess.run(["git", "init", "-q", workspace], check=True)
    return Path(workspace) / ".git"


def _hook(git_dir: Path, name: str) -> None:
    hook = git_dir / "hooks" / name
    hook.write_text("#!/bin/sh\nnpm test\n")
    hook.chmod(0o755)


def _table(asked: tuple[str, ...], allowed: tuple[str, ...]) -> list:
    return [("bash", bash(c), "ask", "commands.interpreter") for c in asked] + \
        [("bash", bash(c), "allow", None) for c in allowed]


def test_without_hooks_git_stays_a_local_change(sandbox):
    git_dir = _repo(sandbox.workspace)
    assert any(p.name.endswith(".sample") for p in (git_dir / "hooks").iterdir())  # samples do not run
    assert_cases(DEFAULT_POLICY, _table((), RUN_HOOKS + NO_HOOKS), paths=sandbox.context, cwd=sandbox.workspace)


@pytest.mark.parametrize("install", ["pre-commit", "post-checkout", "core.hooksPath"])
def test_a_repository_with_hooks_asks_before_git_runs_them(sandbox, install):
    git_dir = _repo(sandbox.workspace)
    if install == "core.hooksPath":  # as husky sets it: hooks in the workspace
        subprocess.run(["git", "-C", sandbox.workspace, "config", "core.hooksPath", ".husky/_"], check=True)
    else:
        _hook(git_dir, install)
    assert_cases(DEFAULT_POLICY, _table(RUN_HOOKS, NO_HOOKS), paths=sandbox.context, cwd=sandbox.workspace)


def test_hooks_that_run_on_any_command_make_every_git_command_asked(sandbox):
    _hook(_repo(sandbox.workspace), "reference-transaction")
    assert_cases(DEFAULT_POLICY, _table(RUN_HOOKS + NO_HOOKS, ()), paths=sandbox.context, cwd=sandbox.workspace)


def test_a_rule_naming_the_command_allows_it(sandbox):
    _hook(_repo(sandbox.workspace), "pre-commit")
    policy = {**DEFAULT_POLICY, "commands": {"allow": ["git commit -m wip"]}}
    assert_cases(policy, [("bash", bash("git commit -m wip"), "allow", "commands.allow[0]")], paths=sandbox.context,
                 cwd=sandbox.workspace)


def test_the_repository_above_gatehouse_s_var_directory_is_not_looked_at(sandbox):
    # Agents run git with GIT_CEILING_DIRECTORIES (drivers/agent_env.py): from a workspace
    # that is no repository, git never reaches one that holds the var directory.
    _hook(_repo(str(sandbox.root)), "pre-commit")
    assert_cases(DEFAULT_POLICY, _table((), ("git commit -m wip",)), paths=sandbox.context, cwd=sandbox.workspace)


def test_without_the_file_system_no_hook_is_seen(sandbox):
    _hook(_repo(sandbox.workspace), "pre-commit")
    context = PathContext(sandbox.workspace, sandbox.context.homes, sandbox.context.protected_dirs, filesystem=False)
    assert_cases(DEFAULT_POLICY, _table((), ("git commit -m wip",)), paths=context, cwd=sandbox.workspace)


@pytest.mark.parametrize("key, value, asked", [
    ("core.fsmonitor", "tools/watch.sh", True),  # `git status` runs it
    ("filter.x.clean", "./scripts/clean %f", True),
    ("include.path", "../settings.inc", True),  # a file the agent may edit, holding any setting
    ("filter.lfs.clean", "git-lfs clean -- %f", False),  # a program of the machine
    ("core.pager", "less -R", False),
])
def test_a_repository_setting_naming_a_program_of_the_workspace_asks_on_any_git_command(sandbox, key, value, asked):
    _repo(sandbox.workspace)
    subprocess.run(["git", "-C", sandbox.workspace, "config", key, value], check=True)
    table = _table(NO_HOOKS, ()) if asked else _table((), NO_HOOKS)
    assert_cases(DEFAULT_POLICY, table, paths=sandbox.context, cwd=sandbox.workspace)
