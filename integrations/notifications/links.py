"""Signed one-tap links: `/a/<token>/` decides one approval, one way, as one person, once.

The token is `django.core.signing` with its own salt over the approval's id and hash, the
person it was sent to (none for the chat message, which a whole channel reads), the action
(approve once / deny) and when it expires (the approval's deadline, else
GATEHOUSE_LINK_MAX_AGE_S after it opened). Changing any of it breaks the signature. A link
that decided is recorded (`UsedLink`, a digest of what it says) in the decision's own
transaction, so it is accepted once; a decision refused leaves it usable.

A link alone decides only what takes nothing more than Approve: a class that needs typed
confirmation or a second reviewer (`Approval.confirmation`), and the chat message's links,
need a signed-in session, and decide as the person signed in. Four eyes holds as everywhere
(`approval_decide` refuses the run's starter).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.urls import reverse

from approvals.access import is_reviewer
from approvals.errors import ApprovalError
from approvals.models import Approval
from approvals.services import approval_decide, approval_expire
from infra import clock
from integrations.models import UsedLink

SALT = "gatehouse.approval-link"
ACTIONS = ("approve", "deny")


class LinkRefused(Exception):
    """Why a link decides nothing: `code` (invalid, used, expired, decided, stale, unavailable,
    wrong_person, not_reviewer) and a sentence for the page."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Link:
    approval_id: int
    hash: str
    user_id: int | None  # the person it was sent to; None: the chat message's (sign in)
    action: str
    expires_at: datetime

    @property
    def approve(self) -> bool:
        return self.action == "approve"

    @property
    def digest(self) -> str:
        """What identifies the link once used (never the token itself)."""
        said = f"{self.approval_id}:{self.hash}:{self.user_id or ''}:{self.action}"
        return hashlib.sha256(said.encode()).hexdigest()


def link_expiry(approval: Approval) -> datetime:
    if approval.deadline is not None:
        return approval.deadline
    return approval.created_at + timedelta(seconds=settings.GATEHOUSE_LINK_MAX_AGE_S)


def link_token(approval: Approval, *, user: Any, action: str) -> str:
    if action not in ACTIONS:
        raise ValueError(f"action must be one of {ACTIONS}, not {action!r}")
    payload = {"a": approval.pk, "h": approval.hash, "u": getattr(user, "pk", None), "d": action,
               "e": int(link_expiry(approval).timestamp())}
    return signing.dumps(payload, salt=SALT, compress=False)


def link_url(token: str) -> str:
    """The absolute link, as people reach the console (GATEHOUSE_BASE_URL)."""
    return settings.GATEHOUSE_BASE_URL + reverse("approval-link", args=[token])


def link_read(token: str) -> Link:
    """What a token says, if Gatehouse signed it (else LinkRefused `invalid`)."""
    invalid = LinkRefused("invalid", "This link is not valid: it was changed, cut short, or not made by this Gatehouse.")
    try:
        data = signing.loads(token, salt=SALT)
    except signing.BadSignature:
        raise invalid from None
    if not isinstance(data, dict):
        raise invalid
    a, h, u, d, e = (data.get(k) for k in ("a", "h", "u", "d", "e"))
    if not isinstance(a, int) or not isinstance(h, str) or not (u is None or isinstance(u, int)) or d not in ACTIONS \
            or not isinstance(e, int):
        raise invalid
    return Link(approval_id=a, hash=h, user_id=u, action=d, expires_at=datetime.fromtimestamp(e, tz=UTC))


def link_needs_session(link: Link, approval: Approval) -> bool:
    """A signed-in session decides: the chat message's links, and a class that takes more
    than Approve (typed confirmation, a second reviewer)."""
    return link.user_id is None or bool(approval.confirmation)


def link_check(link: Link) -> Approval:
    """The approval the link may still decide, or LinkRefused saying why not. Read only."""
    approval = Approval.objects.select_related("run", "step", "decided_by").filter(pk=link.approval_id).first()
    if approval is None:
        raise LinkRefused("unavailable", "The request this link was for no longer exists.")
    if UsedLink.objects.filter(digest=link.digest).exists():
        raise LinkRefused("used", "This link was already used: a link decides once.")
    if approval.status == Approval.Status.EXPIRED or link.expires_at <= clock.now() or (
            approval.is_pending and approval.deadline is not None and approval.deadline <= clock.now()):
        raise LinkRefused("expired", "This link expired: the request's time to decide is over.")
    if not approval.is_pending:
        who = f" by {approval.decided_by.get_username()}" if approval.decided_by else ""
        via = f" ({approval.decided_via})" if approval.decided_via else ""
        raise LinkRefused("decided", f"This request was already decided: {approval.status}{who}{via}.")
    if link.hash != approval.hash:
        raise LinkRefused("stale", "The request changed since this link was sent: decide it in the console.")
    return approval


def link_decider(link: Link, approval: Approval, session_user: Any) -> Any:
    """Who decides through this link: the signed-in person where a session is needed, else
    the person it was sent to (and only them, if someone else is signed in). Returns None
    when a session is needed and there is none (the page asks to sign in)."""
    signed_in = session_user if getattr(session_user, "is_authenticated", False) else None
    if signed_in is not None and link.user_id is not None and signed_in.pk != link.user_id:
        raise LinkRefused("wrong_person", f"This link was sent to someone else; you are signed in as {signed_in.get_username()}.")
    if link_needs_session(link, approval) or link.user_id is None:
        user = signed_in
    else:
        user = signed_in or get_user_model()._default_manager.filter(pk=link.user_id).first()
    if user is None:
        return None
    if not is_reviewer(user):
        raise LinkRefused("not_reviewer", "Only reviewers decide requests.")
    return user


def link_decide(*, link: Link, user: Any, reason: str = "", confirmation: str = "") -> Approval:
    """Decide through the link as `user` (from `link_decider`), once: the link is recorded
    used in the decision's transaction. ApprovalError or LinkRefused when refused."""
    try:
        with transaction.atomic():
            UsedLink.objects.create(digest=link.digest, approval_id=link.approval_id, user=user)
            return approval_decide(
                approval_id=link.approval_id, user=user, approve=link.approve, reason=reason, hash=link.hash,
                scope="once", via=Approval.Via.LINK, confirmation=confirmation if link.approve else "",
            )
    except IntegrityError:
        raise LinkRefused("used", "This link was already used: a link decides once.") from None
    except ApprovalError as exc:
        if exc.code == "expired":
            approval_expire(approval_id=link.approval_id)  # its record rolled back with the decision
        raise
