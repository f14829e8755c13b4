"""Which ACP agents a run may choose, how each is started and configured.

`GATEHOUSE_ACP_AGENTS` (settings "acp_agents") maps a name to a command line (a string,
split like a shell would, or a list), or to `{"command": ..., "profile": ..., "env":
[names]}`. The built-in entries are the agents `make agents` installs:

- `claude-code-acp`: `@zed-industries/claude-code-acp` under Node. Its model is reached
  through ANTHROPIC_BASE_URL / ANTHROPIC_API_KEY, as for the Claude Code driver; HOME and
  CLAUDE_CONFIG_DIR are the run's; `session/new` passes `settingSources: []` in
  `_meta.claudeCode.options`, so the bundled Claude Code loads no settings file at all
  (no workspace hooks, permission rules, MCP servers or modes) and `disallowedTools`
  Grep and Glob (`CLAUDE_UNASKED_TOOLS`), and the workspace's CLAUDE.md as plain text in
  `_meta.systemPrompt.append` (regular files inside the workspace only, read by
  Gatehouse, as for the Claude Code driver).
- `opencode`: `opencode acp`, configured only through OPENCODE_CONFIG_CONTENT with project
  config disabled (see drivers/opencode/config.py).

Gemini CLI is not built in (`make agents` installs it; README shows its entry). Its profile,
`gemini`, is inferred from a `gemini … --acp` command line: the run's HOME holds a
`.gemini/settings.json` written by Gatehouse at every start that takes away the tools
that act without asking (`GEMINI_UNASKED_TOOLS`). Its search and listing tools
(`grep_search`, `glob`, `list_directory`), sub-agents and skills run without asking, in
its own process: a `grep_search` printed a `.env` line to the model while every request
was denied (observed, 0.61.0).

A profile says how to prepare an agent: `claude-code-acp`, `opencode`, or `generic`
(only the allow-listed environment plus the variables listed under `env`). It is
inferred from the command when not given.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drivers import workspace_config
from drivers.base import OptionsError, WorkspaceConfigError
from drivers.opencode import config as opencode_config
from drivers.sandbox import urls_in_env

from .env import agent_environment

PROFILES = ("claude-code-acp", "opencode", "gemini", "generic")
OPTIONS = frozenset({"agent"})
DEFAULT_AGENT = "claude-code-acp"

CLAUDE_PROVIDER_ENV = ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL")
CLAUDE_ISOLATION_ENV = {
    # No start-up `git status` (it runs a repository's fsmonitor and filter programs).
    "CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS": "1",
    # each Bash call starts in the workspace, where the gate judges its paths (as the
    # claude-code driver: a `cd` kept for the next call moved what a path meant)
    "CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR": "1",
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
    gemini = any(Path(a).name in ("gemini", "gemini.js") or "gemini-cli" in a for a in argv[:3])
    if gemini and any(a in ("--acp", "--experimental-acp") for a in argv[1:]):
        return "gemini"
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


# Profiles whose agent does not exit when its stdin closes, so the driver stops it with
# SIGTERM at once instead of waiting for an exit that never comes. claude-code-acp 0.16.2
# (observed): its process stays after EOF, held by the bundled Claude Code it started;
# SIGTERM to the group stops both in milliseconds, Claude Code flushing its transcript.
STAYS_AFTER_EOF = frozenset({"claude-code-acp"})

# Whose configuration found in a workspace each profile's agent is kept from (the notice).
SCANNED = {"claude-code-acp": ("claude-code", "mcp", "git"), "opencode": ("git",), "gemini": ("git",), "generic": ("git",)}
# A generic agent cannot be told to ignore these: a workspace holding them is refused.
GENERIC_REFUSED = ("gemini", "mcp", "opencode")
INSTRUCTION_FILES = ("CLAUDE.md", ".claude/CLAUDE.md")


def environment(spec: AgentSpec, settings: Mapping[str, Any], runtime_dir: Path, git_env: Mapping[str, str]) -> dict[str, str]:
    """The agent's whole environment, by profile (always the allow-listed builder), with
    the overrides that switch off the repository's git programs."""
    if spec.profile == "opencode":
        return opencode_config.environment(settings, runtime_dir, git_env)
    home = Path(runtime_dir) / "home"
    if spec.profile == "gemini":
        write_gemini_settings(home)
        return agent_environment(settings, home=home, provider_names=spec.env_names, extra=dict(git_env))
    if spec.profile == "claude-code-acp":
        extra = {**git_env, **CLAUDE_ISOLATION_ENV, "CLAUDE_CONFIG_DIR": str(home / ".claude")}
        if os.geteuid() == 0:
            # The bundled Claude Code refuses to start a session as root without it
            # (observed, protocol notes). The driver never selects bypassPermissions.
            extra["IS_SANDBOX"] = "1"
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        return agent_environment(settings, home=home, provider_names=CLAUDE_PROVIDER_ENV, extra=extra)
    return agent_environment(settings, home=home, provider_names=spec.env_names, extra=dict(git_env))


