"""Runtime modes (issue 4): what a policy's `ask` becomes in a session's mode.

`approval-required` keeps the policy as written; `auto-accept-edits` approves asked edits
inside the workspace; `auto` approves asked requests except remote mutations and
destructive ones (and scripts that do not parse); `full-access` approves every ask. `deny`, `abort` and `allow` are never
changed, and an approval a mode made is reported as decided by the mode.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from .classes import DESTRUCTIVE, EDIT_TOOLS, REMOTE
from .errors import PolicyError
from .patterns import inside

RUNTIME_MODES = ("approval-required", "auto-accept-edits", "auto", "full-access")


def apply_runtime_mode(verdict, *, mode: str, request: Mapping, workspace: str) -> tuple[str, str]:
    """(decision, decided_by), decided_by "policy" or "mode"."""
    if mode not in RUNTIME_MODES:
        raise PolicyError("invalid_request", f"unknown runtime mode {mode!r}", field="mode", value=mode)
    if verdict.decision != "ask" or mode == "approval-required":
        return verdict.decision, "policy"
    if mode == "full-access":
        return "allow", "mode"
    if mode == "auto":
        # a script that does not parse is never allowed by anything short of full access
        if verdict.side_effect_class in (REMOTE, DESTRUCTIVE) or verdict.rule == "commands.unparseable":
            return "ask", "policy"
        return "allow", "mode"
    # auto-accept-edits
    tool = request.get("tool")
    tool_input = request.get("input") or {}
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if tool in EDIT_TOOLS and isinstance(path, str) and path and workspace:
        base = request.get("cwd") or workspace
        full = posixpath.normpath(posixpath.join(base, path))
        if inside(full, workspace):
            return "allow", "mode"
    return "ask", "policy"
