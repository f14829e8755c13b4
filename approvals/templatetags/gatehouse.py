"""Template filters for agent-provided content: Markdown made safe, JSON made readable.

Everything an agent sends (plans, commands, outputs) is untrusted. `agent_markdown` is the
only filter that returns markup, and only after nh3 keeps a short allow-list of tags.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from pathlib import PurePosixPath
from typing import Any

import nh3
from django import template
from django.conf import settings
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince
from markdown_it import MarkdownIt

from approvals.gate.edits import approval_editable
from approvals.services import approval_own_run
from infra import clock

register = template.Library()

# "commonmark" with raw HTML off: agent HTML stays text; nh3 then guards what Markdown made.
_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")
_ALLOWED_TAGS = {
    "a", "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "code", "pre",
    "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td",
}
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "th": {"align"}, "td": {"align"}}


@register.filter
def agent_markdown(text: Any) -> SafeString:
    """Render the agent's Markdown (a plan) as sanitised HTML; links open nothing on their own."""
    tokens = _markdown.parse(str(text or ""))
    for token in tokens:
        # The page has its own h1/h2: the plan's headings start at h3.
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 2, 6)}"
    html = _markdown.renderer.render(tokens, _markdown.options, {})
    clean = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="nofollow noopener noreferrer",
    )
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above


_BACKTICKS = re.compile(r"`([^`\n]+)`")


@register.filter
def with_code(text: Any) -> SafeString:
    """Escape a policy reason, then show its `quoted` parts (often agent text) as <code>."""
    escaped = escape(str(text or ""))
    return mark_safe(_BACKTICKS.sub(r"<code>\1</code>", escaped))  # noqa: S308 - escaped first


@register.filter
def grant_button(label: Any) -> str:
    """The "Always allow …" button text from a suggested grant label (said once)."""
    text = str(label or "")
    return text if text.lower().startswith("always allow") else f"Always allow {text}"


@register.filter
def ago(value: Any) -> str:
    """"just now" under a minute, else Django's timesince."""
    if not value:
        return ""
    if (timezone.now() - value).total_seconds() < 60:
        return "just now"
    return f"{timesince(value)} ago"


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for a <pre>; the template escapes it like any other text."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


@register.filter
def request_text(request: Any) -> str:
    """One line for a recorded request (agent text: the template escapes it): the command,
    else the path, else the tool and its input as JSON."""
    if not isinstance(request, dict):
        return str(request)
    raw = request.get("input")
    tool_input: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for key in ("command", "file_path", "notebook_path", "path"):
        if isinstance(tool_input.get(key), str):
            return f"{request.get('tool')}: {tool_input[key]}" if key != "command" else str(tool_input[key])
    return f"{request.get('tool')} {json.dumps(tool_input, ensure_ascii=False, sort_keys=True)}"


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    """`mapping|get_item:key` for keys that are not identifiers (question ids)."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


@register.filter
def as_list(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


@register.filter
def own_run_for(approval: Any, user: Any) -> bool:
    """True when the four-eyes rule keeps `user` from deciding this approval (the service
    refuses it too). Pushed cards have no user: `four_eyes_starter` lets the page decide."""
    return bool(user) and approval_own_run(run=approval.run, user=user)


@register.filter
def cannot_decide(user: Any) -> bool:
    """True for a signed-in person who may not decide requests (a run starter following
    their own run's card): the card's controls are disabled. Pushed cards have no user:
    gatehouse.js does the same from <body data-may-decide>."""
    return bool(user) and getattr(user, "is_authenticated", False) and not user.has_perm("approvals.change_approval")


@register.filter
def four_eyes_starter(approval: Any) -> str:
    """The id of the run's starter when the four-eyes rule is on (GATEHOUSE_REVIEW_OWN_RUNS
    off), else "": gatehouse.js greys out a pushed card for that user."""
    if settings.GATEHOUSE_REVIEW_OWN_RUNS or approval.run.created_by_id is None:
        return ""
    return str(approval.run.created_by_id)


# --- The reviewer console: who asks, how long is left, how the policy read the script ----------

DRIVER_LABELS = {"claude-code": "Claude Code", "codex": "Codex", "scripted": "Scripted agent", "acp": "ACP agent", "opencode": "OpenCode"}
ON_TIMEOUT = {
    "abort": "the run stops (on timeout: abort)",
    "continue": "the agent goes on without it (on timeout: continue)",
    "retry": "it is asked again (on timeout: retry)",
}


@register.filter
def driver_label(driver: Any) -> str:
    return DRIVER_LABELS.get(str(driver), str(driver))


@register.filter
def first_line(text: Any) -> str:
    for line in str(text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


@register.simple_tag
def server_now() -> str:
    """The server's time (the deadline clock), so the browser's countdown corrects its own clock."""
    return clock.now().isoformat()


@register.filter
def seconds_left(deadline: Any) -> float:
    if not deadline:
        return float("inf")
    return (deadline - clock.now()).total_seconds()


@register.filter
def time_left(deadline: Any) -> str:
    """"4:59", "1:02:03", or "0:00" once passed (gatehouse.js counts down from here)."""
    seconds = max(0, math.ceil(seconds_left(deadline)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours >= 48:
        return f"{hours // 24} days"
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@register.filter
def on_timeout_text(run: Any) -> str:
    approvals = (getattr(run, "run_policy", None) or {}).get("approvals") or {}
    action = str(approvals.get("on_timeout") or "abort")
    text = ON_TIMEOUT.get(action, f"on timeout: {action}")
    if action == "retry" and approvals.get("max_retries"):
        text = text[:-1] + f", up to {approvals['max_retries']} times)"
    return text


# Where a segment says which directory it runs in (the policy core may add it after a `cd`).
_CWD_KEYS = ("cwd", "working_directory", "workdir")


@register.filter
def explain_segments(step: Any, workspace: Any = "") -> list[dict[str, Any]]:
    """The step's per-command verdicts (`Step.segments`) for the card, or [] when a single
    command in the workspace says nothing the policy line does not. Fields may be absent
    (older steps, other tools): each is shown only when present. The first segment whose
    decision is the request's verdict is the one that made it ask."""
    shown = segment_rows(getattr(step, "segments", None), str(getattr(step, "verdict", "") or ""), workspace)
    if len(shown) < 2 and not any(s["cwd"] for s in shown):
        return []
    return shown


