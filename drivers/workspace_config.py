"""What agent configuration a workspace holds, and what of it could run a program.

Agent CLIs read configuration from their working directory, and some of it runs programs
or widens permissions: Claude Code's `.claude/settings*.json` (hooks, permission rules,
`enableAllProjectMcpServers`, `apiKeyHelper`...), `.mcp.json`, custom agents and commands;
Codex's `.codex/` (config, exec-policy rules, hooks); OpenCode's `opencode.json` and
`.opencode/` (plugins are code); Gemini's `.gemini/settings.json`. Gatehouse starts every
agent so that none of it is loaded (each driver says how in its descriptor's `isolation`);
`scan` finds it anyway so the run's timeline can say what was ignored.

Git is the agent-independent case: a repository's own config can name programs git runs
during everyday, read-only commands (`core.fsmonitor` and `filter.<x>.clean` run on
`git status`, `diff.<x>.textconv` on `git diff`). Both CLIs run `git status` by themselves
at start-up (observed: Claude Code 2.1.197, Codex 0.171.0, which runs a repository's clean
filter before any request reaches Gatehouse). `Scan.git_env()` switches each such key off
for the agent's processes with `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`
(command-line scope: it wins over every config file). Hooks (`.git/hooks`,
`core.hooksPath`) are reported, not switched off: they run only inside commands that
change the repository (commit, checkout, merge), which are gated like any command.

Pure apart from reading files and one `git config --list`; future ACP and OpenCode drivers
reuse it. `project_instructions` reads the content the drivers do pass on (`CLAUDE.md`).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runs.events import Notice

Action = Literal["ignored", "neutralised", "kept"]

# Top-level settings keys that run a program or widen what the agent may do, per format.
CLAUDE_SETTINGS_KEYS = (
    "hooks", "permissions", "enableAllProjectMcpServers", "enabledMcpjsonServers", "mcpServers",
    "enabledPlugins", "extraKnownMarketplaces", "statusLine", "subagentStatusLine", "fileSuggestion",
    "apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "gcpAuthRefresh", "otelHeadersHelper",
    "env", "sandbox", "additionalDirectories", "disableAllHooks", "outputStyle", "model",
)  # fmt: skip
CODEX_CONFIG_KEYS = (
    "approval_policy", "sandbox_mode", "sandbox_workspace_write", "mcp_servers", "notify", "hooks",
    "model_provider", "model_providers", "shell_environment_policy", "profile", "profiles", "projects",
    "features", "tools", "experimental_instructions_file", "model_instructions_file",
)  # fmt: skip
OPENCODE_CONFIG_KEYS = ("permission", "mcp", "plugin", "agent", "command", "provider", "tools", "lsp", "formatter", "mode")
GEMINI_SETTINGS_KEYS = (
    "mcpServers", "tools", "hooks", "coreTools", "excludeTools", "allowMCPServers", "toolDiscoveryCommand",
    "toolCallCommand", "autoAccept", "security", "sandbox", "extensions",
)  # fmt: skip

# Directories whose files are agent configuration (code or instructions the CLI loads).
CONFIG_DIRS: tuple[tuple[str, str, str], ...] = (
    (".claude/agents", "claude-code", "custom agents"),
    (".claude/commands", "claude-code", "custom commands"),
    (".claude/skills", "claude-code", "skills"),
    (".claude/hooks", "claude-code", "hook scripts"),
    (".claude/output-styles", "claude-code", "output styles"),
    (".claude/rules", "claude-code", "memory rules"),
    (".codex/rules", "codex", "exec-policy rules"),
    (".codex/skills", "codex", "skills"),
    (".codex/prompts", "codex", "prompts"),
    (".opencode/plugin", "opencode", "plugins"),
    (".opencode/plugins", "opencode", "plugins"),
    (".opencode/agent", "opencode", "agents"),
    (".opencode/agents", "opencode", "agents"),
    (".opencode/command", "opencode", "commands"),
    (".opencode/commands", "opencode", "commands"),
    (".opencode/tool", "opencode", "tools"),
    (".opencode/tools", "opencode", "tools"),
    (".gemini/commands", "gemini", "custom commands"),
    (".gemini/extensions", "gemini", "extensions"),
)
# Settings files: (path, agent, format, keys worth naming).
CONFIG_FILES: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (".claude/settings.json", "claude-code", "json", CLAUDE_SETTINGS_KEYS),
    (".claude/settings.local.json", "claude-code", "json", CLAUDE_SETTINGS_KEYS),
    ("CLAUDE.local.md", "claude-code", "text", ()),
    (".mcp.json", "mcp", "json", ("mcpServers",)),
    (".codex/config.toml", "codex", "toml", CODEX_CONFIG_KEYS),
    (".codex/hooks.json", "codex", "json", ("hooks",)),
    ("opencode.json", "opencode", "jsonc", OPENCODE_CONFIG_KEYS),
    ("opencode.jsonc", "opencode", "jsonc", OPENCODE_CONFIG_KEYS),
    (".opencode/opencode.json", "opencode", "jsonc", OPENCODE_CONFIG_KEYS),
    (".opencode/opencode.jsonc", "opencode", "jsonc", OPENCODE_CONFIG_KEYS),
    (".gemini/settings.json", "gemini", "json", GEMINI_SETTINGS_KEYS),
)

# An external diff (called with path, old file, old hex, old mode, new file, ...) that prints
# what git's own diff would, without running anything of the repository's.
PLAIN_EXTERNAL_DIFF = 'gatehouse_diff() { diff -u -- "$2" "$5"; true; }; gatehouse_diff'
# Git config keys that name a program git runs, and the value that switches it off for the
# agent while the command still works. Checked against git 2.39: an empty filter value runs
# no filter; textconv `cat` shows the file as is; an empty textconv, diff command or
# sshCommand makes git fail ("cannot run"), hence the stand-ins. Matched on the lower-cased
# key (git's own spelling of section and name).
GIT_PROGRAM_KEYS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), value)
    for pattern, value in (
        (r"core\.fsmonitor", "false"),
        (r"core\.sshcommand", "ssh"),
        (r"core\.(askpass|gitproxy|alternaterefscommand)", ""),
        (r"core\.pager", "cat"),
        (r"(core|sequence)\.editor", "true"),
        (r"pager\..+", "false"),
        (r"credential\.(.+\.)?helper", ""),
        (r"gpg\.(.+\.)?program", ""),
        (r"diff\.external", PLAIN_EXTERNAL_DIFF),
        (r"diff\..+\.command", PLAIN_EXTERNAL_DIFF),
        (r"diff\..+\.textconv", "cat"),
        (r"filter\..+\.(clean|smudge|process)", ""),
        (r"merge\..+\.driver", "false"),
        (r"remote\..+\.uploadpack", "git-upload-pack"),
        (r"remote\..+\.receivepack", "git-receive-pack"),
    )
)
# Always set for agents: never treat the workspace as an embedded bare repository (whose
# `config` could name a worktree and programs), never run fsmonitor, no `ext::` transport.
GIT_ALWAYS = {"safe.bareRepository": "explicit", "core.fsmonitor": "false", "protocol.ext.allow": "never"}
GIT_TIMEOUT_S = 10.0
INSTRUCTIONS_LIMIT = 64 * 1024


@dataclass(frozen=True)
class Finding:
    """One piece of agent configuration: where, whose, what it holds, what Gatehouse did."""

    path: str  # relative to the workspace ("../.mcp.json" in a parent directory)
    agent: str  # claude-code | codex | opencode | gemini | mcp | git
    holds: tuple[str, ...] = ()
    action: Action = "ignored"

    def __post_init__(self) -> None:
        # Names in `holds` come from the workspace (MCP server names, git filter names):
        # bounded and printable before they reach the timeline.
        object.__setattr__(self, "holds", _bounded(self.holds))

    def describe(self) -> str:
        return f"`{self.path}` ({', '.join(self.holds)})" if self.holds else f"`{self.path}`"


MAX_HOLDS = 20
MAX_HOLD_CHARS = 120


def _bounded(holds: tuple[str, ...]) -> tuple[str, ...]:
    cleaned = []
    for hold in holds[:MAX_HOLDS]:
        text = "".join(c if c.isprintable() else "?" for c in str(hold))
        cleaned.append(text if len(text) <= MAX_HOLD_CHARS else text[: MAX_HOLD_CHARS - 1] + "…")
    if len(holds) > MAX_HOLDS:
        cleaned.append(f"and {len(holds) - MAX_HOLDS} more")
    return tuple(cleaned)


@dataclass(frozen=True)
class Scan:
    findings: tuple[Finding, ...] = ()
    # git key -> the value that switches it off, for the agent's environment.
    git_overrides: Mapping[str, str] = field(default_factory=dict)

    def relevant(self, agents: Iterable[str]) -> list[Finding]:
        wanted = set(agents)
        return [f for f in self.findings if f.agent in wanted]

    def git_env(self) -> dict[str, str]:
        """`GIT_CONFIG_*` variables that switch off the repository's program keys."""
        pairs = {**GIT_ALWAYS, **self.git_overrides}
        env = {"GIT_CONFIG_COUNT": str(len(pairs))}
        for index, (key, value) in enumerate(pairs.items()):
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
        return env

    def notice(self, *, agents: Iterable[str], driver: str) -> Notice | None:
        """The timeline notice naming what this driver's agent was kept from, or None."""
        found = self.relevant(agents)
        if not found:
            return None
        parts = []
        ignored = [f.describe() for f in found if f.action == "ignored"]
        if ignored:
            parts.append("Gatehouse ignored agent configuration in this workspace: " + "; ".join(ignored) + ".")
        neutralised = [h for f in found if f.action == "neutralised" for h in f.holds]
        if neutralised:
            where = ", ".join(sorted({f"`{f.path}`" for f in found if f.action == "neutralised"}))
            parts.append(f"Git settings that run programs are switched off for the agent ({where}): {', '.join(neutralised)}.")
        kept = [f.describe() for f in found if f.action == "kept"]
        if kept:
            parts.append("Still active inside approved commands that change the repository: " + "; ".join(kept) + ".")
        return {
            "level": "warning",
            "driver": driver,
            "text": " ".join(parts),
            "workspace_config": [{"path": f.path, "agent": f.agent, "holds": list(f.holds), "action": f.action} for f in found],
        }


