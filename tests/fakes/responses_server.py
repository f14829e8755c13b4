"""A scripted fake of the OpenAI Responses API (streaming SSE), for the real Codex CLI.

Codex (`codex app-server`, 0.171.0) POSTs `{base_url}/responses` with `stream: true` and
reads server-sent events. Each POST pops the next scripted *turn*: a list of output items
(an assistant message, or a `function_call` to one of Codex's tools). The tool result
comes back in the next POST's `input` as a `function_call_output`, so a scenario is a list
of turns: "call a tool" → "say something", and every request body is recorded so a test
can assert what the model saw (the output of an allowed command, the rejection after a
decline, the answers to a question).

    with FakeResponsesServer([[exec_command("touch a.txt")], [message("done")]]) as server:
        settings = {"base_url": server.base_url, ...}
        ...
        assert "rejected by user" in server.tool_output("call_1")

A turn may also be a callable `turn(request_body) -> items`, for replies that depend on what
the model was sent. When the script runs out, the server answers with a plain message
(`SCRIPT EXHAUSTED`) so the CLI ends its turn instead of hanging; `server.exhausted` counts
those.

Wire format (observed with the real CLI, see ../shared/protocols/codex/NOTES.md): each
event is `event: <type>\\ndata: <json>\\n\\n`; the stream is `response.created`, then per
item `response.output_item.added`, (`response.output_text.delta` for messages),
`response.output_item.done`, and finally `response.completed` with usage.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.http import BackgroundHTTPServer

Item = dict[str, Any]
Turn = Sequence[Item] | Callable[[dict[str, Any]], Sequence[Item]]

_ids = itertools.count(1)


def _next_id(prefix: str) -> str:
    return f"{prefix}_{next(_ids):06d}"


# -- output items ----------------------------------------------------------------------------


def message(text: str) -> Item:
    """An assistant message with one output_text part."""
    return {
        "type": "message",
        "id": _next_id("msg"),
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def function_call(name: str, arguments: Mapping[str, Any], call_id: str | None = None) -> Item:
    return {
        "type": "function_call",
        "id": _next_id("fc"),
        "call_id": call_id or _next_id("call"),
        "name": name,
        "arguments": json.dumps(dict(arguments)),
        "status": "completed",
    }


def exec_command(cmd: str, call_id: str | None = None, **extra: Any) -> Item:
    """Codex's shell tool; extra args e.g. sandbox_permissions="require_escalated", justification=..."""
    return function_call("exec_command", {"cmd": cmd, **extra}, call_id)


def apply_patch(patch: str, call_id: str | None = None) -> Item:
    """A patch sent through exec_command's heredoc form, which Codex intercepts as a fileChange.

    `patch` is the body between `*** Begin Patch` and `*** End Patch` (both added here).
    An unknown model is offered no apply_patch tool, but Codex still recognises this form.
    """
    body = patch if patch.endswith("\n") else patch + "\n"
    cmd = f"apply_patch <<'EOF'\n*** Begin Patch\n{body}*** End Patch\nEOF\n"
    return exec_command(cmd, call_id)


def add_file_patch(path: str, content: str) -> str:
    lines = content.splitlines()
    return f"*** Add File: {path}\n" + "".join(f"+{line}\n" for line in lines)


def request_user_input(questions: Sequence[Mapping[str, Any]], call_id: str | None = None) -> Item:
    """The plan-mode question tool: questions=[{id, header, question, options:[{label, description}]}]."""
    return function_call("request_user_input", {"questions": [dict(q) for q in questions]}, call_id)


# -- the server ------------------------------------------------------------------------------


class FakeResponsesServer(BackgroundHTTPServer):
    """A ThreadingHTTPServer on 127.0.0.1 (free port) in a background thread; a context manager."""

    thread_name = "fake-responses"

    def __init__(self, turns: Iterable[Turn] = ()) -> None:
        self._turns: list[Turn] = list(turns)
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.exhausted = 0
        super().__init__()

    # -- scripting --------------------------------------------------------------------------

    def add_turns(self, *turns: Turn) -> None:
        with self._lock:
            self._turns.extend(turns)

    def _pop_turn(self, body: dict[str, Any]) -> Sequence[Item]:
        with self._lock:
            self.requests.append(body)
            turn = self._turns.pop(0) if self._turns else None
            if turn is None:
                self.exhausted += 1
        if turn is None:
            return [message("SCRIPT EXHAUSTED")]
        return list(turn(body)) if callable(turn) else list(turn)

    # -- what the model saw ---------------------------------------------------------------

    def input_items(self, request_index: int = -1) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.requests[request_index].get("input") or [])

    def tool_outputs(self) -> dict[str, str]:
        """call_id -> output text of every function_call_output the model was sent."""
        found: dict[str, str] = {}
        with self._lock:
            bodies = list(self.requests)
        for body in bodies:
            for item in body.get("input") or []:
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    found[item.get("call_id", "")] = _output_text(item.get("output"))
        return found

    def tool_output(self, call_id: str) -> str | None:
        return self.tool_outputs().get(call_id)

    def tool_names(self, request_index: int = 0) -> list[str]:
        with self._lock:
            tools = list(self.requests[request_index].get("tools") or [])
        return [t.get("name") or t.get("type", "") for t in tools]

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


def _output_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):  # content items [{type: input_text, text}]
        return "".join(part.get("text", "") for part in output if isinstance(part, dict))
    return json.dumps(output)


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps({'type': event, **data})}\n\n".encode()


def render_stream(items: Sequence[Item]) -> bytes:
    response_id = _next_id("resp")
    chunks = [_sse("response.created", {"response": {"id": response_id, "status": "in_progress", "output": []}})]
    for index, item in enumerate(items):
        added = dict(item)
        if item.get("type") == "message":
            added["content"] = []
            added["status"] = "in_progress"
        chunks.append(_sse("response.output_item.added", {"output_index": index, "item": added}))
        if item.get("type") == "message":
            for part_index, part in enumerate(item.get("content") or []):
                chunks.append(
                    _sse(
                        "response.output_text.delta",
                        {
                            "item_id": item["id"],
                            "output_index": index,
                            "content_index": part_index,
                            "delta": part.get("text", ""),
                        },
                    )
                )
        chunks.append(_sse("response.output_item.done", {"output_index": index, "item": item}))
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    chunks.append(
        _sse("response.completed", {"response": {"id": response_id, "status": "completed", "output": list(items), "usage": usage}})
    )
    return b"".join(chunks)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeResponsesServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.fake.paths.append(self.path)
        self.fake.headers.append({k.lower(): v for k, v in self.headers.items()})
        if not self.path.rstrip("/").endswith("/responses"):
            self._reply(404, b'{"error":{"message":"not found"}}', "application/json")
            return
        try:
            body = json.loads(raw.decode("utf-8") or "{}")
        except ValueError:
            self._reply(400, b'{"error":{"message":"bad json"}}', "application/json")
            return
        items = self.fake._pop_turn(body)
        self._reply(200, render_stream(items), "text/event-stream")

    def do_GET(self) -> None:
        self.fake.paths.append(self.path)
        self._reply(404, b'{"error":{"message":"not found"}}', "application/json")

    def _reply(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


FakeResponsesServer.handler_class = _Handler
