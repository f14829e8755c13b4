"""Pure translations between ACP messages and Gatehouse values (no I/O but reading a file
the agent wants to change, to show the reviewer a diff).

ACP's tool calls are described, not named: a `kind` (read, edit, delete, move, search,
execute, think, fetch, switch_mode, other), a title, `rawInput` in the agent's own shape,
`content` (text, diffs, terminals) and `locations`. The canonical request is built from
what each kind carries; the agent's title and text are presentation only (untrusted).
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from drivers.base import GateAnswer, ToolRequest

PRESENTATION_CHARS = 64 * 1024
ACTIVITY_CHARS = 4000

# A tool a permission request may name through Claude Code's `_meta` (claude-code-acp).
_CLAUDE_TOOL = {"Glob": "Glob", "Grep": "Grep", "WebSearch": "webSearch", "WebFetch": "webFetch", "Task": "Task", "TodoWrite": "TodoWrite"}


def clip(text: str, limit: int = PRESENTATION_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def bounded_value(value: Any, limit: int = ACTIVITY_CHARS) -> Any:
    """A JSON value with every long string clipped, for activity payloads."""
    if isinstance(value, str):
        return clip(value, limit)
    if isinstance(value, Mapping):
        return {str(k): bounded_value(v, limit) for k, v in list(value.items())[:200]}
    if isinstance(value, (list, tuple)):
        return [bounded_value(v, limit) for v in value[:200]]
    return value


def relative_path(path: str, workspace: Path) -> str:
    """`path` relative to the workspace when it lies inside it (symlinks resolved), else as given."""
    if not path:
        return path
    try:
        root = Path(workspace).resolve()
        candidate = Path(path) if Path(path).is_absolute() else root / path
        resolved = candidate.resolve()
    except (OSError, ValueError, RuntimeError):
        return path
    if resolved == root:
        return "."
    if root in resolved.parents:
        return str(resolved.relative_to(root))
    return path


def native_tool_name(call: Mapping[str, Any]) -> str:
    meta = call.get("_meta") or {}
    claude = meta.get("claudeCode") if isinstance(meta, Mapping) else None
    name = str((claude or {}).get("toolName") or "") if isinstance(claude, Mapping) else ""
    return name.removeprefix("mcp__acp__")


def _diffs(call: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in call.get("content") or [] if isinstance(c, Mapping) and c.get("type") == "diff"]


def _text_content(call: Mapping[str, Any]) -> str:
    parts = []
    for item in call.get("content") or []:
        if isinstance(item, Mapping) and item.get("type") == "content":
            inner = item.get("content") or {}
            if isinstance(inner, Mapping) and inner.get("type") == "text":
                parts.append(str(inner.get("text") or ""))
    return "\n".join(parts)


def _read_text(path: str) -> str | None:
    try:
        p = Path(path)
        if not p.is_file() or p.stat().st_size > 1024 * 1024:
            return None
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def unified_diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}")
    return clip("".join(line if line.endswith("\n") else line + "\n" for line in lines))


def _command_of(raw: Mapping[str, Any]) -> str:
    """The command a tool call's raw input names: a string as given, an argv list as the
    shell line that runs exactly it; anything else is no command (never its repr, which
    the gate would judge as some other command)."""
    for key in ("command", "cmd"):
        value = raw.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(a, str) for a in value):
            return shlex.join(value)
    return ""


def _path_of(call: Mapping[str, Any], raw: Mapping[str, Any]) -> str:
    for diff in _diffs(call):
        if diff.get("path"):
            return str(diff["path"])
    for key in ("file_path", "filepath", "filePath", "path", "notebook_path"):
        if raw.get(key):
            return str(raw[key])
    for location in call.get("locations") or []:
        if isinstance(location, Mapping) and location.get("path"):
            return str(location["path"])
    return ""


def _edit_diff(call: Mapping[str, Any], raw: Mapping[str, Any], path: str, shown: str) -> tuple[str, bool]:
    """(unified diff, whether the file is new) from the agent's diff content, else its input."""
    diffs = _diffs(call)
    if diffs:
        text = "".join(unified_diff(shown, str(d.get("oldText") or ""), str(d.get("newText") or "")) for d in diffs)
        return text, all(d.get("oldText") in (None, "") for d in diffs) and _read_text(path) is None
    if isinstance(raw.get("diff"), str):
        return clip(str(raw["diff"])), False
    if "content" in raw and isinstance(raw.get("content"), str):
        current = _read_text(path)
        return unified_diff(shown, current or "", str(raw["content"])), current is None
    if "old_string" in raw or "new_string" in raw:
        current = _read_text(path)
        old, new = str(raw.get("old_string") or ""), str(raw.get("new_string") or "")
        if current is not None and old and old in current:
            replaced = current.replace(old, new) if raw.get("replace_all") else current.replace(old, new, 1)
            return unified_diff(shown, current, replaced), False
        return unified_diff(shown, old, new), False
    return "", False


