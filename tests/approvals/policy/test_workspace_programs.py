"""A program named by a path inside the workspace is the workspace's code, never the known
program of the same name; settings a tool reads from the workspace (a bare repository's
config, a venv's pip.conf, a project's .ackrc) are code of the workspace's too."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from approvals.policy import DEFAULT_POLICY, PathContext, RunView, compile_policy, evaluate

DEFAULT = compile_policy(DEFAULT_POLICY)


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("print(1)\n")
    for name in ("ls", "git", "sort"):
        (ws / name).write_text("#!/bin/sh\necho pwned\n")
        (ws / name).chmod(0o755)
    (ws / "bin").mkdir()
    os.symlink("/bin/ls", ws / "bin" / "list")  # a link to the system's ls
    os.symlink("../git", ws / "bin" / "rm")  # a link to the workspace's own file
    (ws / ".venv" / "bin").mkdir(parents=True)
    (ws / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (ws / ".venv" / "bin" / "pip").write_text("#!/bin/sh\n")
    return ws


def decide(ws: Path, command: str, policy=DEFAULT, floor: bool = False, cwd: Path | None = None):
    paths = PathContext(workspace=str(ws), homes=(str(ws.parent / "home"),))
    return evaluate(policy, {"tool": "bash", "input": {"command": command}, "cwd": str(cwd or ws)}, paths=paths,
                    run_view=RunView(floor=floor))


@pytest.mark.parametrize("command", ["./ls -la", "./git status", "./sort src/app.py", ".venv/bin/pip install requests",
                                     ".venv/bin/python -m pip install requests", "bin/rm x", "src/../ls"])
def test_a_program_named_by_a_path_in_the_workspace_is_its_code_floor_or_not(workspace, command):
    for floor in (False, True):
        verdict = decide(workspace, command, floor=floor)
        assert verdict.decision == "ask" and "commands.workspace-program" in verdict.floors, (command, verdict)
        assert any(s.rule == "commands.workspace-program" and "is a program of the workspace" in s.reason
                   for s in verdict.segments)


def test_an_allow_rule_naming_the_program_does_not_allow_the_workspace_s_file(workspace):
    allowing = compile_policy(dict(DEFAULT_POLICY, commands={"allow": ["ls", "git status"]}))
    assert decide(workspace, "./ls", policy=allowing).decision == "ask"
    assert decide(workspace, "ls", policy=allowing).decision == "allow"


def test_the_system_s_program_and_a_link_to_it_stay_known(workspace):
    for command in ("/bin/ls -la", "ls -la", "bin/list -la", "git status"):
        assert decide(workspace, command).decision == "allow", command
    deny_list = compile_policy({"commands": {"deny": ["rm -rf"], "default": "allow"}, "default": "allow"})
    assert decide(workspace, "./rm -rf /", policy=deny_list).decision == "deny"  # its name still meets deny rules


def test_a_bare_repository_in_the_workspace_is_its_code(workspace):
    bare = workspace / "mirror.git"
    for sub in ("objects", "refs"):
        (bare / sub).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    (bare / "config").write_text("[core]\n\tpager = /tmp/x\n")
    verdict = decide(workspace, "git log", cwd=bare)
    assert (verdict.decision, verdict.rule) == ("ask", "commands.interpreter"), verdict
    assert "mirror.git" in verdict.reason and "settings and hooks" in verdict.reason
    assert decide(workspace, "git log").decision == "allow"  # elsewhere in the workspace


def test_a_pip_conf_in_a_venv_of_the_workspace_makes_pip_ask(workspace):
    assert decide(workspace, "pip install requests").decision == "allow"
    (workspace / ".venv" / "pip.conf").write_text("[global]\nindex-url = file:///tmp/x\n")
    verdict = decide(workspace, "pip install requests", floor=True)
    assert (verdict.decision, verdict.rule) == ("ask", "commands.interpreter") and "pip.conf" in verdict.reason


def test_a_project_ackrc_is_read_for_the_pager_it_may_name(workspace):
    assert decide(workspace, "ack TODO src").decision == "allow"
    (workspace / ".ackrc").write_text("--pager=./x\n")
    assert decide(workspace, "ack TODO src", cwd=workspace / "src").rule == "commands.interpreter"
    assert decide(workspace, "ack --noenv TODO src").decision == "allow"


@pytest.mark.parametrize("variable", ["HG_EXTERNAL_DIFF", "SVN_EDITOR", "FOO_ASKPASS", "X_SSH_COMMAND"])
def test_tools_variables_that_name_a_program_are_asked_about(workspace, variable):
    assert decide(workspace, f"{variable}=./x git diff").rule == "commands.environment"
