"""Pure translations between Claude Code's native tool calls and Gatehouse's values.

No I/O here except reading a file the agent wants to change, to show a reviewer a diff.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from approvals.policy import EDITABLE_KEYS, READ_ONLY, classify_words, parse_script
from drivers.base import GateAnswer, ToolRequest

# Native tool name -> (canonical name, subtype). Others keep their name, subtype "tool".
TOOL_NAMES: dict[str, tuple[str, str]] = {
    "Bash": ("bash", "command"),
    "Write": ("write", "file-change"),
    "Edit": ("edit", "file-change"),
    "MultiEdit": ("MultiEdit", "file-change"),
    "NotebookEdit": ("NotebookEdit", "file-change"),
    "Read": ("read", "file-read"),
    "NotebookRead": ("NotebookRead", "file-read"),
    "Glob": ("Glob", "file-read"),
    "Grep": ("Grep", "file-read"),
    "LS": ("LS", "file-read"),
    "WebSearch": ("webSearch", "web"),
    "WebFetch": ("webFetch", "web"),
}

EDIT_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})

# Tools that change nothing outside the agent's own bookkeeping: allowed in plan mode
# (still through the gate). Everything else, in plan mode, is refused by the driver.
PLAN_MODE_READ_ONLY = frozenset(
    {
        "Read",
        "NotebookRead",
        "Glob",
        "Grep",
        "LS",
        "WebSearch",
        "WebFetch",
        "TodoWrite",
        "TaskList",
        "TaskGet",
        "TaskOutput",
        "AskUserQuestion",
        "ExitPlanMode",
        "EnterPlanMode",
        "Agent",
        "Task",
    }
)

MAX_DIFF_SOURCE_BYTES = 1024 * 1024
MAX_PRESENTATION_CHARS = 64 * 1024


def is_read_only_shell(command: str) -> bool:
    """In plan mode a command passes only when the policy core's side-effect catalogue reads
    every simple command in it as read-only (one meaning of "read-only" in the house): the
    script parses, no command writes a file or has a computed name, none is unknown."""
    script = parse_script(command)
    if not script.parsed or not script.commands:
        return False
    return all(
        not c.writes_file and not c.dynamic_name and classify_words(c.words) == READ_ONLY for c in script.commands
    )


def canonical_tool(native: str) -> tuple[str, str]:
    return TOOL_NAMES.get(native, (native, "tool"))


def _clip(text: str, limit: int = MAX_PRESENTATION_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "\n… (truncated)"


def _read_text(path: str) -> str | None:
    try:
        p = Path(path)
        if not p.is_file() or p.stat().st_size > MAX_DIFF_SOURCE_BYTES:
            return None
        return p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, ValueError):
        return None


def _unified(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
    )
    return _clip("".join(line if line.endswith("\n") else line + "\n" for line in lines))


def _apply_edit(content: str, old: str, new: str, replace_all: bool) -> str | None:
    if not old or old not in content:
        return None
    return content.replace(old, new) if replace_all else content.replace(old, new, 1)


def edit_diff(native: str, tool_input: Mapping[str, Any], *, read_files: bool = True) -> str:
    """A unified diff of what an edit tool would do, computed from the file on disk
    (`read_files=False`: from the tool's input alone, for an agent on another machine)."""
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
    current = _read_text(path) if path and read_files else None
    if native == "Write":
        return _unified(path, current or "", str(tool_input.get("content") or ""))
    if native in ("Edit", "MultiEdit"):
        edits = tool_input.get("edits") if native == "MultiEdit" else [tool_input]
        if not isinstance(edits, list):
            edits = []
        if current is not None:
            result: str | None = current
            for edit in edits:
                if result is None or not isinstance(edit, Mapping):
                    result = None
                    break
                result = _apply_edit(
                    result, str(edit.get("old_string") or ""), str(edit.get("new_string") or ""), bool(edit.get("replace_all"))
                )
            if result is not None:
                return _unified(path, current, result)
        # The file is not readable here (or the edit does not apply): show the strings.
        return "".join(
            _unified(path, str(e.get("old_string") or ""), str(e.get("new_string") or ""))
            for e in edits
            if isinstance(e, Mapping)
        )
    if native == "NotebookEdit":
        return _unified(path, "", str(tool_input.get("new_source") or ""))
    return ""


def question_id(header: str, index: int, taken: set[str]) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", header.lower()).strip("-")[:40]
    candidate = slug or f"q{index + 1}"
    if candidate in taken:
        candidate = f"{candidate}-{index + 1}"
    taken.add(candidate)
    return candidate


def question_presentation(tool_input: Mapping[str, Any]) -> list[dict[str, Any]]:
    """AskUserQuestion's questions in Gatehouse's structured-question shape."""
    questions = tool_input.get("questions")
    if not isinstance(questions, list):
        return []
    taken: set[str] = set()
    out = []
    for index, q in enumerate(questions):
        if not isinstance(q, Mapping):
            continue
        header = str(q.get("header") or "")
        options = [
            {"label": str(o.get("label") or ""), "description": str(o.get("description") or "")}
            for o in (q.get("options") or [])
            if isinstance(o, Mapping)
        ]
        out.append(
            {
                "id": question_id(header, index, taken),
                "header": header,
                "question": str(q.get("question") or ""),
                "options": options,
                "multi_select": bool(q.get("multiSelect")),
                "allow_other": True,
            }
        )
    return out


def native_answers(tool_input: Mapping[str, Any], answers: Mapping[str, Any] | None) -> dict[str, str]:
    """Gatehouse answers {question_id: [labels] | "text"} -> the CLI's {question_text: "A, B"}."""
    if not answers:
        return {}
    out: dict[str, str] = {}
    for q in question_presentation(tool_input):
        value = answers.get(q["id"])
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            text = ", ".join(str(v) for v in value if str(v))
        else:
            text = str(value)
        if text.strip():
            out[q["question"]] = text
    return out


def build_request(
    native: str, tool_input: Mapping[str, Any], cwd: str, tool_use_id: str, *, read_files: bool = True
) -> ToolRequest:
    """A native can_use_tool request as a canonical ToolRequest with a reviewer presentation.

    The hook gateway (integrations.hooks) passes `read_files=False`: its agent runs on
    another machine, and a path the agent names must never make the server show one of
    its own files to a reviewer."""
    tool_input = dict(tool_input)
    if native == "AskUserQuestion":
        questions = question_presentation(tool_input)
        return ToolRequest(
            tool=native,
            input=tool_input,
            cwd=cwd,
            kind="question",
            subtype="question",
            presentation={"title": "The agent asks a question", "questions": questions},
            native_id=tool_use_id,
        )
    if native == "ExitPlanMode":
        plan = str(tool_input.get("plan") or "")
        return ToolRequest(
            tool=native,
            input=tool_input,
            cwd=cwd,
            kind="plan_review",
            subtype="plan",
            presentation={"title": "Review the agent's plan", "plan": _clip(plan)},
            native_id=tool_use_id,
        )
    tool, subtype = canonical_tool(native)
    if native == "Bash":
        command = str(tool_input.get("command") or "")
        description = str(tool_input.get("description") or "")
        presentation: dict[str, Any] = {"title": description or "Run a shell command", "command": _clip(command)}
        if tool_input.get("run_in_background"):
            presentation["background"] = True
        if tool_input.get("dangerouslyDisableSandbox") not in (None, False):
            # the model asks to leave Claude Code's own sandbox (the hook gateway's agent on a
            # developer's machine has one): the policy refuses it, never asks
            presentation["outside_sandbox"] = True
            return ToolRequest(tool, {"command": command, "outside_sandbox": True}, cwd, "permission",
                               "sandbox_escape", presentation, tool_use_id)
        return ToolRequest(tool, {"command": command}, cwd, "permission", subtype, presentation, tool_use_id)
    if native in EDIT_TOOLS:
        path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "")
        verb = "Write" if native == "Write" else "Edit"
        presentation = {"title": f"{verb} {path}", "path": path, "diff": edit_diff(native, tool_input, read_files=read_files)}
        return ToolRequest(tool, tool_input, cwd, "permission", subtype, presentation, tool_use_id)
    if subtype == "file-read":
        path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or tool_input.get("path") or "")
        presentation = {"title": f"Read {path}" if native == "Read" else f"{native} {tool_input.get('pattern') or path}", "path": path}
        if native in ("Glob", "Grep") and tool_input.get("pattern"):
            presentation["pattern"] = str(tool_input["pattern"])
        return ToolRequest(tool, tool_input, cwd, "permission", subtype, presentation, tool_use_id)
    if native == "WebSearch":
        query = str(tool_input.get("query") or "")
        return ToolRequest(tool, tool_input, cwd, "permission", subtype, {"title": f"Search the web: {query}", "query": query}, tool_use_id)
    if native == "WebFetch":
        url = str(tool_input.get("url") or "")
        presentation = {"title": f"Fetch {url}", "url": url, "prompt": str(tool_input.get("prompt") or "")}
        return ToolRequest(tool, tool_input, cwd, "permission", subtype, presentation, tool_use_id)
    body = json.dumps(tool_input, indent=2, ensure_ascii=False, sort_keys=True)
    return ToolRequest(tool, tool_input, cwd, "permission", subtype, {"title": f"Use the tool {native}", "body": _clip(body)}, tool_use_id)


