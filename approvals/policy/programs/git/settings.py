"""git settings and options that name a program for git to run (`git -c core.pager=…`,
`git rebase --exec`, `git --git-dir` of another repository whose config names programs)."""

from __future__ import annotations

import re

from ...command import SimpleCommand
from ..invocation import Invocation

# git settings that name a program to run (lower-cased; `*` any part)
GIT_EXEC_KEYS = re.compile(
    r"^(core\.(pager|editor|sshcommand|fsmonitor|hookspath|askpass|gitproxy|alternaterefscommand)|"
    r"sequence\.editor|diff\.external|diff\..*\.(command|textconv)|merge\..*\.driver|filter\..*|"
    r"credential\.(.*\.)?helper|alias\..*|pager\..*|gpg\.(.*\.)?program|uploadpack\.packobjectshook|"
    r"include\..*|includeif\..*|protocol\..*|(merge|diff)tool\..*|web\.browser|browser\..*|man\..*|"
    r"remote\..*\.(uploadpack|receivepack|vcs)|init\.templatedir|submodule\..*\.update|sendemail\..*|"
    r"core\.worktree|ssh\.variant|http\..*\.proxy|uploadpack\..*|receive\..*|transfer\.fsckobjects)$"
)
SUB_CODE = {
    "rebase": ("-x", "--exec", "-i"), "difftool": ("-x",), "grep": ("-O",), "send-email": ("--sendmail-cmd",),
    "fetch": ("--upload-pack",), "pull": ("--upload-pack",), "clone": ("-u", "--template", "--separate-git-dir"),
    "ls-remote": ("--upload-pack", "-u"), "push": ("--receive-pack",), "archive": ("--exec",),
    # a template's hooks are copied into the new repository; a separate git directory is
    # one the agent names, whose config (not a protected `.git/config`) it could then write
    "init": ("--template", "--separate-git-dir"),
}
_RUNS_COMMANDS = ("bisect", "submodule", "filter-branch", "config")


def may_run_code(inv: Invocation) -> bool:
    return bool(inv.values) or inv.subcommand in SUB_CODE or inv.subcommand in _RUNS_COMMANDS


def git_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    sub = inv.subcommand
    if not inv.values and sub not in SUB_CODE and sub not in _RUNS_COMMANDS:
        return None
    for setting in inv.values.get("-c", ()):
        key = setting.split("=", 1)[0].lower()
        if GIT_EXEC_KEYS.match(key):
            return f"`git -c {key}=…` names a program for git to run"
    if inv.options & {"--config-env", "--exec-path"} and (inv.values.get("--config-env") or inv.values.get("--exec-path")):
        return "`git` is told to run programs from a setting or a directory"
    for git_dir in inv.values.get("--git-dir", ()):
        # A repository git finds itself is `.git`, whose files are protected; one named
        # explicitly may be any directory (a bare `x.git` the agent wrote): its config
        # can name programs git runs (`diff.external`, `gpg.program`, filters…).
        if git_dir.rstrip("/").rsplit("/", 1)[-1] != ".git":
            return "`git --git-dir` uses another repository's settings, which can name programs git runs"
    if sub in SUB_CODE and inv.options & set(SUB_CODE[sub]):
        return f"`git {sub}` runs a command given on its command line"
    if sub in ("bisect",) and inv.operands[:1] == ("run",):
        return "`git bisect run` runs a command"
    if sub == "submodule" and "foreach" in inv.operands:
        return "`git submodule foreach` runs a command"
    if sub == "filter-branch":
        return "`git filter-branch` runs filter commands"
    if sub == "config":
        keys = [w.lower() for w in inv.operands if "." in w][:1]
        if keys and GIT_EXEC_KEYS.match(keys[0]) and not (inv.options & {"--get", "--get-all", "-l", "--list",
                                                                           "--unset", "--unset-all"}):
            return f"`git config {keys[0]}` names a program for git to run"
    for setting in inv.values.get("-c", ()) if sub == "clone" else ():
        if GIT_EXEC_KEYS.match(setting.split("=", 1)[0].lower()):
            return "`git clone -c` names a program for git to run"
    return None
