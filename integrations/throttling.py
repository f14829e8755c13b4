"""Rate limits for token clients (DRF throttling): GATEHOUSE_API_RATE per token.

The default (100/s) leaves room for a client that polls several runs every second; an
empty value switches throttling off. A refused request is `429 throttled` with
`Retry-After`. Counts live in Django's cache (per process unless a shared cache is set).
The console (session login) is not throttled: it is one person.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.throttling import SimpleRateThrottle

from integrations.models import ApiToken


class TokenRateThrottle(SimpleRateThrottle):
    scope = "token"

    def get_rate(self) -> str | None:
        return settings.GATEHOUSE_API_RATE or None

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        if not isinstance(request.auth, ApiToken):
            return None
        # The hash, not the row id: ids are reused (a test database, a restored backup).
        return f"throttle-token-{request.auth.key_hash[:32]}"
