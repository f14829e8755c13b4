"""MCP servers an administrator allows agents to start (settings, never the workspace).

The shape is Claude Code's `mcpServers` object, which ACP's `session/new` and OpenCode's
`mcp` config can be built from as well::

    {"docs": {"command": "/usr/local/bin/docs-mcp", "args": ["--stdio"], "env": {"TOKEN": "..."}},
     "tickets": {"type": "http", "url": "https://mcp.example.com/", "headers": {"Authorization": "..."}}}

A server's tools reach the model as `mcp__<name>__<tool>`, and every call goes through the
gate like any other tool. Pure: no Django, so settings.py can validate at start-up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_STDIO_KEYS = frozenset({"type", "command", "args", "env"})
_REMOTE_KEYS = frozenset({"type", "url", "headers"})


def _string_map(value: Any, where: str) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise ValueError(f"{where} must be an object of strings")


def _validate_one(name: str, server: Any) -> dict[str, Any]:
    if not _NAME.fullmatch(name) or "__" in name:
        raise ValueError(f"server name {name!r}: use letters, digits, '-' and single '_' (at most 64)")
    if not isinstance(server, Mapping):
        raise ValueError(f"{name}: must be an object")
    kind = server.get("type", "stdio")
    if kind == "stdio":
        extra = set(server) - _STDIO_KEYS
        if not isinstance(server.get("command"), str) or not server["command"]:
            raise ValueError(f"{name}.command: a program is required for a stdio server")
        args = server.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError(f"{name}.args must be a list of strings")
        if "env" in server:
            _string_map(server["env"], f"{name}.env")
    elif kind in ("http", "sse"):
        extra = set(server) - _REMOTE_KEYS
        if not isinstance(server.get("url"), str) or not server["url"].startswith(("http://", "https://")):
            raise ValueError(f"{name}.url: an http(s) URL is required for a {kind} server")
        if "headers" in server:
            _string_map(server["headers"], f"{name}.headers")
    else:
        raise ValueError(f"{name}.type: {kind!r} is not one of stdio, http, sse")
    if extra:
        raise ValueError(f"{name}.{sorted(extra)[0]}: unknown field")
    return dict(server)


def validate_mcp_servers(servers: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The servers, checked field by field; ValueError names the first bad one."""
    return {name: _validate_one(name, server) for name, server in servers.items()}
