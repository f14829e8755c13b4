"""`manage.py ensure_admin`: the local `admin` account (no password: it signs in through a
one-time login link), created if missing. `serve` does the same on first start."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


def ensure_admin() -> tuple[Any, bool]:
    User = get_user_model()
    user = User.objects.filter(username="admin").first()
    if user is not None:
        return user, False
    user = User(username="admin", is_staff=True, is_superuser=True)
    user.set_unusable_password()
    user.save()
    return user, True


class Command(BaseCommand):
    help = "Create the local admin account (signs in by login link) if it does not exist."

    def handle(self, *args: Any, **options: Any) -> None:
        _, created = ensure_admin()
        self.stdout.write("created admin" if created else "admin exists")
