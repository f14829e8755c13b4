from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from integrations.models import ALL_SCOPES, ApiToken
from integrations.tokens import TokenError, parse_scopes, token_create


class Command(BaseCommand):
    help = (
        "Create an API token for USERNAME and print it (alone, on the last line). Only its "
        "hash is stored: this is the one time it is shown."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--scopes", default=None,
            help=f"Comma-separated scopes (default: every scope: {','.join(ALL_SCOPES)}).",
        )
        parser.add_argument("--expires-days", type=float, default=None, help="Days until it expires (default: never).")
        parser.add_argument("--name", default="", help="What the token is for (shown in the admin).")
        parser.add_argument("--rotate", action="store_true", help="Revoke the user's other tokens first.")

    def handle(self, *args: Any, username: str, scopes: str | None, expires_days: float | None, name: str, rotate: bool,
               **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        try:
            chosen = parse_scopes(scopes)
            if rotate:
                ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())
            token, key = token_create(user=user, scopes=chosen, expires_in_days=expires_days, name=name)
        except TokenError as exc:
            raise CommandError(exc.message) from None
        expiry = token.expires_at.isoformat() if token.expires_at else "never"
        self.stderr.write(f"token {token.prefix}… for {username}: scopes {','.join(token.scopes)}; expires {expiry}")
        self.stdout.write(key)
