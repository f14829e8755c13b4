"""The canonical tool request, validated at the boundary."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .classes import EDIT_TOOLS
from .errors import PolicyError, json_type

REQUEST_KEYS = frozenset({"tool", "input", "cwd"})
# A connection leaving the sandbox floor through the egress proxy (the `network` section).
NETWORK_TOOL = "network"


def _refuse(message: str, field: str, value: Any) -> PolicyError:
    return PolicyError("invalid_request", message, field=field, value=value)


def validate_request(request: Mapping[str, Any]) -> dict[str, Any]:
    """`{"tool": str, "input": {...}, "cwd": "/abs/path"}` (cwd optional), or `invalid_request`.

    `bash` needs `input.command` (a string); the edit tools need `input.file_path` or
    `input.notebook_path` (a non-empty string).
    """
    if type(request) is not dict and not isinstance(request, Mapping):
        raise _refuse("a request must be a JSON object", "", json_type(request))
    for key in request:
        if key not in REQUEST_KEYS:
            raise _refuse(f"unknown request field {key!r}", key, request[key])
    tool = request.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        raise _refuse("`tool` must be a non-empty string", "tool", tool)
    tool_input = request.get("input", None)
    if type(tool_input) is not dict and not isinstance(tool_input, Mapping):
        raise _refuse("`input` must be an object", "input", tool_input)
    out: dict[str, Any] = {"tool": tool, "input": dict(tool_input)}
    if "cwd" in request:
        cwd = request["cwd"]
        if not isinstance(cwd, str) or not cwd.startswith("/"):
            raise _refuse("`cwd` must be an absolute path", "cwd", cwd)
        out["cwd"] = cwd
    if tool == "bash":
        command = tool_input.get("command")
        if not isinstance(command, str):
            raise _refuse("a bash request needs `input.command` (a string)", "input.command", command)
        if "\x00" in command:
            raise _refuse("a command must not contain NUL characters", "input.command", command)
    elif tool in EDIT_TOOLS:
        edit_path(out)
        move_path(out)
    elif tool == NETWORK_TOOL:
        network_target(out)
    return out


def network_target(request: Mapping[str, Any]) -> tuple[str, int, tuple[str, ...]]:
    """A network request's `input.host`, `input.port` (1–65535) and `input.addresses` (what
    the host resolved to, the addresses the proxy connects to; strings)."""
    tool_input = request["input"]
    host, port, addresses = tool_input.get("host"), tool_input.get("port"), tool_input.get("addresses", [])
    if not isinstance(host, str) or not host or len(host) > 255:
        raise _refuse("a network request needs `input.host` (a host name or address)", "input.host", host)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise _refuse("a network request needs `input.port` (1 to 65535)", "input.port", port)
    if not isinstance(addresses, list) or not all(isinstance(a, str) for a in addresses):
        raise _refuse("`input.addresses` must be a list of addresses", "input.addresses", addresses)
    return host, port, tuple(addresses)


def edit_path(request: Mapping[str, Any]) -> str:
    """The path an edit tool touches (`input.file_path`, else `input.notebook_path`)."""
    tool_input = request["input"]
    for key in ("file_path", "notebook_path"):
        value = tool_input.get(key)
        if value is not None:
            if not isinstance(value, str) or not value.strip() or "\x00" in value:
                raise _refuse(f"`input.{key}` must be a non-empty path", f"input.{key}", value)
            return value
    raise _refuse(
        f"the {request['tool']} tool needs `input.file_path` (or `input.notebook_path`)",
        "input.file_path",
        None,
    )


def move_path(request: Mapping[str, Any]) -> str | None:
    """Where an edit moves its file (`input.move_path`: Codex's and ACP's renames), or None."""
    value = request["input"].get("move_path")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        raise _refuse("`input.move_path` must be a non-empty path", "input.move_path", value)
    return value


def read_path(request: Mapping[str, Any]) -> str | None:
    value = request["input"].get("file_path") or request["input"].get("path")
    return value if isinstance(value, str) and value else None
