"""What a git command does that git's model cannot vouch for: fetching from a repository
named by its URL (a host nobody listed, not a remote the repository's protected config
names), and reflog actions that drop history."""

from __future__ import annotations

import re

from ...command import SimpleCommand
from ..invocation import WILD, Invocation

# `scheme://…`, `user@host:path` and `host:path` (scp-like: a colon before any slash)
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[^/:]+:")
_FETCHES = frozenset({"fetch", "pull", "clone", "ls-remote"})
_REFLOG_LOOKS = frozenset({"show", "list", "exists"})


def _url(word: str) -> bool:
    return word != WILD and bool(_URL.match(word)) and not word.startswith(("./", "../", "/"))


def git_verify(inv: Invocation, cmd: SimpleCommand) -> str | None:
    sub = inv.subcommand
    if sub in _FETCHES and inv.operands and _url(inv.operands[0]):
        # (the first operand is the repository; the others are refspecs, `main:main`)
        return f"`git {sub}` from `{inv.operands[0][:120]}`: a repository named by its address, on a host the " \
               "policy does not know (a remote the repository names is one a person set up)"
    if sub == "submodule" and inv.operands[:1] == ("add",) and any(_url(w) for w in inv.operands[1:]):
        return "`git submodule add` of a repository named by its address, on a host the policy does not know"
    if sub == "reflog" and inv.operands[:1] and inv.operands[0] not in _REFLOG_LOOKS and \
            inv.operands[0] in ("expire", "delete", "drop"):
        return f"`git reflog {inv.operands[0]}` drops history, which is not in git's model"
    return None
