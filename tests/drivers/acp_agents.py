"""The real ACP agents and OpenCode under test, each with its scripted fake model server.

Gemini CLI is not built in: it runs as the `GATEHOUSE_ACP_AGENTS` example of docs/drivers.md configures
it (`gemini --acp`, whose profile `gemini` is inferred, with the variables it names), against the
fake Gemini API of tests/fakes/gemini_server.py.

One vocabulary for every scenario: `command(cmd)`, `write(path, content)`, `say(text)`
build a scripted model turn in the agent's own tool names; `tool_results()` is what the
model was sent back; `was_told(words)` whether words reached the model after its first
request. `settings()` are the driver settings a FakeRunContext (or Django's settings, in
the end-to-end tests) needs to reach the fake.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import anthropic_server as anthropic
from tests.fakes import gemini_server as gemini
from tests.fakes import openai_chat_server as chat

ROOT = Path(__file__).resolve().parents[2]
AGENTS_DIR = ROOT / ".agents"
CLAUDE_CODE_ACP = AGENTS_DIR / "node_modules" / "@zed-industries" / "claude-code-acp" / "dist" / "index.js"
OPENCODE_BIN = AGENTS_DIR / "node_modules" / "opencode-linux-x64" / "bin" / "opencode"
GEMINI_CLI = AGENTS_DIR / "node_modules" / "@google" / "gemini-cli" / "bundle" / "gemini.js"
# A fixed model: with its default ("auto") Gemini CLI first asks a classifier model to
# route each prompt, which the fake does not play.
GEMINI_MODEL = "gemini-2.5-flash"

# (driver, ACP agent) of every scenario: the two ACP agents and the OpenCode server driver.
TARGETS = [("acp", "claude-code-acp"), ("acp", "opencode"), ("opencode", "")]
TARGET_IDS = ["acp-claude-code-acp", "acp-opencode", "opencode"]


def require(path: Path, what: str) -> None:
    if path.exists():
        return
    message = f"{what} is not installed at {path} (run `make agents`)"
    if os.environ.get("GATEHOUSE_REQUIRE_AGENTS") == "1":
        pytest.fail(message + "; GATEHOUSE_REQUIRE_AGENTS=1 requires it")
    pytest.skip(message)


@dataclass
class Agent:
    driver: str
    agent: str
    server: Any

    @property
    def claude(self) -> bool:
        return self.agent == "claude-code-acp"

    @property
    def gemini(self) -> bool:
        return self.agent == "gemini"

    @property
    def options(self) -> dict[str, Any]:
        return {"agent": self.agent} if self.driver == "acp" else {}

    def script(self, *turns: Any) -> None:
        self.server.add_turns(*turns)

    def command(self, cmd: str) -> Any:
        if self.claude:
            return [anthropic.tool_use("mcp__acp__Bash", {"command": cmd, "description": "scripted command", "timeout": 60000})]
        if self.gemini:
            return [gemini.function_call("run_shell_command", {"command": cmd, "description": "scripted command"})]
        return [chat.tool_call("bash", {"command": cmd, "description": "scripted command"})]

    def write(self, path: str, content: str) -> Any:
        if self.claude:
            return [anthropic.tool_use("mcp__acp__Write", {"file_path": path, "content": content})]
        if self.gemini:
            return [gemini.function_call("write_file", {"file_path": path, "content": content})]
        return [chat.tool_call("write", {"filePath": path, "content": content})]

    def say(self, words: str) -> Any:
        if self.gemini:
            return [gemini.text(words)]
        return [anthropic.text(words)] if self.claude else [chat.text(words)]

    def tool_results(self) -> list[str]:
        return [r["text"] for r in self.server.tool_results()]

    def was_told(self, words: str) -> bool:
        with self.server._lock:
            later = [r.get("body") for r in self.server.requests if r.get("main")][1:]
        return words in json.dumps(later)

    def settings(self) -> dict[str, Any]:
        base: dict[str, Any] = {"agents_dir": str(AGENTS_DIR), "idle_timeout_s": 60, "output_limit": 64 * 1024, "command_timeout_s": 60}
        if self.claude:
            return {**base, "env_values": {"ANTHROPIC_BASE_URL": self.server.url, "ANTHROPIC_API_KEY": "dummy"}}
        if self.gemini:
            # As docs/drivers.md's GATEHOUSE_ACP_AGENTS example, with the fake's address and model.
            names = ["GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GEMINI_MODEL"]
            command = [shutil.which("node") or "node", str(GEMINI_CLI), "--acp"]
            return {**base, "acp_agents": {"gemini": {"command": command, "env": names}},
                    "env_values": {"GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": self.server.url, "GEMINI_MODEL": GEMINI_MODEL}}
        return {
            **base,
            "opencode_bin": str(OPENCODE_BIN),
            "opencode_base_url": self.server.base_url,
            "opencode_model": "fake-model",
            "opencode_env_key": "FAKE_OPENAI_KEY",
            "env_values": {"FAKE_OPENAI_KEY": "dummy"},
        }


@contextmanager
def agent_under_test(driver: str, agent: str) -> Iterator[Agent]:
    if driver == "acp" and agent == "claude-code-acp":
        require(CLAUDE_CODE_ACP, "claude-code-acp")
        with anthropic.FakeAnthropicServer() as server:
            yield Agent(driver, agent, server)
    elif driver == "acp" and agent == "gemini":
        require(GEMINI_CLI, "Gemini CLI")
        with gemini.FakeGeminiServer(model=GEMINI_MODEL) as server:
            yield Agent(driver, agent, server)
    else:
        require(OPENCODE_BIN, "opencode")
        with chat.FakeChatServer() as server:
            yield Agent(driver, agent, server)
