"""Where the Codex binary is, and the isolated CODEX_HOME each run gets.

Codex writes into its home as it runs (trusted-project entries appended to config.toml by
`thread/start`, rollouts, sqlite state, and, if a client ever sent
`acceptWithExecpolicyAmendment`, permanent `rules/default.rules`). A per-run home keeps all
of that out of the operator's `~/.codex` and out of every other run.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivers import agent_env

# Run-policy sandbox value -> `thread/start` `sandbox` (SandboxMode of app-server 0.171.0),
# for a run without Gatehouse's floor (GATEHOUSE_SANDBOX=off; `unrestricted`). Inside the
# floor Codex's own sandbox is off (`IN_FLOOR`): nested in the floor it needs a fallback
# (no fresh /proc) and its helper was not found on PATH once in a loaded test run (bwrap:
# execvp codex-linux-sandbox), and the floor already holds every command Codex runs, with
# the mode the run policy asks for (read-only, workspace-write).
IN_FLOOR = "danger-full-access"
SANDBOX_MODES = {
    "read-only": "read-only",
    "workspace-write": "workspace-write",
    "unrestricted": "danger-full-access",
    "inherit": "workspace-write",
}

# Run-policy web_search value -> Codex's top-level `web_search` config key.
WEB_SEARCH_MODES = {"allow": "live", "deny": "disabled"}

PROVIDER_ID = "gatehouse"
# The model API Codex reaches when no base URL is configured.
DEFAULT_MODEL_URL = "https://api.openai.com"
# What Codex calls on its own (seen through the floor's proxy, 0.171.0: ChatGPT's backend
# during a turn, GitHub as it starts — sometimes just after its first request): refused
# without asking anyone (drivers/runegress.py). A task that needs GitHub lists the host in
# the policy's network allow, which lets it through.
OWN_HOSTS = ("chatgpt.com", "github.com", "api.github.com")


def find_binary(settings: Mapping[str, Any]) -> str:
    """`codex_bin` setting, else `codex` on PATH, else the copy `make agents` installed;
    where that is npm's launcher, the native program it would start (`native_binary`)."""
    explicit = settings.get("codex_bin")
    if explicit:
        return native_binary(str(explicit))
    on_path = shutil.which("codex")
    if on_path:
        return native_binary(on_path)
    agents_dir = settings.get("agents_dir")
    if agents_dir:
        installed = Path(agents_dir) / "node_modules" / ".bin" / "codex"
        if installed.exists():
            return native_binary(str(installed))
    return "codex"


# npm's `@openai/codex` is a Node launcher (bin/codex.js) that finds the native program in
# the platform's optional package and, on Node before 22.15, spawns it and stays as its
# parent. Started directly, a run costs one process less (a Node runtime of ~40 MiB kept for
# the whole run), starts ~60 ms sooner and ends ~15 ms sooner (measured on 0.171.0), and the
# parent-death signal Gatehouse sets (drivers/processes.py) is Codex's own, not Node's.
_NATIVE_TARGETS = {"x86_64": ("linux-x64", "x86_64-unknown-linux-musl"),
                   "aarch64": ("linux-arm64", "aarch64-unknown-linux-musl")}


def native_binary(launcher: str) -> str:
    """The native Codex program behind npm's launcher `launcher`, or `launcher` itself (not
    npm's launcher, another platform, or no platform package where the launcher looks)."""
    script = Path(launcher).resolve()
    target = _NATIVE_TARGETS.get(platform.machine())
    if not sys.platform.startswith("linux") or target is None or script.name != "codex.js":
        return launcher
    package = script.parent.parent  # .../@openai/codex
    if package.name != "codex" or package.parent.name != "@openai":
        return launcher
    suffix, triple = target
    for vendor in (package.parent / f"codex-{suffix}" / "vendor",  # hoisted beside it (npm)
                   package / "node_modules" / "@openai" / f"codex-{suffix}" / "vendor",  # nested
                   package / "vendor"):  # bundled (older releases)
        native = vendor / triple / "bin" / "codex"
        if native.is_file() and os.access(native, os.X_OK):
            return str(native)
    return launcher


def _toml_str(value: str) -> str:
    # A JSON string (ASCII-escaped) is a valid TOML basic string.
    return json.dumps(str(value), ensure_ascii=True)