# -- scanning -----------------------------------------------------------------------------------


def scan(workspace: Path) -> Scan:
    """Agent configuration in the workspace and in its parents up to the enclosing git
    repository's root (the CLIs look there too), and the repository's program keys."""
    workspace = Path(os.path.realpath(workspace))
    findings: list[Finding] = []
    for directory in _directories(workspace):
        prefix = os.path.relpath(directory, workspace)
        findings += [_relocate(f, prefix) for f in _scan_directory(directory)]
    git_findings: list[Finding] = []
    overrides: dict[str, str] = {}
    if _may_be_in_a_repository(workspace):
        git_findings, overrides = _scan_git(workspace)
    return Scan(findings=tuple(findings + git_findings), git_overrides=overrides)


def _directories(workspace: Path) -> list[Path]:
    """The workspace, then each parent while the workspace is inside a git work tree."""
    found = [workspace]
    if (workspace / ".git").exists():
        return found
    for parent in workspace.parents:
        found.append(parent)
        if (parent / ".git").exists():
            return found
    # Not inside a repository: Codex's project is the workspace itself (a parent's .codex/
    # was not loaded, observed); only the workspace is named.
    return [workspace]


def _may_be_in_a_repository(workspace: Path) -> bool:
    """Whether git could find a repository here: a `.git` entry (directory, gitfile, even a
    broken symlink) in the workspace or a parent. Without one git finds none either (a bare
    repository is refused: `safe.bareRepository=explicit` is set for the scan and the agent),
    and the scan runs no git (it cost 2.5–4.5 ms of every run's start)."""
    return any(os.path.lexists(directory / ".git") for directory in (workspace, *workspace.parents))


