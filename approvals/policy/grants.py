"""Session grants ("always allow"): they turn an `ask` into `allow`, never a deny or abort.

A grant is `{"tool": "bash", "match": "npm run build"}` (a command pattern, matched by
meaning like an allow rule), `{"tool": "write", "match": "docs/**"}` (a path glob, for the
edit tools and `read`, matched against the workspace-relative path only), or
`{"tool": "deployPreview"}` (the whole tool), or `{"tool": "network", "match": "pypi.org"}`
(a host the sandboxed run may reach through the egress proxy: a name, `*.name`, an address,
with an optional `:port`; never a non-public address the network section does not name).

A grant covers what the policy asked about only where asking was about the command
itself (its rule, its rule set's default, its class). It never covers:

- a protected path (written or read), a write outside the workspace, a read of a
  secret-looking path, a path only known at run time;
- a write the policy asks about (a redirection or file operand outside what the edit
  rules allow): a redirection into the workspace that the policy allows is fine
  (`npm run build > build.log`);
- a computed command name, nesting deeper than read, an environment that changes what
  runs, a network command sending a substitution or a file, a script that does not parse;
- code given on the command line (`python -c …`) unless the grant names exactly that
  command, as one made from an approval a reviewer saw does.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from .classes import DESTRUCTIVE, EDIT_TOOLS, LOCAL, OUTSIDE, PROTECTED, READ_ONLY, REMOTE
from .command import Script
from .decide import decide_request
from .errors import PolicyError, json_type
from .network import canonical_host, host_rule
from .options import WILD, invocation
from .paths import PathContext
from .patterns import compile_command, exact_key_of, glob_regex
from .request import NETWORK_TOOL, network_target, validate_request
from .rules import compile_policy
from .verdicts import ALLOW, ASK, Segment, Verdict

PATH_TOOLS = EDIT_TOOLS | {"read"}
_PLAIN_WORD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@+=-]*$")
_MAX_PREFIX = 3


def _invalid(message: str, field: str, value: Any) -> PolicyError:
    return PolicyError("invalid_grant", message, field=field, value=value)


def validate_grant(grant: Mapping[str, Any]) -> dict[str, Any]:
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
                compile_command(match)
            elif tool in PATH_TOOLS:
                glob_regex(match)
            elif tool == NETWORK_TOOL:
                host_rule(match)
            else:
                raise ValueError(f"`match` applies to bash, the edit tools and read, not {tool}")
        except ValueError as exc:
            raise _invalid(str(exc), "match", match) from None
        out["match"] = match
    return out


def _covers_segment(grant: Mapping[str, Any], seg: Segment) -> bool:
    if seg.decision == ALLOW:
        return True
    if seg.decision != ASK or seg.grantable is None:
        return False
    inv = seg.invocation if seg.invocation is not None else invocation(seg.words)
    if "match" not in grant:
        return seg.grantable == "pattern"
    pattern = compile_command(grant["match"])
    if seg.grantable == "exact":
        return pattern.exact_key is not None and pattern.exact_key == exact_key_of(inv)
    return pattern.matches(inv, allow=True)


def _covers_path(grant: Mapping[str, Any], verdict: Verdict) -> bool:
    """Whether the grant covers every path the request touches (a move: both ends)."""
    if not verdict.paths:
        return False
    for use in verdict.paths:
        if use.relative is None or use.protected or use.sensitive:
            return False
        if use.side_effect_class not in (LOCAL, READ_ONLY, None):
            return False
        if "match" in grant and glob_regex(grant["match"]).match(use.relative) is None:
            return False
    return True


def _covers(grant: Mapping[str, Any], req: Mapping[str, Any], verdict: Verdict, script: Script | None) -> bool:
    tool = req["tool"]
    if grant["tool"] != tool or verdict.touches_protected:
        return False
    if tool == "bash":
        if script is None or not script.parsed or not verdict.segments:
            return False
        return all(_covers_segment(grant, s) for s in verdict.segments)
    if tool in PATH_TOOLS:
        return _covers_path(grant, verdict)
    if tool == NETWORK_TOOL:
        # (an address the network section keeps out is denied, never asked: no grant reaches it)
        host, port, _ = network_target(req)
        canonical = canonical_host(host)
        return "match" in grant and canonical is not None and host_rule(grant["match"]).names(canonical, port)
    # a floor under another tool (a fetch of the cloud's metadata service) is decided each time
    return not verdict.floors


def covering_grant(
    grants: Sequence[Mapping[str, Any]], req: Mapping[str, Any], verdict: Verdict, script: Script | None
) -> Mapping[str, Any] | None:
    """The first (validated) grant that covers an asked request, given the policy's verdict."""
    for grant in grants:
        if _covers(grant, req, verdict, script):
            return grant
    return None