def render_config(
    settings: Mapping[str, Any], run_policy: Mapping[str, Any], workspace: Path | None = None
) -> str:
    """The config.toml of a run's CODEX_HOME.

    `approval_policy` is deliberately absent: `"untrusted"` in config.toml makes 0.171.0
    exit at startup; the driver sets it per thread through `thread/start` instead.

    The workspace is pinned as an *untrusted* project. Otherwise `thread/start` with
    workspace-write marks it trusted, and Codex then loads the workspace's own
    `.codex/config.toml`, hooks and `.codex/rules` — observed on 0.171.0: a workspace file
    `prefix_rule(pattern=["touch"], decision="allow")` made `touch` run without any
    approval request. Pinned untrusted, the same command is asked.

    Every parent directory is pinned untrusted too. With no pin at all and the workspace a
    subdirectory of a git repository, `thread/start` marked the *repository root* trusted and
    Codex loaded the root's `.codex/`: its rules pre-approved `touch`, its `mcp_servers`
    entry started a program (observed). With the workspace alone pinned, 0.171.0 did not
    load the root's `.codex/` (observed), but that rests on the order in which Codex looks
    trust up; with every parent pinned the answer is untrusted whichever it asks about.
    A parent outside any repository was not loaded in either case.
    """
    lines = ["# Written by Gatehouse for one run; Codex may append to it.", "check_for_update_on_startup = false"]
    model = settings.get("model")
    if model:
        lines.append(f"model = {_toml_str(model)}")
    web_search = WEB_SEARCH_MODES.get(str(run_policy.get("web_search") or "inherit"))
    if web_search:
        lines.append(f"web_search = {_toml_str(web_search)}")
    base_url = settings.get("base_url")
    if base_url:
        lines.append(f"model_provider = {_toml_str(PROVIDER_ID)}")
        lines += [
            "",
            f"[model_providers.{PROVIDER_ID}]",
            'name = "Gatehouse-configured Responses endpoint"',
            f"base_url = {_toml_str(base_url)}",
            f"env_key = {_toml_str(settings.get('env_key') or 'OPENAI_API_KEY')}",
            'wire_api = "responses"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
        ]
        if settings.get("stream_idle_timeout_ms"):
            lines.append(f"stream_idle_timeout_ms = {int(settings['stream_idle_timeout_ms'])}")
    lines += ["", "[analytics]", "enabled = false"]
    lines += _mcp_servers(settings.get("mcp_servers") or {})
    if workspace is not None:
        for root in _roots(Path(workspace)):
            lines += ["", f"[projects.{_toml_str(str(root))}]", 'trust_level = "untrusted"']
    lines.append("")
    return "\n".join(lines)


def _toml_strings(values: Any) -> str:
    return "[" + ", ".join(_toml_str(v) for v in values) + "]"


def _toml_table(values: Mapping[str, str]) -> str:
    return "{ " + ", ".join(f"{_toml_str(k)} = {_toml_str(v)}" for k, v in values.items()) + " }"


# Codex asks before an MCP tool call, except (its default, `auto`) where the server marks the
# tool read-only (`readOnlyHint`): such a call ran without any question, so the gate never
# saw it (observed on 0.171.0). `prompt` makes Codex ask before every call of the server's tools.
ASK_EVERY_TOOL = 'default_tools_approval_mode = "prompt"'


def _mcp_servers(servers: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The administrator's MCP servers (GATEHOUSE_MCP_SERVERS, validated by
    drivers/mcp_servers.py) as Codex's `[mcp_servers.<name>]` tables: stdio programs and
    streamable-HTTP servers (Codex has no SSE transport; such a server is left out)."""
    lines: list[str] = []
    for name, server in servers.items():
        kind = server.get("type", "stdio")
        if kind == "stdio":
            lines += ["", f"[mcp_servers.{_toml_str(name)}]", ASK_EVERY_TOOL, f"command = {_toml_str(server['command'])}",
                      f"args = {_toml_strings(server.get('args') or [])}"]
            if server.get("env"):
                lines.append(f"env = {_toml_table(server['env'])}")
        elif kind == "http":
            lines += ["", f"[mcp_servers.{_toml_str(name)}]", ASK_EVERY_TOOL, f"url = {_toml_str(server['url'])}"]
            if server.get("headers"):
                lines.append(f"http_headers = {_toml_table(server['headers'])}")
    return lines


def _roots(workspace: Path) -> list[Path]:
    """The workspace as given and resolved, and every parent directory of both."""
    try:
        resolved = workspace.resolve()
    except (OSError, RuntimeError):  # (RuntimeError: a loop of links, on Python 3.11)
        resolved = workspace
    roots: list[Path] = []
    for path in (workspace, resolved):
        for root in (path, *path.parents):
            if root not in roots:
                roots.append(root)
    return roots


# What Codex would load from its home besides config.toml: instructions, rules (an
# approved command may have written `rules/default.rules`, which auto-approves a prefix in
# every later thread), hooks, skills. Gatehouse writes none of them; each start removes them
# (sessions and state stay, for resume).
HOME_CUSTOMISATIONS = ("AGENTS.md", "AGENTS.override.md", "rules", "hooks.json", "skills", "prompts", ".env")


def prepare_home(
    runtime_dir: Path, settings: Mapping[str, Any], run_policy: Mapping[str, Any], workspace: Path
) -> Path:
    home = Path(runtime_dir) / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    for name in HOME_CUSTOMISATIONS:
        path = home / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
    config = home / "config.toml"
    config.unlink(missing_ok=True)
    config.write_text(render_config(settings, run_policy, workspace), encoding="utf-8")
    return home


def child_env(settings: Mapping[str, Any], codex_home: Path, git_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed environment (drivers/agent_env.py) plus the model key named by
    `env_key` and the isolation variables."""
    # Codex runs commands with `bash -lc`: with the operator's HOME, their login profile
    # would run inside every command (and could leave processes behind). A per-run HOME
    # beside CODEX_HOME keeps the run's shell to itself.
    home = codex_home.parent / "home"
    home.mkdir(parents=True, exist_ok=True)
    key = str(settings.get("env_key") or "OPENAI_API_KEY")
    fixed = {**(git_env or {}), "CODEX_HOME": str(codex_home), "HOME": str(home)}
    return agent_env.build(settings, names=(key,), fixed=fixed)
