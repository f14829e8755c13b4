"""A scripted fake of the Anthropic Messages API, for driving real agent CLIs offline.

    with FakeAnthropicServer([
        [text("Running it."), tool_use("Bash", {"command": "echo hi"})],
        [text("Done.")],
    ]) as server:
        env = {"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "dummy"}
        ...
        assert "hi" in server.tool_results()[0]["text"]

Each POST /v1/messages that offers tools (the agent's main loop) pops the next scripted
turn. A turn is a list of content blocks (`text(...)`, `tool_use(...)`, or plain dicts in
the API's shape), or a callable `turn(body) -> list` that builds the blocks from the
request (e.g. to echo what the agent sent). When the script runs out, the server answers
`default_text` with `end_turn` so a misbehaving agent finishes instead of hanging.
Requests without tools (side calls such as title generation) get `default_text` without
using up a turn. With `stream: true` the answer is SSE (message_start,
content_block_start/delta/stop, message_delta with stop_reason, message_stop), otherwise
one JSON message. `HEAD /` answers 200 (the CLI probes it), count_tokens answers a count.

Every request is recorded (`requests`: method, path, headers, parsed body); the helpers
`tool_results()` and `wait_for_requests()` read them. Runs on 127.0.0.1, on a free port,
in a daemon thread; `stop()` (or leaving the `with`) shuts it down.
"""

from __future__ import annotations

import itertools
import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tests.fakes.http import JSONHandler, ScriptedModelServer

Block = dict[str, Any]
Turn = Sequence[Block] | Callable[[dict[str, Any]], Sequence[Block]]

__all__ = ["FakeAnthropicServer", "text", "tool_use", "tool_results_of"]


def text(value: str) -> Block:
    return {"type": "text", "text": value}


def tool_use(name: str, input: dict[str, Any] | None = None, *, id: str | None = None) -> Block:
    return {"type": "tool_use", "id": id or f"toolu_fake_{uuid.uuid4().hex[:20]}", "name": name, "input": input or {}}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for item in content:
            if isinstance(item, dict) and item.get("type") == "text":
                parts.append(str(item.get("text", "")))
            elif isinstance(item, str):
                parts.append(item)
        return "\n".join(parts)
    return ""


def tool_results_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks in a request body's messages: [{tool_use_id, text, is_error}]."""
    found = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(
                    {
                        "tool_use_id": block.get("tool_use_id"),
                        "text": _content_text(block.get("content")),
                        "is_error": bool(block.get("is_error")),
                    }
                )
    return found


class FakeAnthropicServer(ScriptedModelServer):
    thread_name = "fake-anthropic"

    def __init__(
        self,
        turns: Iterable[Turn] = (),
        *,
        default_text: str = "Done (fake model: no more scripted turns).",
        model: str = "claude-sonnet-4-5-20250929",
        host: str = "127.0.0.1",
    ) -> None:
        self.host = host
        self._ids = itertools.count(1)
        super().__init__(turns, default_text=default_text, model=model)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- what the model saw ----------------------------------------------------------------

    @property
    def message_requests(self) -> list[dict[str, Any]]:
        """Recorded POST /v1/messages bodies that offered tools (the main loop's calls)."""
        return self.main_bodies()

    def tool_results(self) -> list[dict[str, Any]]:
        """Tool results the model received, in order, deduplicated by tool_use_id."""
        seen: dict[Any, dict[str, Any]] = {}
        for body in self.message_requests:
            for result in tool_results_of(body):
                seen.setdefault(result["tool_use_id"], result)
        return list(seen.values())

    # -- answering -------------------------------------------------------------------------

    def _next_blocks(self, body: dict[str, Any], main: bool) -> list[Block]:
        return self._next_reply(body, main, text)

    def message_events(self, blocks: Sequence[Block], model: str) -> list[tuple[str, dict[str, Any]]]:
        """The SSE events of one streamed message made of `blocks`."""
        n = next(self._ids)
        usage = {"input_tokens": 50, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        events: list[tuple[str, dict[str, Any]]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": f"msg_fake_{n}",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": usage,
                    },
                },
            )
        ]
        for index, block in enumerate(blocks):
            if block.get("type") == "tool_use":
                start = {"type": "tool_use", "id": block.get("id") or f"toolu_fake_{n}_{index}", "name": block["name"], "input": {}}
                events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
                events.append(
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": json.dumps(block.get("input") or {})},
                        },
                    )
                )
            else:
                events.append(
                    ("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
                )
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": block.get("text", "")}},
                    )
                )
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        stop_reason = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
        events.append(
            (
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": 20}},
            )
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def message_json(self, blocks: Sequence[Block], model: str) -> dict[str, Any]:
        n = next(self._ids)
        content = []
        for index, block in enumerate(blocks):
            if block.get("type") == "tool_use":
                content.append({"type": "tool_use", "id": block.get("id") or f"toolu_fake_{n}_{index}", "name": block["name"], "input": block.get("input") or {}})
            else:
                content.append({"type": "text", "text": block.get("text", "")})
        return {
            "id": f"msg_fake_{n}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 50, "output_tokens": 20, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }


class _Handler(JSONHandler):
    fake: FakeAnthropicServer

    def extra_headers(self) -> dict[str, str]:
        return {"request-id": f"req_fake_{uuid.uuid4().hex[:12]}"}

    def do_HEAD(self) -> None:
        self.fake._record({"method": "HEAD", "path": self.path, "headers": dict(self.headers)})
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.fake._record({"method": "GET", "path": self.path, "headers": dict(self.headers)})
        self.send_json(200, {"data": [], "has_more": False})

    def do_POST(self) -> None:
        body = self.read_json()
        path = self.path.split("?", 1)[0]
        if path.endswith("/count_tokens"):
            self.fake._record({"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body})
            self.send_json(200, {"input_tokens": 10})
            return
        if not path.endswith("/v1/messages"):
            self.fake._record({"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body})
            self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": f"no route {path}"}})
            return
        main = bool(body.get("tools"))
        blocks = self.fake._next_blocks(body, main)
        self.fake._record({"method": "POST", "path": self.path, "headers": dict(self.headers), "body": body, "main": main, "reply": blocks})
        model = body.get("model") or self.fake.model
        if body.get("stream"):
            payload = b"".join(
                f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in self.fake.message_events(blocks, model)
            )
            self.send_sse(payload)
        else:
            self.send_json(200, self.fake.message_json(blocks, model))


FakeAnthropicServer.handler_class = _Handler
