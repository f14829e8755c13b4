"""When an approval opens, write what will tell people of it; send nothing here.

Listens to the activity log as the webhook outbox does (`approval.requested`, recorded in
the gate's transaction): one `Notification` row per e-mail and one for the chat message,
committed with the approval or not at all. The worker's `notifications_loop` renders and
sends them. With neither e-mail nor a chat webhook configured this costs the gate nothing;
else a few reads: the run's policy group, its reviewers and their preferences.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.db.models import Q
from django.db.models.signals import post_save
from django.utils import timezone

from approvals.access import DECIDE_PERMISSION
from integrations.models import Notification
from runs.events import Event
from runs.models import Activity, Run

EVENT = Event.APPROVAL_REQUESTED  # permissions, plan reviews, interrupted side effects (a question has no link)


def _reviewers_of_group(group_id: int) -> list[Any]:
    """Active members of the group who may decide approvals (superusers included)."""
    app_label, codename = DECIDE_PERMISSION.split(".")
    perm = Permission.objects.filter(content_type__app_label=app_label, codename=codename)
    may_decide = Q(is_superuser=True) | Q(user_permissions__in=perm) | Q(groups__permissions__in=perm)
    users = get_user_model()._default_manager.filter(groups__pk=group_id, is_active=True)
    return list(users.filter(pk__in=get_user_model()._default_manager.filter(may_decide).values("pk"))
                .select_related("notification_preference").order_by("pk"))


def recipients(run_id: int) -> list[tuple[Any, bool, bool]]:
    """(user, by e-mail, named in chat) for each person to notify of an approval of this
    run: the reviewers of its policy's `notify_group`, as their preferences say, without the
    run's starter under four eyes (they may not decide it)."""
    row = Run.objects.filter(pk=run_id).values_list("policy__notify_group_id", "created_by_id").first()
    if row is None or row[0] is None:
        return []
    group_id, starter_id = row
    found = []
    for user in _reviewers_of_group(group_id):
        if not settings.GATEHOUSE_REVIEW_OWN_RUNS and user.pk == starter_id:
            continue
        preference = getattr(user, "notification_preference", None)
        email = (preference is None or preference.email) and bool(user.email)
        chat = preference is None or preference.chat
        found.append((user, email, chat))
    return found


def activity_saved(sender: Any, instance: Any, created: bool, **kwargs: Any) -> None:
    if not created or instance.event != EVENT:
        return
    email_on, chat_on = settings.GATEHOUSE_EMAIL_ENABLED, bool(settings.GATEHOUSE_CHAT_WEBHOOK_URL)
    approval_id = (instance.payload or {}).get("approval")
    if not (email_on or chat_on) or approval_id is None:
        return
    people = recipients(instance.run_id)
    now = timezone.now()
    rows = [Notification(approval_id=approval_id, channel=Notification.Channel.EMAIL, user=user, next_attempt_at=now)
            for user, email, _ in people if email_on and email]
    named = [user.get_username() for user, _, chat in people if chat]
    if chat_on and named:
        rows.append(Notification(approval_id=approval_id, channel=Notification.Channel.CHAT, mentions=named, next_attempt_at=now))
    if rows:
        Notification.objects.bulk_create(rows)


def connect() -> None:
    post_save.connect(activity_saved, sender=Activity, dispatch_uid="integrations.notifications.outbox")
