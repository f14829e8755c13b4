"""Session grants ("always allow"): they turn an `ask` into `allow`, never a deny or abort.

A grant is `{"tool": "bash", "match": "npm run build"}` (a command pattern, matched like
the rules), `{"tool": "write", "match": "docs/**"}` (a path glob, for the edit tools and
`read`), or `{"tool": "deployPreview"}` (the whole tool). A bash request is covered only
when the script parses, no command writes to a file through a redirection, no command
name is computed at run time, and every command the policy did not already allow
matches the grant's pattern.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from .classes import DESTRUCTIVE, EDIT_TOOLS, REMOTE, classify_words
from .errors import PolicyError, json_type
from .patterns import command_regex, glob_regex, path_candidates, words_subject
from .request import edit_path, read_path, validate_request
from .shell import parse_script

PATH_TOOLS = EDIT_TOOLS | {"read"}
_PLAIN_WORD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@+=-]*$")
_MAX_PREFIX = 3


def _invalid(message: str, field: str, value: Any) -> PolicyError:
    return PolicyError("invalid_grant", message, field=field, value=value)


def validate_grant(grant: Mapping) -> dict:
    """`{"tool": str, "match"?: str}`; `match` is a command pattern for bash, a glob for the
    edit tools and read, and not allowed for other tools."""
    if not isinstance(grant, Mapping):
        raise _invalid("a grant must be an object", "", json_type(grant))
    for key in grant:
        if key not in ("tool", "match"):
            raise _invalid(f"unknown grant field {key!r}", key, grant[key])
    tool = grant.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        raise _invalid("`tool` must be a non-empty string", "tool", tool)
    out = {"tool": tool}
    if "match" in grant:
        match = grant["match"]
        if not isinstance(match, str) or not match.strip():
            raise _invalid("`match` must be a non-empty string", "match", match)
        try:
            if tool == "bash":
                command_regex(match)
            elif tool in PATH_TOOLS:
                glob_regex(match)
            else:
                raise ValueError(f"`match` applies to bash, the edit tools and read, not {tool}")
        except ValueError as exc:
            raise _invalid(str(exc), "match", match) from None
        out["match"] = match
    return out


def _covers_words(grant: Mapping, words) -> bool:
    if "match" not in grant:
        return True
    return re.match(command_regex(grant["match"]), words_subject(words), re.DOTALL) is not None


def _covers_path(grant: Mapping, path: str | None, cwd: str | None) -> bool:
    if "match" not in grant:
        return True
    if path is None:
        return False
    regex = glob_regex(grant["match"])
    return any(regex.match(c) for c in path_candidates(path, cwd))


def _covers(grant: Mapping, req: Mapping, segments, script) -> bool:
    """`segments` are the policy's per-command verdicts (parallel to `script.commands`)."""
    tool = req["tool"]
    if grant["tool"] != tool:
        return False
    if tool == "bash":
        if script is None or not script.parsed or not script.commands:
            return False
        if any(c.writes_file or c.dynamic_name for c in script.commands):
            return False
        for cmd, seg in zip(script.commands, segments, strict=True):
            if seg.decision != "allow" and not _covers_words(grant, cmd.words):
                return False
        return True
    if tool in EDIT_TOOLS:
        return _covers_path(grant, edit_path(req), req.get("cwd"))
    if tool == "read":
        return _covers_path(grant, read_path(req), req.get("cwd"))
    return True


def covering_grant(grants: Sequence[Mapping], req: Mapping, segments, script) -> Mapping | None:
    """The first (validated) grant that covers an asked request, given its segments."""
    for grant in grants:
        if _covers(grant, req, segments, script):
            return grant
    return None


class _Pending:
    """A segment view for grant_covers without a policy: nothing is already allowed."""

    decision = "ask"


def grant_covers(grant: Mapping, request: Mapping) -> bool:
    """Whether the grant alone covers the request (every command of a script must match)."""
    checked = validate_grant(grant)
    req = validate_request(request)
    if req["tool"] == "bash":
        script = parse_script(req["input"]["command"])
        return _covers(checked, req, [_Pending()] * len(script.commands), script)
    return _covers(checked, req, (), None)


def _command_prefix(words) -> str | None:
    prefix = []
    for word in words[:_MAX_PREFIX]:
        if not _PLAIN_WORD.match(word):
            break
        prefix.append(word)
    return " ".join(prefix) if prefix else None


def suggest_grant(request: Mapping, verdict=None) -> tuple[dict, str] | None:
    """The narrowest useful grant for a request, and the button's sentence; None when no
    grant would be safe (a redirection writing a file, a script that does not parse, a
    destructive or remote-mutating command, a path outside the workspace...).

    With `verdict` (the policy's answer), only the commands it did not allow count.
    """
    req = validate_request(request)
    tool = req["tool"]
    if tool == "bash":
        script = parse_script(req["input"]["command"])
        if not script.parsed or not script.commands:
            return None
        if any(c.writes_file or c.dynamic_name for c in script.commands):
            return None
        pending = list(script.commands)
        if verdict is not None and verdict.segments:
            allowed = {s.words for s in verdict.segments if s.decision == "allow"}
            pending = [c for c in pending if c.words not in allowed] or pending
        prefixes = set()
        for cmd in pending:
            if classify_words(cmd.words) in (DESTRUCTIVE, REMOTE):
                return None
            prefix = _command_prefix(cmd.words)
            if prefix is None:
                return None
            prefixes.add(prefix)
        if len(prefixes) != 1:
            return None
        match = prefixes.pop()
        grant = {"tool": "bash", "match": match}
        if not all(_covers_words(grant, c.words) for c in pending):
            return None
        return grant, f"Always allow `{match}` in this session"
    if tool in PATH_TOOLS:
        path = edit_path(req) if tool in EDIT_TOOLS else read_path(req)
        cwd = req.get("cwd")
        if path is None or not cwd:
            return None
        full = posixpath.normpath(posixpath.join(cwd, path))
        root = posixpath.normpath(cwd).rstrip("/")
        if not full.startswith(root + "/"):
            return None  # outside the workspace: no standing permission
        rel = full[len(root) + 1 :]
        if any(ch in rel for ch in "*?[]!#\\") or rel.startswith(".git/") or rel == ".git":
            return None
        directory = posixpath.dirname(rel)
        match = f"{directory}/**" if directory else rel
        verb = "reads of" if tool == "read" else "edits to"
        return {"tool": tool, "match": match}, f"Always allow {verb} `{match}` in this session"
    return {"tool": tool}, f"Always allow `{tool}` in this session"