def segment_rows(segments: Any, verdict: str, workspace: Any = "") -> list[dict[str, Any]]:
    """Every per-command verdict (`Verdict.segments` as dicts) as the card shows it; the
    admin's "Try it" shows them all, even a single command's."""
    if not isinstance(segments, list):
        return []
    root = PurePosixPath(str(workspace)) if workspace else None
    shown: list[dict[str, Any]] = []
    deciding_found = False
    for segment in segments:
        if not isinstance(segment, dict):
            continue
        decision = str(segment.get("decision") or "")
        deciding = not deciding_found and bool(verdict) and verdict != "allow" and decision == verdict
        deciding_found = deciding_found or deciding
        words = segment.get("words")
        command = segment.get("command") or (" ".join(map(str, words)) if isinstance(words, list) else "")
        cwd, outside = _segment_cwd(segment, root)
        shown.append({
            "command": str(command), "decision": decision, "class": segment.get("side_effect_class") or "",
            "rule": segment.get("rule") or "", "reason": segment.get("reason") or "",
            "writes_file": bool(segment.get("writes_file")), "deciding": deciding, "cwd": cwd, "cwd_outside": outside,
        })
    return shown


def _segment_cwd(segment: dict[str, Any], root: Any) -> tuple[str, bool]:
    """The directory a command runs in when it is not the workspace root: relative inside
    the workspace, absolute (and flagged) outside it."""
    raw = next((segment[k] for k in _CWD_KEYS if segment.get(k)), "")
    if not raw:
        return "", False
    path = PurePosixPath(str(raw))
    if root is None or not path.is_absolute():
        return ("" if str(path) in (".", "") else str(path)), False
    if path == root:
        return "", False
    if path.is_relative_to(root):
        return str(path.relative_to(root)), False
    return str(path), True


# --- The run page: durations, folded output, diffs ---------------------------------------------


@register.filter
def duration(step: Any) -> str:
    """"0.4 s", "12 s", "3 min 5 s" between a step's start and finish."""
    started, finished = getattr(step, "started_at", None), getattr(step, "finished_at", None)
    if not started or not finished:
        return ""
    seconds = max(0.0, (finished - started).total_seconds())
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes} min {secs} s"


@register.filter
def line_count(text: Any) -> int:
    return len(str(text or "").splitlines())


@register.filter
def diff_lines(diff: Any) -> list[tuple[str, str]]:
    """A unified diff as (class, line) pairs for a <pre>: add, del, hunk, file or "" (context)."""
    out = []
    for line in str(diff or "").splitlines():
        if line.startswith(("+++", "---")):
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = ""
        out.append((cls, line))
    return out


@register.filter
def edit_diff(tool_input: Any) -> str:
    """The unified diff of an edit request (`old_string` → `new_string`, or each of a
    MultiEdit's `edits`), as the reviewer should read it; "" when the input has neither."""
    if not isinstance(tool_input, dict):
        return ""
    path = str(tool_input.get("file_path") or tool_input.get("notebook_path") or "file")
    many = tool_input.get("edits")
    edits: list[Any] = many if isinstance(many, list) else [tool_input]
    chunks: list[str] = []
    for edit in edits:
        if not isinstance(edit, dict) or edit.get("old_string") is None or edit.get("new_string") is None:
            continue
        old, new = str(edit["old_string"]).splitlines(), str(edit["new_string"]).splitlines()
        chunks.extend(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", lineterm="", n=3))
    return "\n".join(chunks)


# --- Edit before approve (issue 32.3) -----------------------------------------------------------

# The field a card's Edit opens, per tool: what a reviewer most often changes.
_EDIT_FIELD = {"bash": "command", "write": "content", "edit": "new_string"}


@register.filter
def editable(approval: Any) -> bool:
    """Whether the card offers Edit (`approvals.gate.edits.approval_editable`)."""
    return approval_editable(approval)


@register.filter
def edit_field(approval: Any) -> str:
    """The input key the card's Edit textarea holds (command, content or new_string)."""
    return _EDIT_FIELD.get(str(approval.request.get("tool") or ""), "")


@register.filter
def input_edit_diff(original: Any, edited: Any) -> str:
    """The unified diff from the agent's input to the reviewer's edit, one file per changed
    key (`a/command` → `b/command`); "" when nothing differs."""
    if not isinstance(original, dict) or not isinstance(edited, dict):
        return ""
    chunks: list[str] = []
    for key in sorted(edited):
        old, new = str(original.get(key, "")), str(edited[key])
        if old != new:
            chunks.extend(difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{key}", f"b/{key}", lineterm="", n=3))
    return "\n".join(chunks)