def _relocate(finding: Finding, prefix: str) -> Finding:
    if prefix == ".":
        return finding
    return Finding(f"{prefix}/{finding.path}", finding.agent, finding.holds, finding.action)


def _scan_directory(directory: Path) -> list[Finding]:
    findings = []
    for rel, agent, fmt, keys in CONFIG_FILES:
        path = directory / rel
        if path.is_file() or path.is_symlink():
            findings.append(Finding(rel, agent, _file_holds(directory, path, fmt, keys)))
    for rel, agent, label in CONFIG_DIRS:
        path = directory / rel
        if path.is_dir() and not path.is_symlink():
            count = _count_files(path)
            if count:
                findings.append(Finding(rel, agent, (f"{label}: {count} file{'s' if count != 1 else ''}",)))
    for rel, agent in ((".codex", "codex"), (".opencode", "opencode"), (".gemini", "gemini")):
        path = directory / rel
        if path.is_dir() and not any(f.path.startswith(rel + "/") for f in findings):
            findings.append(Finding(rel + "/", agent, ("settings",)))
    return findings


def _count_files(path: Path, cap: int = 1000) -> int:
    count = 0
    for _, _, files in os.walk(path):  # symlinked directories are not followed
        count += len(files)
        if count >= cap:
            break
    return count


