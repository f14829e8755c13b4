"""A scripted fake of an OpenAI-compatible chat-completions API (streaming SSE), for OpenCode.

    with FakeChatServer([
        [tool_call("bash", {"command": "echo hi", "description": "say hi"})],
        [text("Done.")],
    ]) as server:
        settings = {"opencode_base_url": server.base_url, "opencode_model": "fake-model"}
        ...
        assert "hi" in server.tool_results()[0]["text"]

OpenCode (1.18.33, provider `@ai-sdk/openai-compatible`) POSTs `{base_url}/chat/completions`
with `stream: true` and `stream_options.include_usage`. Each request that offers tools (the
agent's main loop) pops the next scripted turn: a list of `text(...)` and `tool_call(...)`
items, or a callable `turn(body) -> items` for replies that depend on what was sent.
Requests without tools (title generation on the small model) get `default_text` without
using up a turn; so does a main request once the script is exhausted, so a misbehaving
agent finishes instead of hanging. The stream is OpenAI's: one `chat.completion.chunk` per
delta (`data: {...}`), a chunk with `finish_reason` (`tool_calls` or `stop`), a usage chunk
and `data: [DONE]`. `GET /v1/models` lists `model`.

Every request is recorded (`requests`: method, path, body, main); `tool_results()` reads
the `role: "tool"` messages the agent sent back, `wait_for_requests()` waits for the
main loop to call. Runs on 127.0.0.1, on a free port, in a daemon thread.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tests.fakes.http import JSONHandler, ScriptedModelServer

Item = dict[str, Any]
Turn = Sequence[Item] | Callable[[dict[str, Any]], Sequence[Item]]

__all__ = ["FakeChatServer", "text", "tool_call"]


def text(value: str) -> Item:
    return {"type": "text", "text": value}


def tool_call(name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None) -> Item:
    return {"type": "tool_call", "id": id or f"call_fake_{uuid.uuid4().hex[:12]}", "name": name, "arguments": arguments or {}}


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


class FakeChatServer(ScriptedModelServer):
    thread_name = "fake-openai-chat"

    def __init__(
        self,
        turns: Iterable[Turn] = (),
        *,
        default_text: str = "Done (fake model: no more scripted turns).",
        model: str = "fake-model",
    ) -> None:
        self._ids = itertools.count(1)
        super().__init__(turns, default_text=default_text, model=model)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # -- what the model saw ----------------------------------------------------------------

    @property
    def main_requests(self) -> list[dict[str, Any]]:
        return self.main_bodies()

    def tool_results(self) -> list[dict[str, Any]]:
        """What the agent sent back for its tool calls, in order, once per call id:
        [{tool_call_id, text}]."""
        seen: dict[str, dict[str, Any]] = {}
        for body in self.main_requests:
            for message in body.get("messages") or []:
                if isinstance(message, dict) and message.get("role") == "tool":
                    call_id = str(message.get("tool_call_id") or "")
                    seen.setdefault(call_id, {"tool_call_id": call_id, "text": _content_text(message.get("content"))})
        return list(seen.values())

    # -- answering -------------------------------------------------------------------------

    def _next_items(self, body: dict[str, Any], main: bool) -> list[Item]:
        return self._next_reply(body, main, text)

    def chunks(self, items: Sequence[Item], model: str) -> list[dict[str, Any]]:
        """The `chat.completion.chunk`s of one streamed answer made of `items`."""
        n = next(self._ids)
        base = {"id": f"chatcmpl-fake-{n}", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        out = [chunk({"role": "assistant", "content": ""})]
        calls = [i for i in items if i.get("type") == "tool_call"]
        for item in items:
            if item.get("type") != "tool_call" and item.get("text"):
                out.append(chunk({"content": item["text"]}))
        for index, call in enumerate(calls):
            head = {"index": index, "id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": ""}}
            out.append(chunk({"tool_calls": [head]}))
            arguments = json.dumps(call.get("arguments") or {})
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}))
        out.append(chunk({}, "tool_calls" if calls else "stop"))
        out.append({**base, "choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70}})
        return out

    def completion(self, items: Sequence[Item], model: str) -> dict[str, Any]:
        calls = [i for i in items if i.get("type") == "tool_call"]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(i.get("text", "") for i in items if i.get("type") != "tool_call") or None,
        }
        if calls:
            message["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments") or {})}}
                for c in calls
            ]
        return {
            "id": f"chatcmpl-fake-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 20, "total_tokens": 70},
        }


class _Handler(JSONHandler):
    fake: FakeChatServer

    def do_GET(self) -> None:
        self.fake._record({"method": "GET", "path": self.path})
        if self.path.split("?", 1)[0].endswith("/models"):
            self.send_json(200, {"object": "list", "data": [{"id": self.fake.model, "object": "model", "owned_by": "fake"}]})
        else:
            self.send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        body = self.read_json()
        path = self.path.split("?", 1)[0]
        if not path.endswith("/chat/completions"):
            self.fake._record({"method": "POST", "path": self.path, "body": body})
            self.send_json(404, {"error": {"message": f"no route {path}"}})
            return
        main = bool(body.get("tools"))
        items = self.fake._next_items(body, main)
        self.fake._record({"method": "POST", "path": self.path, "body": body, "main": main, "reply": items})
        model = str(body.get("model") or self.fake.model)
        if body.get("stream"):
            payload = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in self.fake.chunks(items, model))
            self.send_sse(payload + b"data: [DONE]\n\n")
        else:
            self.send_json(200, self.fake.completion(items, model))


FakeChatServer.handler_class = _Handler
