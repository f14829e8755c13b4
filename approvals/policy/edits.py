"""Edit before approve (issue 32.3): a reviewer changes a request's input, never its tool.

A command stays a command and a file write a file write: only the keys below may be
edited, each a string; the edited request keeps every other key the agent sent (a Bash
`description`, an Edit's `replace_all`). The edited request is then validated like any
request and evaluated by the policy again (the caller does that: it knows the run).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import PolicyError, json_type
from .request import validate_request

# The input keys a reviewer may edit, per canonical tool.
EDITABLE_KEYS: Mapping[str, frozenset[str]] = {
    "bash": frozenset({"command"}),
    "write": frozenset({"file_path", "content"}),
    "edit": frozenset({"file_path", "old_string", "new_string"}),
}
MAX_EDITED_CHARS = 1_000_000


def _refuse(message: str, field: str, value: Any) -> PolicyError:
    return PolicyError("invalid_request", message, field=field, value=value)


def edited_request(request: Mapping[str, Any], edited_input: Any) -> dict[str, Any]:
    """`request` (canonical, as recorded) with `edited_input`'s keys replaced, or a refusal
    naming the key: a tool with nothing editable, an unknown key, a value that is not a
    string, an empty command or path, or an edit that changes nothing."""
    tool = str(request.get("tool") or "")
    keys = EDITABLE_KEYS.get(tool)
    if keys is None:
        raise _refuse(f"a {tool or 'this'} request cannot be edited (only bash, write and edit)", "edited_input", None)
    if not isinstance(edited_input, Mapping) or not edited_input:
        raise _refuse("`edited_input` must be a non-empty object", "edited_input", json_type(edited_input))
    original = dict(request.get("input") or {})
    for key, value in edited_input.items():
        if key not in keys:
            allowed = ", ".join(sorted(keys))
            raise _refuse(f"`edited_input.{key}` cannot be edited for {tool}: only {allowed}", f"edited_input.{key}", value)
        if not isinstance(value, str):
            raise _refuse(f"`edited_input.{key}` must be a string, not {json_type(value)}", f"edited_input.{key}", value)
        if len(value) > MAX_EDITED_CHARS:
            raise _refuse(f"`edited_input.{key}` is longer than {MAX_EDITED_CHARS} characters", f"edited_input.{key}", None)
        if key in ("command", "file_path") and not value.strip():
            raise _refuse(f"`edited_input.{key}` must not be empty", f"edited_input.{key}", value)
        if key not in original and tool != "write":
            raise _refuse(f"this {tool} request has no `{key}` to edit", f"edited_input.{key}", value)
    changed = {**original, **{k: v for k, v in edited_input.items()}}
    if changed == original:
        raise _refuse("the edited input is the same as the request: approve it as it is", "edited_input", None)
    out = {"tool": tool, "input": changed}
    if "cwd" in request:
        out["cwd"] = request["cwd"]
    return validate_request(out)
