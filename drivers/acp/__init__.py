"""The ACP driver: any agent that speaks the Agent Client Protocol (JSON-RPC on stdio).

Agents are chosen per run (`{"driver": "acp", "options": {"agent": "opencode"}}`) from
GATEHOUSE_ACP_AGENTS and the built-in entries (`agents.py`). Flow: `initialize` with the
client capabilities fs (read and write) and terminal, `session/new` in the run's
workspace (or `session/load` of the run's own session after a restart), `session/prompt`,
`session/update` notifications into the timeline; `session/request_permission`, `fs/*`
and `terminal/*` through the gate (`client.py`); cancel is `session/cancel` with every
pending permission answered `cancelled`.
"""

from __future__ import annotations

from drivers.base import FLOOR_SANDBOX, Descriptor, RunContext, RunResult

from .agents import check_workspace, validate_options
from .driver import AcpRun

__all__ = ["DESCRIPTOR", "AcpDriver", "check_workspace", "validate_options"]

DESCRIPTOR = Descriptor(
    name="acp",
    title="ACP agents (Agent Client Protocol: claude-code-acp, opencode acp, …)",
    # Gatehouse's floor (drivers/sandbox/) holds the agent and all it starts.
    sandbox=FLOOR_SANDBOX,
    web_search=frozenset(),
    browser=frozenset(),
    approval_modes={
        "permission": frozenset({"ask", "auto-approve", "auto-deny"}),
        # claude-code-acp asks ExitPlanMode as a permission with plan options.
        "plan_review": frozenset({"ask", "auto-approve", "auto-deny"}),
        # No ACP agent here offers a question tool (claude-code-acp disables AskUserQuestion).
        "question": frozenset(),
    },
    retry=False,
    # session/load where the agent offers it (claude-code-acp, opencode acp); otherwise the
    # run starts again from its prompt and the gate answers what already ran.
    resumes=True,
    gates=frozenset({"commands", "edits", "reads", "tools"}),
    isolation=(
        "allow-listed environment",
        "own HOME, XDG and config directories per session",
        "files and terminals served inside the workspace only",
        "claude-code-acp: settingSources [] (no workspace hooks, permission rules, MCP servers), CLAUDE.md as plain context, "
        "no start-up git status, no Grep or Glob (they read without asking)",
        "opencode: configuration only from Gatehouse; a workspace with OpenCode configuration is refused",
        "gemini: Gatehouse's settings take away its tools that act without asking (searches, listings, sub-agents, "
        "skills, web search)",
        "other agents: a workspace with .gemini/, .mcp.json or OpenCode configuration is refused",
        "the repository's git programs switched off",
    ),
    sees=(
        "every tool call the agent asks permission for (session/request_permission), with its "
        "title, kind, raw input and diff",
        "every file the agent reads or writes through the client (fs/read_text_file, "
        "fs/write_text_file), inside the workspace only",
        "every command the agent runs through the client (terminal/create)",
        "the agent's messages, tool calls, plans, mode changes and usage (session/update)",
    ),
    cannot_see=(
        "what an agent does in its own process without asking (opencode acp runs bash itself, "
        "after the permission request; reads and searches an agent's settings allow)",
        "what an allowed command does inside its shell",
        "session/load resumes only agents that offer it (agentCapabilities.loadSession); "
        "others start again from the prompt, and the gate answers finished steps from the record",
    ),
    validate_options=validate_options,
    check_workspace=check_workspace,
)


class AcpDriver:
    descriptor = DESCRIPTOR

    async def run(self, ctx: RunContext) -> RunResult:
        return await AcpRun(ctx).run()
