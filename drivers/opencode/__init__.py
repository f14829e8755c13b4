"""The OpenCode driver: `opencode serve` (HTTP + SSE), one server process per run.

Flow: the server starts on a free 127.0.0.1 port with basic auth and its whole
configuration in OPENCODE_CONFIG_CONTENT (every permission `ask`, the model provider
from settings, project configuration disabled: `config.py`); `POST /session`,
`POST /session/{id}/prompt_async`, then `GET /event` is followed until the session is
idle. `permission.asked` becomes an approval answered `once` or `reject` (with the
reviewer's reason as the message, which OpenCode hands to the model); `question.asked`
becomes a question, answered or rejected. Cancel is `POST /session/{id}/abort`; a
permission still pending after it is never approved. The server is stopped (process
group SIGTERM, then SIGKILL) and reaped when the run ends, whatever the ending.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivers.base import FLOOR_SANDBOX, Descriptor, RunContext, RunResult, WorkspaceConfigError

from .config import blocking_config_files, refusal
from .driver import OpenCodeRun

__all__ = ["DESCRIPTOR", "OpenCodeDriver", "check_workspace"]


def check_workspace(workspace: Path, options: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
    """Refuse a workspace whose OpenCode configuration OpenCode would run (config.py)."""
    found = blocking_config_files(workspace)
    if found:
        raise WorkspaceConfigError(refusal(found), files=found)

DESCRIPTOR = Descriptor(
    name="opencode",
    title="OpenCode (opencode serve)",
    # Gatehouse's floor (drivers/sandbox/) holds the agent and all it starts.
    sandbox=FLOOR_SANDBOX,
    web_search=frozenset(),
    browser=frozenset(),
    approval_modes={
        "permission": frozenset({"ask", "auto-approve", "auto-deny"}),
        "question": frozenset({"ask", "auto-deny"}),
        "plan_review": frozenset(),
    },
    retry=False,
    # The run's OpenCode session lives in its own data directory and is continued.
    resumes=True,
    gates=frozenset({"commands", "edits", "reads", "tools"}),
    isolation=(
        "allow-listed environment",
        "own HOME and XDG directories per session",
        "configuration only from Gatehouse (OPENCODE_CONFIG_CONTENT, project config disabled)",
        "a workspace with opencode.json or .opencode/ (or a parent with one) is refused",
        "server on 127.0.0.1 with a per-run password",
        "the repository's git programs switched off",
    ),
    check_workspace=check_workspace,
    sees=(
        "every permission OpenCode asks (every permission is set to ask): bash commands, file "
        "edits and writes with their diff, reads, globs, greps, web fetches, tasks, todos, "
        "paths outside the workspace",
        "questions (the question tool)",
        "the agent's messages, tool calls and usage (SSE events)",
    ),
    cannot_see=(
        "a workspace with OpenCode configuration (opencode.json[c], .opencode/, also in a parent "
        "directory) is refused: OpenCode 1.18.33 loads its plugins and agents whatever it is told",
        "what an allowed bash command does inside its shell",
        "OpenCode's own bookkeeping in the run's data directory",
    ),
)


class OpenCodeDriver:
    descriptor = DESCRIPTOR

    async def run(self, ctx: RunContext) -> RunResult:
        return await OpenCodeRun(ctx).run()
