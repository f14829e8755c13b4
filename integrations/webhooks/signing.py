"""The webhook signature: HMAC-SHA256 over "{timestamp}.{body}" with the endpoint's secret."""

from __future__ import annotations

import hashlib
import hmac
import secrets

# A secret someone chooses is an HMAC key: at least as many characters as a generated one
# has random bytes, so a guessable word cannot sign deliveries a receiver would trust.
MIN_CUSTOM_SECRET_LENGTH = 32


def new_secret() -> str:
    return f"whsec_{secrets.token_urlsafe(32)}"


def custom_secret_problem(secret: str) -> str | None:
    """Why a secret someone chose cannot sign webhooks (None: it can). Never quotes it."""
    if len(secret) < MIN_CUSTOM_SECRET_LENGTH:
        return (f"a custom secret must be at least {MIN_CUSTOM_SECRET_LENGTH} characters "
                f"(this one has {len(secret)}); leave it out and Gatehouse generates one")
    return None


def signature(secret: str, timestamp: int, body: str) -> str:
    """The header value `t=<unix>,v1=<hex>` for these exact body bytes."""
    digest = hmac.new(secret.encode(), f"{timestamp}.{body}".encode(), hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(secret: str, header: str, body: str, *, now: int, tolerance_s: int = 300) -> bool:
    """What a receiver does (the README shows it): recompute, compare in constant time,
    and refuse an old timestamp (a replayed delivery)."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance_s:
        return False
    expected = signature(secret, timestamp, body).split(",", 1)[1][3:]
    return hmac.compare_digest(expected, parts.get("v1", ""))
