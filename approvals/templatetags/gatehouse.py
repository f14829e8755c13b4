"""Template filters for agent-provided content: Markdown made safe, JSON made readable.

Everything an agent sends (plans, commands, outputs) is untrusted. `agent_markdown` is the
only filter that returns markup, and only after nh3 keeps a short allow-list of tags.
"""

from __future__ import annotations

import json
import re
from typing import Any

import nh3
from django import template
from django.conf import settings
from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince
from markdown_it import MarkdownIt

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
    from approvals.services import approval_own_run

    return bool(user) and approval_own_run(run=approval.run, user=user)


@register.filter
def four_eyes_starter(approval: Any) -> str:
    """The id of the run's starter when the four-eyes rule is on (GATEHOUSE_REVIEW_OWN_RUNS
    off), else "": gatehouse.js greys out a pushed card for that user."""
    if settings.GATEHOUSE_REVIEW_OWN_RUNS or approval.run.created_by_id is None:
        return ""
    return str(approval.run.created_by_id)
