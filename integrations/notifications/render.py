"""What a notification says: the request (redacted, cut short), the run, the policy's
reason, the deadline, and the links. Agent text is escaped where the message is markup (the
HTML mail by the template engine; the chat text for Slack's `<…>` controls)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse

from approvals.models import Approval
from integrations.notifications.links import link_token, link_url
from integrations.notifications.redact import one_line, preview

REQUEST_CHARS = 500
TITLE_CHARS = 100
PROMPT_CHARS = 120
CHAT_REQUEST_CHARS = 300


def request_text(approval: Approval) -> str:
    """The request as one piece of text: a command, a path, a plan, else its input as JSON."""
    tool = str(approval.request.get("tool") or "")
    data = approval.request.get("input") or {}
    if isinstance(data, dict):
        if tool == "bash" and isinstance(data.get("command"), str):
            return "$ " + data["command"]
        if isinstance(data.get("plan"), str):
            return data["plan"]
        if tool == "network" and data.get("host"):
            return f"connect to {data.get('host')}:{data.get('port')}"
        if isinstance(data.get("file_path"), str):
            return f"{tool} {data['file_path']}"
    return f"{tool} {json.dumps(data, ensure_ascii=False, sort_keys=True)}".strip()


@dataclass(frozen=True)
class Summary:
    approval_id: int
    kind: str
    title: str
    request: str
    truncated: bool
    run_id: int
    driver: str
    prompt: str
    reason: str
    rule: str
    side_effect_class: str
    deadline: Any
    confirmation: str
    console_url: str


def summary(approval: Approval, *, request_chars: int = REQUEST_CHARS) -> Summary:
    step, run = approval.step, approval.run
    text, cut = preview(request_text(approval), request_chars)
    return Summary(
        approval_id=approval.pk, kind=approval.get_kind_display(), title=one_line(approval.title, TITLE_CHARS),
        request=text, truncated=cut, run_id=run.pk, driver=run.driver,
        prompt=one_line((run.prompt or "").split("\n", 1)[0], PROMPT_CHARS),
        reason=one_line(step.reason, 300) if step is not None and step.reason else "asks a person",
        rule=step.rule if step is not None else "", side_effect_class=step.side_effect_class if step is not None else "",
        deadline=approval.deadline, confirmation=approval.confirmation,
        console_url=settings.GATEHOUSE_BASE_URL + reverse("run-detail", args=[run.pk]),
    )


def links_for(approval: Approval, user: Any) -> dict[str, str]:
    """{"approve": url, "deny": url} of `user` (None: the chat message's)."""
    return {action: link_url(link_token(approval, user=user, action=action)) for action in ("approve", "deny")}


def _sign_in_note(approval: Approval, user: Any) -> str:
    if approval.confirmation == "typed":
        return f"Approving takes typing “{one_line(approval.confirmation_word, 100)}”: the link asks you to sign in."
    if approval.confirmation == "second-reviewer":
        return "This request needs two reviewers: the link asks you to sign in."
    if user is None:
        return "The links ask you to sign in (a chat channel is not one person)."
    return ""


def email_message(approval: Approval, user: Any) -> tuple[str, str, str]:
    """(subject, text, html) of the e-mail to `user`, with their own links."""
    s = summary(approval)
    links = links_for(approval, user)
    note = _sign_in_note(approval, user)
    subject = one_line(f"[Gatehouse] Run #{s.run_id} asks: {s.title}", 150)
    deadline = f"Decide by {s.deadline:%Y-%m-%d %H:%M:%S} UTC.\n" if s.deadline else ""
    lines = [
        f"Run #{s.run_id} ({s.driver}) asks for approval ({s.kind}).",
        f"Prompt: {s.prompt}" if s.prompt else "",
        "",
        "Request (from the agent; secrets masked" + (", cut short" if s.truncated else "") + "):",
        s.request,
        "",
        f"Policy: {s.reason}" + (f" [{s.rule}]" if s.rule else "") + (f" ({s.side_effect_class})" if s.side_effect_class else ""),
        deadline + (note + "\n" if note else ""),
        f"Approve once: {links['approve']}",
        f"Deny: {links['deny']}",
        f"Open the run: {s.console_url}",
        "",
        "Each link is yours alone and works once. Change what you receive on your page in the console.",
    ]
    text = "\n".join(line for line in lines if line is not None)
    me_url = settings.GATEHOUSE_BASE_URL + reverse("me")
    html = render_to_string("integrations/email_approval.html", {"s": s, "links": links, "note": note, "me_url": me_url})
    return subject, text, html


def _slack_escape(text: str) -> str:
    """Slack reads `<…>` as links and mentions (`<!channel>`): agent text never makes one."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("`", "ʼ")


def chat_body(approval: Approval, mentions: list[str]) -> str:
    """The JSON an incoming webhook of Slack or Teams accepts: `text` (+ Slack blocks)."""
    s = summary(approval, request_chars=CHAT_REQUEST_CHARS)
    links = links_for(approval, None)
    note = _sign_in_note(approval, None)
    who = ", ".join(_slack_escape(name) for name in mentions)
    parts = [
        f"*Gatehouse: run #{s.run_id} asks for approval* ({s.kind}): {_slack_escape(s.title)}",
        f"```{_slack_escape(s.request)}```",
        f"Policy: {_slack_escape(s.reason)}",
        f"Decide by {s.deadline:%H:%M:%S} UTC." if s.deadline else "",
        note,
        f"Approve once: {links['approve']}",
        f"Deny: {links['deny']}",
        f"Run: {s.console_url}",
        f"For: {who}" if who else "",
    ]
    body: dict[str, Any] = {"text": "\n".join(p for p in parts if p)}
    if settings.GATEHOUSE_CHAT_SLACK_BLOCKS:
        body["blocks"] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(parts[:4]).strip()}},
            {"type": "actions", "elements": [
                {"type": "button", "text": {"type": "plain_text", "text": "Approve once"}, "url": links["approve"], "style": "primary"},
                {"type": "button", "text": {"type": "plain_text", "text": "Deny"}, "url": links["deny"], "style": "danger"},
                {"type": "button", "text": {"type": "plain_text", "text": "Open the run"}, "url": s.console_url},
            ]},
        ]
    return json.dumps(body, ensure_ascii=False)