PATH_KEYS = ("file_path", "filepath", "filePath", "path", "notebook_path", "parentDir", "new_path", "destination")


def outside_paths(call: Mapping[str, Any], workspace: Path) -> list[str]:
    """The paths a tool call names (input, diffs, locations) that resolve outside the
    workspace. Commands and fetches are the policy's; a file path is the workspace's only."""
    if call.get("kind") in ("execute", "fetch"):
        return []
    raw_value = call.get("rawInput")
    raw: Mapping[str, Any] = raw_value if isinstance(raw_value, Mapping) else {}
    named = [str(raw[k]) for k in PATH_KEYS if isinstance(raw.get(k), str) and raw.get(k)]
    named += [str(d["path"]) for d in _diffs(call) if d.get("path")]
    named += [str(loc["path"]) for loc in call.get("locations") or [] if isinstance(loc, Mapping) and loc.get("path")]
    root = Path(workspace).resolve()
    outside = []
    for path in dict.fromkeys(named):
        try:
            resolved = (root / path).resolve()
        except (OSError, RuntimeError, ValueError):
            outside.append(path)
            continue
        if resolved != root and root not in resolved.parents:
            outside.append(path)
    return outside


# Where an agent's shell tool says its command runs: OpenCode's `workdir`, Gemini CLI's
# `directory`, others' `cwd` (relative to the workspace, as the agents read them).
COMMAND_DIR_KEYS = ("workdir", "cwd", "directory", "dir_path")


def command_cwd(tool_input: Mapping[str, Any], workspace: Path) -> str:
    """The directory a shell command runs in, as the agent's tool input names it (the gate
    judges its paths from there: `workdir: .git` with `echo x > hooks/pre-commit` writes a
    hook), else the workspace."""
    for key in COMMAND_DIR_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip() and "\x00" not in value:
            return os.path.normpath(os.path.join(str(workspace), os.path.expanduser(value.strip())))
    return str(workspace)


