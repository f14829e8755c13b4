"""`codex-hook`: a developer's own Codex CLI, gated through its PreToolUse hook (external run)."""

from __future__ import annotations

from drivers.base import Descriptor, DriverError, RunContext, RunResult

DESCRIPTOR = Descriptor(
    name="codex-hook",
    title="Codex (hook gateway)",
    sandbox=frozenset(),
    web_search=frozenset(),
    browser=frozenset(),
    approval_modes={"permission": frozenset({"ask", "auto-approve", "auto-deny"})},
    retry=False,
    structured_output=False,
    external=True,
    # apply_patch reaches the hook as a shell heredoc: a command, not an edit.
    gates=frozenset({"commands", "tools"}),
    # Nothing of the agent runs here: it keeps the developer's own environment and settings.
    isolation=("none: the agent runs on the developer's machine, with their environment and settings",),
    resumes=False,
    sees=(
        "every tool call Codex runs hooks for (0.171.0: shell commands, apply_patch as a shell heredoc, MCP tools), before it runs",
        "what a tool returned, when the PostToolUse hook is installed too; the end of the session (SessionEnd)",
    ),
    cannot_see=(
        "anything Codex does without a hook; Codex's own approval prompt still applies after Gatehouse's allow",
        "the files on the developer's machine; what an allowed command does inside",
    ),
)


class CodexHookDriver:
    """Never run by a worker; present so the registry can describe the driver."""

    descriptor = DESCRIPTOR

    async def run(self, ctx: RunContext) -> RunResult:
        raise DriverError("external_run", "codex-hook runs are driven by the agent's hook, not by a worker")