def _file_holds(directory: Path, path: Path, fmt: str, keys: tuple[str, ...]) -> tuple[str, ...]:
    if fmt == "text":
        return ("instructions",)
    raw = _read_inside(directory, path, 1024 * 1024)
    if raw is None:
        return ("unreadable or a link out of the directory",)
    try:
        data = _parse(raw, fmt)
    except ValueError:
        return ("unreadable",)
    if not isinstance(data, dict):
        return ("unreadable",)
    holds = []
    for key in keys:
        if key not in data:
            continue
        value = data[key]
        if key in ("mcpServers", "mcp_servers", "mcp") and isinstance(value, dict):
            holds.append(f"{key}: {', '.join(sorted(map(str, value)))}")
        elif key in ("permissions", "permission") and isinstance(value, dict):
            holds.append(f"{key} ({', '.join(sorted(map(str, value)))})")
        else:
            holds.append(key)
    return tuple(holds) or ("settings",)


def _parse(raw: str, fmt: str) -> Any:
    if fmt == "toml":
        return tomllib.loads(raw)
    if fmt == "jsonc":
        raw = re.sub(r"(?m)^\s*//.*$", "", raw)
    return json.loads(raw)


# -- git ----------------------------------------------------------------------------------------


def _scan_git(workspace: Path) -> tuple[list[Finding], dict[str, str]]:
    entries = _git_config(workspace)
    overrides: dict[str, str] = {}
    by_origin: dict[str, list[str]] = {}
    for origin, key, value in entries:
        neutral = _neutral_value(key, value)
        if neutral is None:
            continue
        overrides[key] = neutral
        by_origin.setdefault(origin, []).append(key)
    findings = [Finding(_origin_path(origin, workspace), "git", tuple(keys), "neutralised") for origin, keys in by_origin.items()]
    kept = _git_hooks(workspace, entries)
    return findings + kept, overrides


def _neutral_value(key: str, value: str) -> str | None:
    lower = key.lower()
    if lower.startswith("alias.") and value.lstrip().startswith("!"):
        return ""  # a shell alias: `git <alias>` would run it
    for pattern, neutral in GIT_PROGRAM_KEYS:
        if pattern.fullmatch(lower):
            if lower == "core.fsmonitor" and value.lower() in ("false", "0", "no", "off", ""):
                return None
            return neutral
    return None


