"""How the Claude Code CLI is kept from its workspace's configuration (issue 15).

A workspace is other people's code. Started in it with no flags, CLI 2.1.197 (in SDK mode,
where no trust dialog is shown) ran the `SessionStart`, `UserPromptSubmit`, `PreToolUse`,
`PermissionRequest` and `Stop` hooks of the workspace's `.claude/settings.json` and
`.claude/settings.local.json`, their `apiKeyHelper`, and the stdio server of its `.mcp.json`,
loaded its custom agents, commands and skills, and read a parent directory's `.mcp.json`
and `CLAUDE.md` — all before or beside the gate. Observed with the fake Anthropic server,
every one of those writing a marker file. So each start passes:

- `--setting-sources user`: only the user settings of the run's own CLAUDE_CONFIG_DIR,
  which Gatehouse rewrites at every start (`prepare_config_dir`). No project or local
  settings, hooks, permission rules, `defaultMode`, `enableAllProjectMcpServers`, plugins,
  agents, commands or skills from the workspace or its parents (observed: none ran, none
  was listed in `system/init`).
- `--strict-mcp-config`, plus `--mcp-config <file>` when an administrator configured
  servers (`GATEHOUSE_CLAUDE_MCP_SERVERS`): only those start (observed: connected, and each
  `mcp__<server>__<tool>` call reached the PreToolUse hook and `can_use_tool` like any tool).
- `--append-system-prompt-file <file>` with the workspace's `CLAUDE.md` (and
  `.claude/CLAUDE.md`), read by Gatehouse: `--setting-sources user` stops the CLI loading
  them, and the CLI's own loading followed a `CLAUDE.md` symlink and `@imports` (a symlink
  to a file outside the workspace was sent to the model, observed). Gatehouse passes only
  regular files inside the workspace, as plain text (an `@path` line stays text; the
  appended prompt is not expanded, observed).
- `CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS=1` (environment): without it the CLI runs
  `git status` and `git log` in the workspace at start-up, and `git status` runs the
  repository's `core.fsmonitor` and `filter.<x>.clean` programs (observed). With it, the
  CLI's only start-up git calls were `ls-files` with fsmonitor off and `config --get`.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivers import workspace_config

SETTING_SOURCES = "user"
INSTRUCTION_FILES = ("CLAUDE.md", ".claude/CLAUDE.md")
# The agent configuration Claude Code reads for this driver's run; `.codex/` and the like
# are other agents' and not read by it.
AGENTS = ("claude-code", "mcp", "git")
# User-level customisations the CLI would load from CLAUDE_CONFIG_DIR with the "user"
# source. Gatehouse writes none of them; an approved command may have (the directory is
# the agent's), so each start removes them before the CLI reads the directory.
USER_CUSTOMISATIONS = (
    "settings.local.json", "CLAUDE.md", "agents", "commands", "skills", "hooks",
    "output-styles", "rules", "plugins",
)  # fmt: skip


def prepare_config_dir(config_dir: Path) -> None:
    """The run's CLAUDE_CONFIG_DIR holds only what Gatehouse writes (sessions stay)."""
    config_dir.mkdir(parents=True, exist_ok=True)
    for name in USER_CUSTOMISATIONS:
        path = config_dir / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
    settings = config_dir / "settings.json"
    if settings.is_symlink():
        settings.unlink()
    settings.write_text("{}\n", encoding="utf-8")


def argv(*, files_dir: Path, workspace: Path, mcp_servers: Mapping[str, Any]) -> list[str]:
    """The CLI flags that keep the workspace's configuration out (see the module docstring),
    writing the files they name into `files_dir` (the run's own directory)."""
    files_dir.mkdir(parents=True, exist_ok=True)
    flags = ["--setting-sources", SETTING_SOURCES, "--strict-mcp-config"]
    if mcp_servers:
        flags += ["--mcp-config", str(_write_private(files_dir / "mcp-servers.json", json.dumps({"mcpServers": dict(mcp_servers)})))]
    instructions = workspace_config.project_instructions(workspace, INSTRUCTION_FILES)
    if instructions:
        flags += ["--append-system-prompt-file", str(_write_private(files_dir / "project-instructions.md", _render(instructions)))]
    return flags


def _render(instructions: list[tuple[str, str]]) -> str:
    parts = [
        "# Project instructions from the workspace",
        "Gatehouse passes these files from the workspace as context; it does not load the workspace's "
        "Claude Code settings, hooks, MCP servers, agents or commands.",
    ]
    for name, text in instructions:
        parts += ["", f"## {name}", "", text]
    return "\n".join(parts) + "\n"


def _write_private(path: Path, text: str) -> Path:
    # May hold an MCP server's token: readable by the server's user only.
    path.unlink(missing_ok=True)  # never write through whatever a command left there
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