def deny_message(request: ToolRequest, decision: GateAnswer) -> str:
    reason = (decision.reason or "").strip()
    if decision.already_done:
        return reason  # "Already done: ... its recorded result ..." (the resume contract)
    if request.kind == "question":
        text = "There is no human answer to these questions: the question was declined in Gatehouse"
        return f"{text} ({reason})." if reason else f"{text}. Continue without an answer, or stop."
    if request.kind == "plan_review":
        return f"The plan was rejected in Gatehouse. Feedback: {reason}" if reason else "The plan was rejected in Gatehouse."
    return f"Gatehouse denied this tool call: {reason}" if reason else "Gatehouse denied this tool call."


def permission_reply(request: ToolRequest, native_input: Mapping[str, Any], decision: GateAnswer) -> dict[str, Any]:
    """The can_use_tool response body for a gate decision.

    Allow always carries `updatedInput` (2.1.197 rejects an allow without it). "Always
    allow" (`decision.scope == "session"`) tells the CLI nothing: the grant lives in
    Gatehouse, which the next identical request reaches again through the hook, so no rule
    is ever written to the workspace's `.claude/settings*.json` (nor to the CLI's session).
    """
    if decision.outcome == "abort":
        reason = decision.reason or "aborted"
        return {"behavior": "deny", "message": f"Gatehouse aborted the run: {reason}", "interrupt": True}
    if not decision.allowed:
        return {"behavior": "deny", "message": deny_message(request, decision)}
    updated = dict(native_input)
    if request.kind == "question":
        answers = native_answers(native_input, decision.answers)
        if not answers:
            return {"behavior": "deny", "message": deny_message(request, decision.replace(reason=decision.reason or "no answer was given"))}
        updated["answers"] = answers
        return {"behavior": "allow", "updatedInput": updated}
    if decision.updated_input is not None:
        # A reviewer edited the request (issue 32.3): the edited keys replace the agent's own
        # (the canonical and native names are the same for Bash, Write and Edit); the CLI
        # runs exactly `updatedInput`.
        updated.update({key: value for key, value in decision.updated_input.items() if key in EDITABLE_KEYS.get(request.tool, ())})
    reply: dict[str, Any] = {"behavior": "allow", "updatedInput": updated}
    if request.kind == "plan_review" and decision.plan_mode in ("accept-edits", "acceptEdits"):
        reply["updatedPermissions"] = [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]
    return reply


def result_text(content: Any) -> str:
    """A tool_result's content (string or blocks) as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, Mapping):
                if block.get("type") == "text":
                    parts.append(str(block.get("text") or ""))
                elif block.get("type") == "image":
                    parts.append("[image]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return "" if content is None else str(content)


def bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… ({len(text) - limit} more characters)"


def bounded_value(value: Any, limit: int = 4000) -> Any:
    """A JSON value with every long string clipped, for activity payloads."""
    if isinstance(value, str):
        return bounded(value, limit)
    if isinstance(value, Mapping):
        return {str(k): bounded_value(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [bounded_value(v, limit) for v in value[:200]]
    return value
