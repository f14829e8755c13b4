"""Runtime modes (issue 4): what a policy's `ask` becomes in a session's mode.

`approval-required` keeps the policy as written; `auto-accept-edits` approves asked edits
inside the workspace (by the resolved path: a symlink out of it does not count);
`auto` approves asked requests except remote mutations, destructive ones, writes outside
the workspace, reads of secrets, and what the policy could not read (a script that does
not parse, nesting too deep, a computed command name, a word that could complete a deny
rule, an environment that changes what runs, a network command sending a substitution or
a file); `full-access` approves every other ask. `deny`, `abort` and `allow` are never
changed, no mode ever allows a request that touches a protected path, and an approval a
mode made is reported as decided by the mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .classes import DESTRUCTIVE, EDIT_TOOLS, OUTSIDE, PROTECTED, REMOTE
from .errors import PolicyError
from .paths import PathContext, Resolver, default_context
from .verdicts import ALLOW, ASK, Decision, Verdict

RUNTIME_MODES = ("approval-required", "auto-accept-edits", "auto", "full-access")
_AUTO_KEEPS = frozenset({"commands.unparseable", "commands.nesting", "commands.dynamic", "commands.expansion",
                         "commands.environment", "commands.network", "reads.sensitive", "reads.environment", "classes.outside-workspace",
                         "classes.protected"})


def apply_runtime_mode(verdict: Verdict, *, mode: str, request: Mapping[str, Any], workspace: str,
                       paths: PathContext | None = None) -> tuple[Decision, str]:
    """(decision, decided_by), decided_by "policy" or "mode"."""
    if mode not in RUNTIME_MODES:
        raise PolicyError("invalid_request", f"unknown runtime mode {mode!r}", field="mode", value=mode)
    if verdict.decision != ASK or mode == "approval-required":
        return verdict.decision, "policy"
    if verdict.touches_protected:
        return ASK, "policy"
    if mode == "full-access":
        return ALLOW, "mode"
    if mode == "auto":
        if verdict.side_effect_class in (REMOTE, DESTRUCTIVE, OUTSIDE, PROTECTED) or verdict.rule in _AUTO_KEEPS \
                or _AUTO_KEEPS.intersection(verdict.floors) or any(p.sensitive for p in verdict.all_paths):
            return ASK, "policy"
        return ALLOW, "mode"
    # auto-accept-edits
    tool = request.get("tool")
    tool_input = request.get("input") or {}
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    touched = [path, tool_input["move_path"]] if "move_path" in tool_input else [path]  # a move: both ends
    if tool in EDIT_TOOLS and all(isinstance(p, str) and p and "\x00" not in p for p in touched) and workspace:
        ctx = paths if paths is not None else default_context(request.get("cwd"), workspace)
        if paths is not None and workspace and paths.workspace != workspace:
            ctx = PathContext(workspace, paths.homes, paths.protected_dirs)
        resolver = Resolver(ctx)
        locs = [resolver.locate(str(p), [request.get("cwd") or workspace], access="write") for p in touched]
        if all(loc.inside and not loc.protected and not loc.unknown for loc in locs):
            return ALLOW, "mode"
    return ASK, "policy"
