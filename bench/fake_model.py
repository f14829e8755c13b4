"""A fake model server in a process of its own, for the benchmarks.

A real model is remote: it does not share the benchmarked process's CPU or its GIL. Run in
the same process as the worker (as the tests do), the fake model's thread competes with the
worker for the GIL exactly while Gatehouse writes its records, and a run through Gatehouse
looks slower than it is. So `bench/cli_overhead.py` starts it here, in a child process:

    .venv/bin/python bench/fake_model.py codex|claude|claude-acp|chat STEPS COPIES

serves COPIES scripted conversations (each: STEPS shell commands, then an answer), prints
its URL on the first line of standard output, and stops when standard input closes.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes import anthropic_server as anthropic  # noqa: E402
from tests.fakes import openai_chat_server as chat  # noqa: E402
from tests.fakes import responses_server as responses  # noqa: E402


def claude_turns(steps: int, tool: str = "Bash") -> list[Any]:
    # claude-code-acp's MCP Bash requires `timeout` (milliseconds); Claude Code's Bash takes it too.
    return [[anthropic.tool_use(tool, {"command": f"echo step {i}", "description": f"step {i}", "timeout": 60000})]
            for i in range(steps)] + [[anthropic.text("All steps done.")]]


def chat_turns(steps: int) -> list[Any]:
    """OpenCode's `bash` tool, over chat completions."""
    return [[chat.tool_call("bash", {"command": f"echo step {i}", "description": f"step {i}"})] for i in range(steps)] + [
        [chat.text("All steps done.")]
    ]


def codex_turns(steps: int) -> list[Any]:
    return [[responses.exec_command(f"echo step {i}")] for i in range(steps)] + [[responses.message("All steps done.")]]


def main() -> None:
    kind, steps, copies = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if kind in ("claude", "claude-acp"):
        # claude-code-acp's Bash, when its client offers a terminal, is its MCP tool.
        tool = "mcp__acp__Bash" if kind == "claude-acp" else "Bash"
        with anthropic.FakeAnthropicServer() as server:
            for _ in range(copies):
                server.add_turns(*claude_turns(steps, tool))
            print(server.url, flush=True)
            sys.stdin.read()
    elif kind == "chat":
        with chat.FakeChatServer() as server:
            for _ in range(copies):
                server.add_turns(*chat_turns(steps))
            print(server.base_url, flush=True)
            sys.stdin.read()
    else:
        with responses.FakeResponsesServer() as server:
            for _ in range(copies):
                server.add_turns(*codex_turns(steps))
            print(server.base_url, flush=True)
            sys.stdin.read()


if __name__ == "__main__":
    main()
