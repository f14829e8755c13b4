"""A tiny stdio MCP server, for checking that an administrator's MCP server runs and that
its tool calls are gated.

    python -m tests.fakes.mcp_server --log LOG --marker MARKER

Speaks newline-delimited JSON-RPC 2.0 on stdin/stdout (the MCP stdio transport):
`initialize`, `notifications/initialized`, `ping`, `tools/list` (two tools, `touch_marker` and
`ask_user`) and `tools/call`. `ask_user` sends the client an MCP `elicitation/create` form
(its `schema` argument, or a one-field default; with `url`, a URL-mode elicitation) and
returns the client's reply as text.
Calling `touch_marker` writes MARKER (the proof that the call ran); every request is
appended to LOG as one JSON line, and the start-up itself is recorded (`{"event":
"started"}`), so a test can tell "never started" from "started, never called".
Anything else gets a JSON-RPC "method not found" error. Only the standard library: the
agent CLIs spawn it with the environment they were given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ASK_TOOL = {
    "name": "ask_user",
    "description": "Ask the user to fill in a form (MCP elicitation) and return what they sent.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "message": {"type": "string"},
            "schema": {"type": "object", "description": "the requestedSchema of the form"},
            "url": {"type": "string", "description": "send a URL-mode elicitation to this page instead"},
        },
        "required": [],
    },
}
DEFAULT_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Project name"}},
    "required": ["name"],
}
TOOL = {
    "name": "touch_marker",
    "description": "Write the marker file (a harmless stand-in for a tool with effects).",
    "inputSchema": {
        "type": "object",
        "properties": {"note": {"type": "string", "description": "written into the marker"}},
        "required": [],
    },
}
PROTOCOL_VERSION = "2025-06-18"


def _log(path: Path | None, entry: dict[str, Any]) -> None:
    if path is not None:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


def _elicit(request: dict[str, Any], lines: Iterator[str], log: Path | None) -> dict[str, Any]:
    """`ask_user`: send `elicitation/create` to the client and wait for its reply (the
    client's requests in between are logged and left unanswered: none are expected)."""
    args = (request.get("params") or {}).get("arguments") or {}
    ask = {
        "jsonrpc": "2.0",
        "id": "elicit-1",
        "method": "elicitation/create",
        "params": {
            "message": str(args.get("message") or "Please fill in the form"),
            "requestedSchema": args.get("schema") or DEFAULT_FORM,
        },
    }
    if args.get("url"):  # a URL-mode elicitation: the user is sent to a page instead
        ask["params"] = {"mode": "url", "message": ask["params"]["message"], "url": str(args["url"]),
                         "elicitationId": "elicit-url-1"}
    _write(ask)
    for line in lines:
        try:
            reply = json.loads(line)
        except ValueError:
            continue
        _log(log, {"event": "elicitation-reply" if reply.get("id") == "elicit-1" else "request", **reply})
        if reply.get("id") == "elicit-1" and "method" not in reply:
            text = json.dumps(reply.get("result", {"error": reply.get("error")}), sort_keys=True)
            return {"content": [{"type": "text", "text": f"elicitation: {text}"}], "isError": False}
    return {"content": [{"type": "text", "text": "elicitation: no reply"}], "isError": True}


def _answer(request: dict[str, Any], marker: Path, lines: Iterator[str], log: Path | None) -> dict[str, Any] | None:
    method = request.get("method")
    params = request.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion") or PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "gatehouse-fake-mcp", "version": "0.1.0"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [TOOL, ASK_TOOL]}
    if method == "tools/call" and params.get("name") == TOOL["name"]:
        note = str((params.get("arguments") or {}).get("note") or "called")
        marker.write_text(note + "\n", encoding="utf-8")
        return {"content": [{"type": "text", "text": f"marker written: {note}"}], "isError": False}
    if method == "tools/call" and params.get("name") == ASK_TOOL["name"]:
        return _elicit(request, lines, log)
    return None


def _write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def serve(marker: Path, log: Path | None) -> None:
    _log(log, {"event": "started", "pid": os.getpid(), "env": sorted(os.environ)})
    lines = iter(sys.stdin)
    for line in lines:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            continue
        _log(log, {"event": "request", "method": request.get("method"), "params": request.get("params")})
        if "id" not in request:
            continue  # a notification (notifications/initialized, cancelled): no reply
        result = _answer(request, marker, lines, log)
        if result is None:
            _write({
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32601, "message": f"method not found: {request.get('method')}"},
            })
        else:
            _write({"jsonrpc": "2.0", "id": request["id"], "result": result})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--marker", required=True, type=Path)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--read-only-hint", action="store_true",
                        help="mark touch_marker read-only (`readOnlyHint`), as a server may claim of any tool")
    args = parser.parse_args()
    if args.read_only_hint:
        TOOL["annotations"] = {"readOnlyHint": True}
    serve(args.marker, args.log)


if __name__ == "__main__":
    main()