# The model API each profile's agent reaches when its environment names none.
DEFAULT_MODEL_URLS = {
    "claude-code-acp": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
    "opencode": "https://api.openai.com",
}


def model_urls(spec: AgentSpec, settings: Mapping[str, Any], env: Mapping[str, str]) -> list[str]:
    """The endpoints the agent must reach inside the floor: every `*_BASE_URL` of its
    environment, OpenCode's configured base URL, else its profile's default (a generic
    agent: only what its environment names)."""
    urls = urls_in_env(env)
    if spec.profile == "opencode" and settings.get("opencode_base_url"):
        urls.append(str(settings["opencode_base_url"]))
    if not urls and spec.profile in DEFAULT_MODEL_URLS:
        urls.append(DEFAULT_MODEL_URLS[spec.profile])
    return urls


# Claude Code's tools that need no permission and do not go through the client (its Read
# is replaced by the adapter's fs/read_text_file tool; TodoWrite touches no file).
CLAUDE_UNASKED_TOOLS = ("Grep", "Glob")


# Gemini CLI tools that run without asking, in its own process: searches and listings,
# sub-agents, skills, web search, background shells. The run's settings deny them by name
# (`tools.exclude`; not offered to the model at all). Not an allow-list: in 0.61.0 a tool
# named in `tools.core` is *allowed* by Gemini's policy engine — its shell then ran
# without asking (observed). tests/drivers/test_acp_gemini.py names every tool the model
# is offered, so a release that adds one fails there until it is looked at.
GEMINI_UNASKED_TOOLS = ("grep_search", "search_file_content", "glob", "list_directory", "read_many_files", "invoke_agent",
                        "activate_skill", "google_web_search", "list_background_processes", "read_background_output")


def write_gemini_settings(home: Path) -> None:
    """The run's `~/.gemini/settings.json`, written afresh at every start (the agent's own
    writes outside the workspace are refused, but a resumed run gets Gatehouse's file
    whatever happened to it)."""
    directory = home / ".gemini"
    if directory.is_symlink():
        directory.unlink()  # a link would send the file elsewhere
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "settings.json"
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.is_symlink():
        path.unlink()
    settings = {"tools": {"exclude": list(GEMINI_UNASKED_TOOLS)}}
    path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")


def session_meta(spec: AgentSpec, workspace: Path) -> dict[str, Any]:
    """`_meta` for session/new and session/load."""
    if spec.profile != "claude-code-acp":
        return {}
    # Claude Code runs its search tools without asking anyone (read-only tools need no
    # permission in its default mode), in its own process: a Grep printed a `.env` line
    # to the model that a `reads` rule denies, and nobody was asked (observed, 0.16.2).
    # Without them the model searches with commands (terminal/*) or reads files
    # (fs/read_text_file), which are gated.
    meta: dict[str, Any] = {"claudeCode": {"options": {"settingSources": [], "disallowedTools": list(CLAUDE_UNASKED_TOOLS)}}}
    instructions = workspace_config.project_instructions(workspace, INSTRUCTION_FILES)
    if instructions:
        parts = ["# Project instructions from the workspace",
                 "Gatehouse passes these files from the workspace as context; it does not load the workspace's settings."]  # fmt: skip
        for name, text in instructions:
            parts += ["", f"## {name}", "", text]
        meta["systemPrompt"] = {"append": "\n".join(parts) + "\n"}
    return meta


def check_workspace(workspace: Path, options: Mapping[str, Any], settings: Mapping[str, Any]) -> None:
    """Refuse a workspace whose agent configuration the chosen agent would run anyway."""
    spec = agent_for(options, settings)
    if spec.profile == "opencode":
        found = opencode_config.blocking_config_files(workspace)
        if found:
            raise WorkspaceConfigError(opencode_config.refusal(found), files=found)
    elif spec.profile in ("gemini", "generic"):
        # Nothing is known about what such an agent loads from its workspace: fail closed.
        paths = [f.path for f in workspace_config.scan(workspace).relevant(GENERIC_REFUSED)]
        if paths:
            raise WorkspaceConfigError(
                f"The ACP agent {spec.name!r} may load {paths[0]} from the workspace and Gatehouse cannot tell it not to: refused.",
                files=paths,
            )