def build_request(call: Mapping[str, Any], workspace: Path, *, plan_options: bool = False) -> ToolRequest:
    """A permission request's tool call (merged with what `tool_call` updates said) as a
    canonical ToolRequest with a reviewer presentation."""
    raw_value = call.get("rawInput")
    raw: Mapping[str, Any] = raw_value if isinstance(raw_value, Mapping) else {}
    kind = str(call.get("kind") or "other")
    title = clip(str(call.get("title") or ""), 500)
    native = native_tool_name(call)
    call_id = str(call.get("toolCallId") or "")
    cwd = str(workspace)
    presentation: dict[str, Any] = {"title": title or f"The agent asks to use a {kind} tool", "agent_kind": kind}
    if native:
        presentation["agent_tool"] = native
    description = _text_content(call)
    if description:
        presentation["description"] = clip(description, 2000)

    if native == "ExitPlanMode" or plan_options:
        plan = clip(str(raw.get("plan") or description or ""))
        return ToolRequest("ExitPlanMode", {"plan": plan}, cwd, "plan_review", "plan", {**presentation, "title": "Review the agent's plan", "plan": plan}, call_id)
    if kind == "execute" or (isinstance(raw.get("command"), str) and kind in ("other", "think")):
        command = _command_of(raw)
        cwd = command_cwd(raw, workspace)
        presentation.update(command=clip(command), title=str(raw.get("description") or "") or "Run a shell command")
        if cwd != str(workspace):
            presentation["cwd"] = cwd
        return ToolRequest("bash", {"command": command}, cwd, "permission", "command", presentation, call_id)
    if kind in ("edit", "delete", "move"):
        path = _path_of(call, raw)
        shown = relative_path(path, workspace)
        diff, new_file = _edit_diff(call, raw, path, shown)
        tool = "write" if (kind == "edit" and (new_file or native == "Write")) else "edit"
        tool_input: dict[str, Any] = {"file_path": shown, "diff": diff}
        verb = {"delete": "Delete", "move": "Move"}.get(kind, "Write" if tool == "write" else "Edit")
        if kind == "delete":
            tool_input["change"] = "delete"
        if kind == "move":
            target = str(raw.get("new_path") or raw.get("destination") or raw.get("to") or "")
            tool_input["move_path"] = relative_path(target, workspace)
        presentation.update(title=f"{verb} {shown}", path=shown, diff=diff)
        return ToolRequest(tool, tool_input, cwd, "permission", "file-change", presentation, call_id)
    if kind == "read":
        path = _path_of(call, raw)
        shown = relative_path(path, workspace)
        presentation.update(title=f"Read {shown}", path=shown)
        return ToolRequest("read", {"file_path": shown}, cwd, "permission", "file-read", presentation, call_id)
    if kind == "search":
        tool = _CLAUDE_TOOL.get(native, "Glob" if native.lower() == "glob" or title.lower() == "glob" else "Grep")
        body = dict(raw)
        presentation.update(pattern=str(raw.get("pattern") or ""), body=clip(json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True)))
        return ToolRequest(tool, body, cwd, "permission", "file-read", presentation, call_id)
    if kind == "fetch":
        if raw.get("query") and not raw.get("url"):
            presentation.update(title=f"Search the web: {raw.get('query')}", query=str(raw.get("query")))
            return ToolRequest("webSearch", dict(raw), cwd, "permission", "web", presentation, call_id)
        presentation.update(url=str(raw.get("url") or ""))
        return ToolRequest("webFetch", dict(raw), cwd, "permission", "web", presentation, call_id)
    tool = _CLAUDE_TOOL.get(native, native or (title if title.isidentifier() else f"acp_{kind}"))
    presentation["body"] = clip(json.dumps(dict(raw), indent=2, ensure_ascii=False, sort_keys=True))
    return ToolRequest(tool, dict(raw), cwd, "permission", "tool", presentation, call_id)


def unreadable(request: ToolRequest) -> str:
    """Why the gate cannot judge `request`, or "": a command request that does not say
    which command, a file request that does not say which file. Such a request is refused
    without asking anyone: a deny rule cannot match a command it is not shown, nor a
    reviewer judge it. (Gemini CLI 0.61.0 asks about a shell command with the command in
    the tool call's title only, no `rawInput`.)"""
    if request.tool == "bash" and not str(request.input.get("command") or "").strip():
        return "the agent asked to run a command without saying which command (no rawInput.command)"
    if request.subtype in ("file-change", "file-read") and not str(request.input.get("file_path") or "").strip():
        return "the agent asked to use a file without saying which file"
    return ""


def select_option(options: Sequence[Mapping[str, Any]], decision: GateAnswer) -> str | None:
    """The optionId to answer with: the agent's own `allow_once` for an allow, its
    `reject_once` for anything else; None when it offered no such option (the caller
    then refuses). Never `allow_always` (some agents persist it into the project's
    settings; "always allow" is a Gatehouse grant) and never an invented id."""
    wanted = "allow_once" if decision.allowed else "reject_once"
    for option in options:
        if option.get("kind") == wanted and option.get("optionId"):
            return str(option["optionId"])
    return None


def refusal_text(request: ToolRequest, decision: GateAnswer) -> str:
    """What the agent is told when Gatehouse refuses a request (the reviewer's reason)."""
    reason = (decision.reason or "").strip()
    if decision.already_done:
        return reason or "This step already ran before Gatehouse restarted; do not run it again."
    what = {"bash": "the command", "write": "the file write", "edit": "the file edit", "read": "the file read"}.get(request.tool, f"the {request.tool} request")
    if request.kind == "plan_review":
        what = "the plan"
    text = f"Gatehouse refused {what}"
    command = request.input.get("command") if request.tool == "bash" else request.input.get("file_path")
    if command:
        text += f" ({clip(str(command), 200)})"
    return f"{text}: {reason}" if reason else f"{text}."
