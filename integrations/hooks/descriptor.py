"""`claude-code-hook`: a developer's own Claude Code, gated through its PreToolUse hook.

The run is external: the agent runs on the developer's machine and calls the gateway, so no
worker claims or executes it (`external=True`, see runs/leases.py).
"""

from __future__ import annotations

from drivers.base import Descriptor, DriverError, RunContext, RunResult

DESCRIPTOR = Descriptor(
    name="claude-code-hook",
    title="Claude Code (hook gateway)",
    sandbox=frozenset(),
    # web_search "deny" is enforced by the gateway (a WebSearch call is refused).
    web_search=frozenset({"allow", "deny"}),
    browser=frozenset({"deny"}),
    # Only permissions: questions and plans stay with the developer at their terminal.
    approval_modes={"permission": frozenset({"ask", "auto-approve", "auto-deny"})},
    retry=False,
    structured_output=False,
    external=True,
    gates=frozenset({"commands", "edits", "reads", "tools"}),
    # Nothing of the agent runs here: it keeps the developer's own environment and settings.
    isolation=("none: the agent runs on the developer's machine, with their environment and settings",),
    resumes=False,
    sees=(
        "every tool call the hook's matcher covers (the README's settings.json: all tools), before it runs",
        "shell commands, file writes and edits (a diff from the tool's input), reads, searches, web and MCP tools",
        "what a tool returned, when the PostToolUse hook is installed too; the end of the session (SessionEnd)",
    ),
    cannot_see=(
        "questions (AskUserQuestion) and plan approval (ExitPlanMode): the developer answers them in the terminal",
        "the files on the developer's machine (diffs show the tool's input, not the file)",
        "what an allowed command does inside; a Claude Code started without the hook (or with --bare)",
    ),
)


class ClaudeCodeHookDriver:
    """Never run by a worker; present so the registry can describe the driver."""

    descriptor = DESCRIPTOR

    async def run(self, ctx: RunContext) -> RunResult:
        raise DriverError("external_run", "claude-code-hook runs are driven by the agent's hook, not by a worker")
