"""Which ACP agents a run may choose, how each is started and configured.

`GATEHOUSE_ACP_AGENTS` (settings "acp_agents") maps a name to a command line (a string,
split like a shell would, or a list), or to `{"command": ..., "profile": ..., "env":
[names]}`. The built-in entries are the agents `make agents` installs:

- `claude-code-acp`: `@zed-industries/claude-code-acp` under Node. Its model is reached
  through ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY, as for the Claude Code driver; HOME and
  CLAUDE_CONFIG_DIR are the run's; `session/new` passes `settingSources: []` in
  `_meta.claudeCode.options`, so the bundled Claude Code loads no settings file at all
  (no workspace hooks, permission rules, MCP servers or modes).
- `opencode`: `opencode acp`, configured only through OPENCODE_CONFIG_CONTENT with project
  config disabled (see drivers/opencode/config.py).

A profile says how to prepare an agent: `claude-code-acp`, `opencode`, or `generic`
(only the allow-listed environment plus the variables listed under `env`). It is
inferred from the command when not given.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers.base import OptionsError, WorkspaceConfigError
from drivers.opencode import config as opencode_config

from .env import agent_environment

PROFILES = ("claude-code-acp", "opencode", "generic")
OPTIONS = frozenset({"agent"})
DEFAULT_AGENT = "claude-code-acp"

CLAUDE_PROVIDER_ENV = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL")
CLAUDE_ISOLATION_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


@dataclass(frozen=True)
class AgentSpec:
    name: str
    argv: tuple[str, ...]
    profile: str
    env_names: tuple[str, ...] = ()


def _agents_dir(settings: Mapping[str, Any]) -> Path:
    return Path(settings.get("agents_dir") or Path(__file__).resolve().parents[2] / ".agents").resolve()


def _builtin(settings: Mapping[str, Any]) -> dict[str, AgentSpec]:
    script = _agents_dir(settings) / "node_modules" / "@zed-industries" / "claude-code-acp" / "dist" / "index.js"
    node = shutil.which("node") or "node"
    agents = {"claude-code-acp": AgentSpec("claude-code-acp", (node, str(script)), "claude-code-acp")}
    opencode = opencode_config.find_binary(settings)
    agents["opencode"] = AgentSpec("opencode", (opencode or "opencode", "acp"), "opencode")
    return agents


def _infer_profile(argv: tuple[str, ...]) -> str:
    words = [Path(a).name for a in argv[:3]]
    if any("claude-code-acp" in a for a in argv[:3]):
        return "claude-code-acp"
    if words and words[0] == "opencode" and "acp" in argv[1:]:
        return "opencode"
    return "generic"


def _parse(name: str, value: Any) -> AgentSpec:
    profile = ""
    env_names: tuple[str, ...] = ()
    if isinstance(value, Mapping):
        profile = str(value.get("profile") or "")
        env_names = tuple(str(n) for n in value.get("env") or ())
        value = value.get("command")
    if isinstance(value, str):
        argv = tuple(shlex.split(value))
    elif isinstance(value, (list, tuple)) and all(isinstance(a, str) for a in value):
        argv = tuple(value)
    else:
        raise OptionsError(f"ACP agent {name!r} has no usable command line in GATEHOUSE_ACP_AGENTS", field="options.agent")
    if not argv:
        raise OptionsError(f"ACP agent {name!r} has an empty command line", field="options.agent")
    profile = profile or _infer_profile(argv)
    if profile not in PROFILES:
        raise OptionsError(f"ACP agent {name!r} has an unknown profile {profile!r} (known: {', '.join(PROFILES)})", field="options.agent")
    return AgentSpec(name, argv, profile, env_names)


def configured_agents(settings: Mapping[str, Any]) -> dict[str, AgentSpec]:
    agents = _builtin(settings)
    for name, value in (settings.get("acp_agents") or {}).items():
        agents[str(name)] = _parse(str(name), value)
    return agents


def validate_options(options: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
    unknown = sorted(set(options) - OPTIONS)
    if unknown:
        raise OptionsError(f"unknown option {unknown[0]!r} for the acp driver (known: agent)", field=f"options.{unknown[0]}")
    agent_for(options, settings)


def agent_for(options: Mapping[str, Any], settings: Mapping[str, Any]) -> AgentSpec:
    name = options.get("agent", DEFAULT_AGENT)
    agents = configured_agents(settings)
    if not isinstance(name, str) or name not in agents:
        known = ", ".join(sorted(agents))
        raise OptionsError(f"unknown ACP agent {name!r} (configured: {known})", field="options.agent")
    return agents[name]


def environment(spec: AgentSpec, settings: Mapping[str, Any], runtime_dir: Path) -> dict[str, str]:
    """The agent's whole environment, by profile (always the allow-listed builder)."""
    if spec.profile == "opencode":
        return opencode_config.environment(settings, runtime_dir)
    home = Path(runtime_dir) / "home"
    if spec.profile == "claude-code-acp":
        extra = {**CLAUDE_ISOLATION_ENV, "CLAUDE_CONFIG_DIR": str(home / ".claude")}
        if os.geteuid() == 0:
            # The bundled Claude Code refuses to start a session as root without it
            # (observed, protocol notes). The driver never selects bypassPermissions.
            extra["IS_SANDBOX"] = "1"
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        return agent_environment(settings, home=home, provider_names=CLAUDE_PROVIDER_ENV, extra=extra)
    return agent_environment(settings, home=home, provider_names=spec.env_names)


def session_meta(spec: AgentSpec) -> dict[str, Any]:
    """`_meta` for session/new and session/load."""
    if spec.profile == "claude-code-acp":
        return {"claudeCode": {"options": {"settingSources": []}}}
    return {}


def check_workspace(workspace: Path, options: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
    """Refuse a workspace whose agent configuration the chosen agent would run anyway."""
    spec = agent_for(options, settings)
    if spec.profile == "opencode":
        found = opencode_config.blocking_config_files(workspace)
        if found:
            raise WorkspaceConfigError(opencode_config.refusal(found), files=found)


def ignored_workspace_config(spec: AgentSpec, workspace: Path) -> list[str]:
    """Agent configuration in the workspace that the agent is told not to load (said once
    in the timeline). claude-code-acp: `settingSources: []` keeps the bundled Claude Code
    off every settings file (hooks, MCP servers, modes); the adapter itself still reads
    `.claude/settings*.json` permission rules, which can only skip its permission request:
    the command or file operation then reaches the gate through terminal/* or fs/*."""
    if spec.profile == "claude-code-acp":
        names = [".claude/settings.json", ".claude/settings.local.json", ".mcp.json"]
        return [n for n in names if (Path(workspace) / n).exists()]
    return []
