"""A scripted fake of the Gemini API (`generativelanguage.googleapis.com`), for Gemini CLI.

    with FakeGeminiServer([
        [function_call("run_shell_command", {"command": "echo hi"})],
        [text("Done.")],
    ]) as server:
        env = {"GOOGLE_GEMINI_BASE_URL": server.url, "GEMINI_API_KEY": "dummy"}
        ...
        assert "hi" in server.tool_results()[0]["text"]

Gemini CLI (`@google/gemini-cli`, through `@google/genai`) POSTs
`{base}/v1beta/models/{model}:streamGenerateContent?alt=sse` for its agent loop and
`:generateContent` for its helpers (routing, loop checks, next-speaker checks). Each
request that offers tools (`tools[].functionDeclarations`: the agent's main loop) pops
the next scripted turn: a list of `text(...)` and `function_call(...)` parts, or a
callable `turn(body) -> parts`. Any other request gets `default_text` without using up a
turn; so does a main request once the script is exhausted. `:countTokens` answers a count.
The stream is server-sent events, one `GenerateContentResponse` per `data:` line.

Every request is recorded (`requests`: method, path, body, main); `tool_results()` reads
the `functionResponse` parts the agent sent back. Runs on 127.0.0.1, on a free port, in a
daemon thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from tests.fakes.http import JSONHandler, ScriptedModelServer

Part = dict[str, Any]
Turn = Sequence[Part] | Callable[[dict[str, Any]], Sequence[Part]]

__all__ = ["FakeGeminiServer", "function_call", "text"]

USAGE = {"promptTokenCount": 50, "candidatesTokenCount": 20, "totalTokenCount": 70}


def text(value: str) -> Part:
    return {"text": value}


def function_call(name: str, args: dict[str, Any] | None = None) -> Part:
    return {"functionCall": {"name": name, "args": args or {}}}


def _response_text(response: Any) -> str:
    if isinstance(response, dict):
        for key in ("output", "llmContent", "content", "error"):
            if isinstance(response.get(key), str):
                return str(response[key])
    return json.dumps(response)


class FakeGeminiServer(ScriptedModelServer):
    thread_name = "fake-gemini"

    def __init__(self, turns: Iterable[Turn] = (), *, model: str = "gemini-2.5-flash") -> None:
        super().__init__(turns, default_text="Done (fake model: no more scripted turns).", model=model)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def tool_results(self) -> list[dict[str, Any]]:
        """What the agent sent back for its function calls, in order: [{name, text}]. Gemini
        CLI sends the whole conversation each time, so the last main request holds them all."""
        bodies = self.main_bodies()
        parts = [part for content in (bodies[-1].get("contents") or [] if bodies else [])
                 for part in content.get("parts") or []]  # fmt: skip
        return [{"name": str(p["functionResponse"].get("name") or ""), "text": _response_text(p["functionResponse"].get("response"))}
                for p in parts if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]  # fmt: skip

    def _next_parts(self, body: dict[str, Any], main: bool) -> list[Part]:
        return self._next_reply(body, main, text)

    @staticmethod
    def response(parts: Sequence[Part], model: str) -> dict[str, Any]:
        return {
            "candidates": [{"content": {"role": "model", "parts": list(parts) or [text("")]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": USAGE,
            "modelVersion": model,
        }


class _Handler(JSONHandler):
    fake: FakeGeminiServer

    def do_GET(self) -> None:
        self.fake._record({"method": "GET", "path": self.path})
        if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
            self.send_json(200, {"models": [{"name": f"models/{self.fake.model}", "supportedGenerationMethods": ["generateContent"]}]})
        else:
            self.send_json(404, {"error": {"code": 404, "message": f"no route {self.path}", "status": "NOT_FOUND"}})

    def do_POST(self) -> None:
        body = self.read_json()
        path = self.path.split("?", 1)[0]
        model = path.rsplit("/", 1)[-1].split(":", 1)[0] or self.fake.model
        if path.endswith(":countTokens"):
            self.fake._record({"method": "POST", "path": self.path, "body": body})
            self.send_json(200, {"totalTokens": 50})
            return
        if not (path.endswith(":streamGenerateContent") or path.endswith(":generateContent")):
            self.fake._record({"method": "POST", "path": self.path, "body": body})
            self.send_json(404, {"error": {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}})
            return
        tools = body.get("tools") or (body.get("config") or {}).get("tools") or []
        main = any(isinstance(t, dict) and t.get("functionDeclarations") for t in tools)
        parts = self.fake._next_parts(body, main)
        self.fake._record({"method": "POST", "path": self.path, "body": body, "main": main, "reply": parts})
        answer = self.fake.response(parts, model)
        if path.endswith(":streamGenerateContent"):
            self.send_sse(f"data: {json.dumps(answer)}\r\n\r\n".encode())
        else:
            self.send_json(200, answer)


FakeGeminiServer.handler_class = _Handler