def _ask_everything(req: Mapping[str, Any], paths: PathContext | None) -> tuple[Verdict, Script | None]:
    return decide_request(compile_policy({"default": "ask"}), req, paths)


def grant_covers(grant: Mapping[str, Any], request: Mapping[str, Any], *, paths: PathContext | None = None) -> bool:
    """Whether the grant alone covers the request (every command of a script must match)."""
    checked = validate_grant(grant)
    req = validate_request(request)
    verdict, script = _ask_everything(req, paths)
    return _covers(checked, req, verdict, script)


def _command_prefix(seg: Segment) -> str | None:
    inv = seg.invocation if seg.invocation is not None else invocation(seg.words)
    if not _PLAIN_WORD.match(seg.words[0]):
        return None
    prefix = [seg.words[0]]
    for word in inv.positionals[: _MAX_PREFIX - 1]:
        if word == WILD or not _PLAIN_WORD.match(word):
            break
        prefix.append(word)
    return " ".join(prefix)


def suggest_grant(
    request: Mapping[str, Any], verdict: Verdict | None = None, *, paths: PathContext | None = None
) -> tuple[dict[str, Any], str] | None:
    """The narrowest useful grant for a request, and the button's sentence; None when no
    grant would be safe or could cover it (see the module's list).

    With `verdict` (the policy's answer), only the commands it did not allow count.
    """
    req = validate_request(request)
    tool = req["tool"]
    if verdict is None or (tool == "bash" and not verdict.segments) or (tool in PATH_TOOLS and not verdict.paths):
        verdict, _ = _ask_everything(req, paths)
    if verdict.touches_protected:
        return None
    if tool == NETWORK_TOOL:
        host = canonical_host(network_target(req)[0])
        if host is None or verdict.decision != ASK:
            return None
        return {"tool": NETWORK_TOOL, "match": host}, f"Always allow {host} in this session"
    if tool == "bash":
        if verdict.rule == "commands.unparseable" or not verdict.segments:
            return None
        pending = [s for s in verdict.segments if s.decision != ALLOW] or list(verdict.segments)
        if any(s.grantable is None or s.decision not in (ASK, ALLOW) for s in pending):
            return None
        if any(s.grantable == "exact" for s in pending):
            if len(pending) != 1:
                return None
            match = shlex.join(pending[0].words)
            grant = {"tool": "bash", "match": match}
            if not _covers_segment(grant, pending[0]):
                return None
            return grant, f"Always allow exactly `{match}` in this session"
        prefixes = set()
        for seg in pending:
            if seg.side_effect_class in (DESTRUCTIVE, REMOTE, OUTSIDE, PROTECTED):
                return None
            prefix = _command_prefix(seg)
            if prefix is None:
                return None
            prefixes.add(prefix)
        if len(prefixes) != 1:
            return None
        match = prefixes.pop()
        grant = {"tool": "bash", "match": match}
        if not all(_covers_segment(grant, s) for s in pending):
            return None
        return grant, f"Always allow `{match}` in this session"
    if tool in PATH_TOOLS:
        use = verdict.paths[0] if len(verdict.paths) == 1 else None  # (a move offers none)
        if use is None or use.relative is None or use.sensitive or use.protected:
            return None
        if use.side_effect_class not in (LOCAL, READ_ONLY, None) or use.relative == ".":
            return None
        rel = use.relative
        if any(ch in rel for ch in "*?[]!#\\") or rel.startswith(".git/") or rel == ".git":
            return None
        directory = rel.rsplit("/", 1)[0] if "/" in rel else ""
        match = f"{directory}/**" if directory else rel
        verb = "reads of" if tool == "read" else "edits to"
        return {"tool": tool, "match": match}, f"Always allow {verb} `{match}` in this session"
    return {"tool": tool}, f"Always allow `{tool}` in this session"
