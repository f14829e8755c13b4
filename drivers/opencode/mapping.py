"""Pure translations between OpenCode's server events and Gatehouse values (no I/O)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from drivers.acp.mapping import clip, command_cwd, relative_path
from drivers.base import GateAnswer, ToolRequest

# OpenCode permission name -> (canonical tool, subtype); `edit` is decided per tool below.
PERMISSIONS: dict[str, tuple[str, str]] = {
    "bash": ("bash", "command"),
    "read": ("read", "file-read"),
    "glob": ("Glob", "file-read"),
    "grep": ("Grep", "file-read"),
    "list": ("LS", "file-read"),
    "webfetch": ("webFetch", "web"),
    "websearch": ("webSearch", "web"),
    "todowrite": ("TodoWrite", "tool"),
    "todoread": ("TodoRead", "tool"),
    "task": ("Task", "tool"),
}


def permission_request(event: Mapping[str, Any], workspace: Path, tool_name: str = "",
                       call_input: Mapping[str, Any] | None = None) -> ToolRequest:
    """A `permission.asked` (properties) as a canonical ToolRequest. `tool_name` is the
    OpenCode tool of the call (from its message part), which tells a write from an edit;
    `call_input` the call's input, whose `workdir` is where a bash command runs."""
    permission = str(event.get("permission") or "")
    metadata_value = event.get("metadata")
    metadata: Mapping[str, Any] = metadata_value if isinstance(metadata_value, Mapping) else {}
    patterns = [str(p) for p in event.get("patterns") or []]
    cwd = str(workspace)
    native_id = str(event.get("id") or "")
    tool_value = event.get("tool")
    call_id = str(tool_value.get("callID") or "") if isinstance(tool_value, Mapping) else ""
    presentation: dict[str, Any] = {"agent_permission": permission, "patterns": [clip(p, 500) for p in patterns[:50]]}
    if permission == "bash":
        command = str(metadata.get("command") or " && ".join(patterns))
        presentation.update(title="Run a shell command", command=clip(command))
        cwd = command_cwd(call_input or {}, workspace)
        if cwd != str(workspace):
            presentation["cwd"] = cwd
        return ToolRequest("bash", {"command": command}, cwd, "permission", "command", presentation, native_id, call_id)
    if permission == "edit":
        path = relative_path(str(metadata.get("filepath") or (patterns[0] if patterns else "")), workspace)
        diff = clip(str(metadata.get("diff") or ""))
        tool = "write" if tool_name == "write" else "edit"
        presentation.update(title=f"{'Write' if tool == 'write' else 'Edit'} {path}", path=path, diff=diff)
        return ToolRequest(tool, {"file_path": path, "diff": diff}, cwd, "permission", "file-change", presentation, native_id, call_id)
    if permission == "read":
        path = relative_path(str(metadata.get("filepath") or (patterns[0] if patterns else "")), workspace)
        presentation.update(title=f"Read {path}", path=path)
        return ToolRequest("read", {"file_path": path}, cwd, "permission", "file-read", presentation, native_id, call_id)
    if permission == "external_directory":
        target = str(metadata.get("filepath") or metadata.get("parentDir") or (patterns[0] if patterns else ""))
        presentation.update(title=f"Use a path outside the workspace: {clip(target, 300)}", path=target)
        return ToolRequest("external_directory", {"path": target, "patterns": patterns}, cwd, "permission", "tool", presentation, native_id, call_id)
    tool, subtype = PERMISSIONS.get(permission, (permission or "unknown", "tool"))
    tool_input: dict[str, Any] = {"patterns": patterns}
    for key in ("url", "query", "pattern", "path"):
        if key in metadata:
            tool_input[key] = metadata[key]
    presentation.update(title=f"Use {tool}", body=clip(json.dumps({"patterns": patterns, "metadata": dict(metadata)}, indent=2, sort_keys=True, ensure_ascii=False)))
    return ToolRequest(tool, tool_input, cwd, "permission", subtype, presentation, native_id, call_id)


def outside_workspace(request: ToolRequest, workspace: Path) -> str:
    """The path a file request names outside the workspace (symlinks resolved), or ""."""
    if request.tool == "external_directory":
        return str(request.input.get("path") or "a directory") or "a directory"
    if request.subtype not in ("file-change", "file-read"):
        return ""
    path = str(request.input.get("file_path") or "")
    root = Path(workspace).resolve()
    try:
        resolved = (root / path).resolve()
    except (OSError, RuntimeError, ValueError):
        return path or "?"
    return "" if resolved == root or root in resolved.parents else path


def _question_id(header: str, index: int, taken: set[str]) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", header.lower()).strip("-")[:40] or f"q{index + 1}"
    if slug in taken:
        slug = f"{slug}-{index + 1}"
    taken.add(slug)
    return slug


def questions_of(event: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A `question.asked`'s questions in Gatehouse's structured-question shape."""
    taken: set[str] = set()
    out = []
    for index, q in enumerate(event.get("questions") or []):
        if not isinstance(q, Mapping):
            continue
        header = str(q.get("header") or "")
        out.append(
            {
                "id": _question_id(header, index, taken),
                "header": header,
                "question": str(q.get("question") or ""),
                "options": [
                    {"label": str(o.get("label") or ""), "description": str(o.get("description") or "")}
                    for o in q.get("options") or [] if isinstance(o, Mapping)
                ],  # fmt: skip
                "multi_select": bool(q.get("multiple")),
                "allow_other": q.get("custom", True) is not False,
            }
        )
    return out


def question_request(event: Mapping[str, Any], workspace: Path) -> ToolRequest:
    questions = questions_of(event)
    return ToolRequest(
        "question", {"questions": questions}, str(workspace), "question", "question",
        {"title": "The agent asks", "questions": questions}, str(event.get("id") or ""),
    )  # fmt: skip


def answers_body(request: ToolRequest, decision: GateAnswer) -> list[list[str]] | None:
    """The `answers` of `POST /question/{id}/reply` (one list of labels per question, in
    order), or None when nothing was answered (the question is then rejected)."""
    if decision.outcome != "answer" or not decision.answers:
        return None
    answers: list[list[str]] = []
    for q in request.input.get("questions", []):
        value = decision.answers.get(q["id"])
        if isinstance(value, str):
            answers.append([value] if value.strip() else [])
        else:
            answers.append([str(v) for v in value or [] if str(v)])
    return answers if any(answers) else None
