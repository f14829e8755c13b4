"""A tiny stdio MCP server, for checking that an administrator's MCP server runs and that
its tool calls are gated.

    python -m tests.fakes.mcp_server --log LOG --marker MARKER

Speaks newline-delimited JSON-RPC 2.0 on stdin/stdout (the MCP stdio transport):
`initialize`, `notifications/initialized`, `ping`, `tools/list` (one tool, `touch_marker`)
and `tools/call`. Calling `touch_marker` writes MARKER (the proof that the call ran);
every request is appended to LOG as one JSON line, and the start-up itself is recorded
(`{"event": "started"}`), so a test can tell "never started" from "started, never called".
Anything else gets a JSON-RPC "method not found" error. Only the standard library: the
agent CLIs spawn it with the environment they were given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

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


def _answer(request: dict[str, Any], marker: Path) -> dict[str, Any] | None:
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
        return {"tools": [TOOL]}
    if method == "tools/call" and params.get("name") == TOOL["name"]:
        note = str((params.get("arguments") or {}).get("note") or "called")
        marker.write_text(note + "\n", encoding="utf-8")
        return {"content": [{"type": "text", "text": f"marker written: {note}"}], "isError": False}
    return None


def serve(marker: Path, log: Path | None) -> None:
    _log(log, {"event": "started", "pid": os.getpid(), "env": sorted(os.environ)})
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except ValueError:
            continue
        _log(log, {"event": "request", "method": request.get("method"), "params": request.get("params")})
        if "id" not in request:
            continue  # a notification (notifications/initialized, cancelled): no reply
        result = _answer(request, marker)
        if result is None:
            reply: dict[str, Any] = {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32601, "message": f"method not found: {request.get('method')}"},
            }
        else:
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--marker", required=True, type=Path)
    parser.add_argument("--log", type=Path)
    args = parser.parse_args()
    serve(args.marker, args.log)


if __name__ == "__main__":
    main()
