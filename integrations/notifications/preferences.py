"""A person's notification preferences: read with a default, written in one place."""

from __future__ import annotations

from typing import Any

from approvals.models import Policy
from integrations.models import NotificationPreference


def preference_of(user: Any) -> NotificationPreference:
    """The stored preference, or the default (both on) unsaved."""
    found = NotificationPreference.objects.filter(user=user).first()
    return found if found is not None else NotificationPreference(user=user)


def preference_set(*, user: Any, email: bool, chat: bool) -> NotificationPreference:
    preference, _ = NotificationPreference.objects.update_or_create(user=user, defaults={"email": email, "chat": chat})
    return preference


def policies_notifying(user: Any) -> list[Policy]:
    """The policies whose approvals reach `user` (through a group they are in)."""
    return list(Policy.objects.filter(notify_group__user=user).order_by("name"))
