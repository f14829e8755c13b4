"""OpenCode's configuration, from Gatehouse only: the binary, OPENCODE_CONFIG_CONTENT, the env.

Shared by the `opencode` driver (`opencode serve`) and the ACP agent `opencode`
(`opencode acp`). Nothing is written into the workspace: the configuration travels in
OPENCODE_CONFIG_CONTENT, HOME and the XDG directories are the run's (no user-level config
or `~/.opencode`), and OPENCODE_DISABLE_PROJECT_CONFIG keeps the main config loader off
the project's `opencode.json[c]`, `.opencode/` and instruction files.

That is not enough, so a workspace with OpenCode configuration is refused: 1.18.33 has a
second loader (plugins, agents, commands, skills) that walks up from the workspace to the
project root collecting `.opencode/` and `opencode.json[c]` and ignores that flag and
OPENCODE_PURE. Observed: a workspace `opencode.json` naming `./evil-plugin.js`, or a
`.opencode/plugin/evil.js`, ran its code in the OpenCode process at start-up (the
marker file appeared) before any request reached the gate; an agent defined there could
also widen permissions. `blocking_config_files` finds them in the workspace and every
parent directory; the run is refused (`workspace_agent_config`) when there is one.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivers.acp.env import agent_environment

PROVIDER_ID = "gatehouse"

# Every permission asks, so Gatehouse decides; `question` is itself a question to a person
# (the question tool's own request reaches Gatehouse as `question.asked`).
PERMISSIONS: dict[str, str] = {"*": "ask", "question": "allow"}

ISOLATION_ENV = {
    "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_SHARE": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
    "OPENCODE_PURE": "1",
}

# What OpenCode loads from the workspace and its parents whatever the flags say.
WORKSPACE_CONFIG = ("opencode.json", "opencode.jsonc", ".opencode")


def find_binary(settings: Mapping[str, Any]) -> str | None:
    """GATEHOUSE_OPENCODE_BIN, else `opencode` on PATH, else the copy `make agents` installed."""
    configured = settings.get("opencode_bin")
    if configured:
        return str(configured)
    on_path = shutil.which("opencode")
    if on_path:
        return on_path
    agents_dir = Path(settings.get("agents_dir") or Path(__file__).resolve().parents[2] / ".agents").resolve()
    for candidate in (
        agents_dir / "node_modules" / "opencode-linux-x64" / "bin" / "opencode",
        agents_dir / "node_modules" / ".bin" / "opencode",
    ):
        if candidate.exists():
            return str(candidate)
    return None


# The model API OpenCode reaches when no base URL is configured (its `openai` provider).
DEFAULT_MODEL_URL = "https://api.openai.com"


def env_key(settings: Mapping[str, Any]) -> str:
    return str(settings.get("opencode_env_key") or "OPENAI_API_KEY")


def config_content(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The whole OpenCode configuration of a run.

    With GATEHOUSE_OPENCODE_BASE_URL the model is served by that OpenAI-compatible
    chat-completions endpoint (provider `gatehouse`, key from the variable named by
    GATEHOUSE_OPENCODE_ENV_KEY); without it GATEHOUSE_OPENCODE_MODEL names one of
    OpenCode's own providers (`provider/model`).
    """
    model = str(settings.get("opencode_model") or "")
    config: dict[str, Any] = {
        "permission": dict(PERMISSIONS),
        "autoupdate": False,
        "share": "disabled",
        "plugin": [],
        "mcp": {},
        "formatter": False,
        "lsp": False,
    }
    base_url = settings.get("opencode_base_url")
    if base_url:
        config["provider"] = {
            PROVIDER_ID: {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Gatehouse-configured endpoint",
                "options": {"baseURL": str(base_url), "apiKey": "{env:" + env_key(settings) + "}"},
                "models": {model: {"name": model, "tool_call": True}},
            }
        }
        model = f"{PROVIDER_ID}/{model}"
    if model:
        config["model"] = model
        config["small_model"] = model
    return config


def environment(settings: Mapping[str, Any], runtime_dir: Path, git_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The OpenCode process's environment: allow-listed, isolated, configured from Gatehouse,
    with the repository's git programs switched off (OpenCode runs git for its snapshots)."""
    extra = {**(git_env or {}), **ISOLATION_ENV, "OPENCODE_CONFIG_CONTENT": json.dumps(config_content(settings))}
    env = agent_environment(settings, home=Path(runtime_dir) / "opencode-home", provider_names=[env_key(settings)], extra=extra)
    _no_plugin_install(Path(env["XDG_CONFIG_HOME"]) / "opencode")
    return env


def _no_plugin_install(config_dir: Path) -> None:
    """Keep OpenCode from fetching `@opencode-ai/plugin` from the npm registry at every
    start (it installs it into its config directory for plugins, which Gatehouse never
    gives it). Read in 1.18.33's `Npm.install`: nothing is installed when `node_modules`
    exists and the lock file already lists every dependency of `package.json`."""
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "node_modules").mkdir(exist_ok=True)
    dependencies = {"@opencode-ai/plugin": "*"}
    (config_dir / "package.json").write_text(json.dumps({"dependencies": dependencies}), encoding="utf-8")
    (config_dir / "package-lock.json").write_text(json.dumps({"packages": {"": {"dependencies": dependencies}}}), encoding="utf-8")


def blocking_config_files(workspace: Path) -> list[str]:
    """OpenCode configuration in the workspace or any parent directory (OpenCode's
    plugin/agent loader walks up to the project root; a non-git workspace's root is `/`)."""
    found = []
    start = Path(workspace).resolve()
    for directory in (start, *start.parents):
        for name in WORKSPACE_CONFIG:
            candidate = directory / name
            if candidate.exists():
                found.append(str(candidate))
    return found


def refusal(found: list[str]) -> str:
    return (
        f"OpenCode would load {found[0]} from the workspace (its plugins run at start-up, its agents can widen "
        "permissions, and OpenCode 1.18.33 cannot be told to ignore them): refused. Remove it, or run another driver."
    )