def _git_config(workspace: Path) -> list[tuple[str, str, str]]:
    """(origin, key, value) of the repository's own config, includes followed: what git
    run by the agent in this workspace reads, minus the operator's system and global files.
    A relative origin is made relative to the workspace (git reports it from the top of
    the work tree, which may be a parent)."""
    cdup = _git(workspace, "rev-parse", "--show-cdup")
    listing = _git(workspace, "config", "--list", "--show-origin", "--null") if cdup is not None else None
    if listing is None or cdup is None:
        return []
    top = os.path.normpath(cdup.strip() or ".")
    fields = listing.split("\0")
    entries = []
    for origin, item in zip(fields[0::2], fields[1::2], strict=False):
        if not origin.startswith("file:"):
            continue  # "command line:" is our own safe.bareRepository
        path = origin[len("file:") :]
        key, _, value = item.partition("\n")
        entries.append((path if os.path.isabs(path) else os.path.join(top, path), key, value))
    return entries


def _git(workspace: Path, *args: str) -> str | None:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "safe.bareRepository",
        "GIT_CONFIG_VALUE_0": "explicit",
    }
    try:
        completed = subprocess.run(
            ["git", "-C", str(workspace), *args],
            env=env, capture_output=True, timeout=GIT_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return completed.stdout.decode("utf-8", errors="replace") if completed.returncode == 0 else None


def _origin_path(origin: str, workspace: Path) -> str:
    path = Path(origin) if os.path.isabs(origin) else workspace / origin
    return os.path.relpath(os.path.normpath(path), workspace)


def _git_hooks(workspace: Path, entries: list[tuple[str, str, str]]) -> list[Finding]:
    found = []
    for origin, key, value in entries:
        if key.lower() == "core.hookspath":
            found.append(Finding(_origin_path(origin, workspace), "git", (f"core.hooksPath = {value}",), "kept"))
    # The repository's git dir is where its local `config` lives (next to HEAD).
    git_dirs = {
        Path(os.path.normpath(workspace / origin)).parent
        for origin, _, _ in entries
        if Path(origin).name == "config" and (Path(os.path.normpath(workspace / origin)).parent / "HEAD").is_file()
    }
    for git_dir in sorted(git_dirs):
        hooks = git_dir / "hooks"
        if hooks.is_dir():
            names = sorted(p.name for p in hooks.iterdir() if p.is_file() and not p.name.endswith(".sample"))
            if names:
                path = os.path.relpath(hooks, workspace)
                found.append(Finding(path, "git", tuple(names), "kept"))
    return found


# -- content the drivers pass on ----------------------------------------------------------------


def project_instructions(workspace: Path, names: Iterable[str], *, limit: int = INSTRUCTIONS_LIMIT) -> list[tuple[str, str]]:
    """(name, text) of each instructions file (e.g. CLAUDE.md) that is a regular file inside
    the workspace, bounded. A symlink out of the workspace is not followed: the file's
    content goes to the model provider without any tool call, so no gate would see a
    `CLAUDE.md -> ~/.ssh/id_rsa`."""
    root = Path(os.path.realpath(workspace))
    found = []
    for name in names:
        text = _read_inside(root, Path(workspace) / name, limit)
        if text is not None:
            found.append((name, text))
    return found


def _read_inside(root: Path, path: Path, limit: int) -> str | None:
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root):
        return None
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        # What was opened, not what the name pointed at a moment earlier.
        if not Path(os.path.realpath(f"/proc/self/fd/{fd}")).is_relative_to(root):
            return None
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    text = data[:limit].decode("utf-8", errors="replace")
    if len(data) > limit:
        text += f"\n[... truncated by Gatehouse at {limit} bytes]"
    return text
