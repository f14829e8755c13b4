from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from project.login_links import make_login_link


class Command(BaseCommand):
    help = "Print a one-time login link for USERNAME (default: admin)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username", nargs="?", default="admin")
        parser.add_argument("--base", default="http://127.0.0.1:8000", help="The console's address.")

    def handle(self, *args: Any, username: str, base: str, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"no active user named {username!r}")
        self.stdout.write(f"{base.rstrip('/')}{make_login_link(user)}")
