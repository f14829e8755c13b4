"""API tokens: created, checked and revoked here; stored only as a SHA-256.

A token is `gh_` + 8 characters that identify it + `_` + 43 secret characters (256 random
bits, so a plain SHA-256 is enough: there is nothing to brute-force). The DRF tokens of the
first API (`rest_framework.authtoken`, plain text) keep working as full-scope tokens: the
migration hashes them, and one created later is converted the first time it is used.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions
from rest_framework.authtoken.models import Token

from infra.prepared import Prepared
from integrations.models import ALL_SCOPES, ApiToken, Scope

# last_used_at is written at most this often per token (not one write per request).
LAST_USED_RESOLUTION = timedelta(seconds=60)


class TokenError(Exception):
    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


# What each scope lets a token do, as permissions its user must hold (any one of them) for
# the scope to count: a token never does more than its user may, checked on every use, so a
# user who loses a permission loses it through their tokens too (issue 34).
SCOPE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    Scope.READ: (),
    Scope.RUNS_WRITE: ("runs.add_run", "runs.change_run", "runs.change_agentsession"),
    Scope.APPROVALS_DECIDE: ("approvals.change_approval", "approvals.change_grant"),
    Scope.HOOKS: ("runs.add_run",),
    Scope.WEBHOOKS_MANAGE: ("integrations.add_webhookendpoint", "integrations.change_webhookendpoint",
                            "integrations.delete_webhookendpoint"),
}


def scope_allowed_for(user: Any, scope: str) -> bool:
    """Whether `user` may do what `scope` lets a token do."""
    needed = SCOPE_PERMISSIONS.get(scope)
    if needed is None:
        return False
    return not needed or any(user.has_perm(p) for p in needed)


def scopes_allowed_for(user: Any) -> list[str]:
    return [s for s in ALL_SCOPES if scope_allowed_for(user, s)]


def parse_scopes(raw: str | Iterable[str] | None) -> list[str]:
    """A list of known scopes (comma-separated text or a list); None means every scope."""
    if raw is None:
        return list(ALL_SCOPES)
    items = [s.strip() for s in raw.split(",")] if isinstance(raw, str) else [str(s).strip() for s in raw]
    items = [s for s in items if s]
    unknown = [s for s in items if s not in ALL_SCOPES]
    if unknown:
        raise TokenError(f"unknown scope {unknown[0]!r} (known: {', '.join(ALL_SCOPES)})", field="scopes")
    if not items:
        raise TokenError("a token needs at least one scope", field="scopes")
    return sorted(set(items), key=ALL_SCOPES.index)


def token_create(
    *, user: Any, scopes: Iterable[str] | None = None, expires_in_days: float | None = None, name: str = ""
) -> tuple[ApiToken, str]:
    """A new token for `user`; returns the row and the token itself (shown once, never stored).
    Without `scopes`, every scope `user` may use; a scope beyond what `user` may do is refused."""
    if scopes is None:
        chosen = scopes_allowed_for(user)
        if not chosen:
            raise TokenError(f"{user} may not do anything a token scope allows", field="scopes")
    else:
        chosen = parse_scopes(list(scopes))
    beyond = [s for s in chosen if not scope_allowed_for(user, s)]
    if beyond:
        needed = " or ".join(SCOPE_PERMISSIONS[beyond[0]])
        raise TokenError(f"{user} may not use the scope {beyond[0]!r} (it needs the permission {needed})", field="scopes")
    if expires_in_days is not None and not 0 < expires_in_days <= 3650:
        raise TokenError("expiry must be between 0 and 3650 days", field="expires_days")
    key = f"gh_{secrets.token_hex(4)}_{secrets.token_urlsafe(32)}"
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days is not None else None
    token = ApiToken.objects.create(
        user=user, name=name, prefix=key[:11], key_hash=key_hash(key), scopes=chosen, expires_at=expires_at
    )
    return token, key


def token_revoke(*, token: ApiToken) -> ApiToken:
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())
    token.refresh_from_db()
    return token


def _converted_legacy(key: str) -> ApiToken | None:
    """A plain-text DRF token created after the migration: hashed now, full scope, same key."""
    legacy = Token.objects.filter(key=key).select_related("user").first()
    if legacy is None:
        return None
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                user=legacy.user, name="first-API token", prefix=key[:8], key_hash=key_hash(key),
                scopes=list(ALL_SCOPES), legacy=True,
            )
            Token.objects.filter(key=key).delete()
    except IntegrityError:  # converted by a concurrent request
        return ApiToken.objects.filter(key_hash=key_hash(key)).first()
    return token


# Every token-authenticated request reads this (compiled once: `infra.prepared`).
_BY_HASH: Prepared[ApiToken] = Prepared(lambda digest: ApiToken.objects.select_related("user").filter(key_hash=digest)[:1], str)


def token_authenticate(key: str, *, now: datetime | None = None) -> ApiToken:
    """The active token with this key (its user loaded), or AuthenticationFailed saying why."""
    now = now or timezone.now()
    token = _BY_HASH.first(key_hash(key))
    if token is None:
        token = _converted_legacy(key)
    if token is None:
        raise exceptions.AuthenticationFailed("Invalid token.", code="invalid_token")
    if token.revoked_at is not None:
        raise exceptions.AuthenticationFailed("This token was revoked.", code="token_revoked")
    if token.expires_at is not None and token.expires_at <= now:
        raise exceptions.AuthenticationFailed(f"This token expired at {token.expires_at.isoformat()}.", code="token_expired")
    if not token.user.is_active:
        raise exceptions.AuthenticationFailed("This token's user is inactive.", code="user_inactive")
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def key_from_header(header: str) -> str | None:
    """`Token <key>` or `Bearer <key>`; None when the header is absent or another scheme."""
    parts = header.split()
    if not parts or parts[0].lower() not in ("token", "bearer"):
        return None
    if len(parts) != 2:
        raise exceptions.AuthenticationFailed("Invalid token header: give one token after the scheme.", code="invalid_token")
    return parts[1]


class ScopedTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Token <key>` (or Bearer): request.user is the owner, request.auth the ApiToken."""

    def authenticate(self, request: Any) -> tuple[Any, ApiToken] | None:
        key = key_from_header(request.META.get("HTTP_AUTHORIZATION", ""))
        if key is None:
            return None
        token = token_authenticate(key)
        return token.user, token

    def authenticate_header(self, request: Any) -> str:
        return "Token"


def token_has_scope(auth: Any, scope: str) -> bool:
    """A request authenticated otherwise (the console's session) is limited by permissions
    only; a token by its scopes, each only as far as its user may still do it."""
    return scope_refusal(auth, scope) is None


def scope_refusal(auth: Any, scope: str) -> str | None:
    """Why a token may not act with `scope` (None: it may)."""
    if not isinstance(auth, ApiToken):
        return None
    if scope not in (auth.scopes or []):
        return insufficient_scope_message(scope, auth.scopes)
    if not scope_allowed_for(auth.user, scope):
        needed = " or ".join(SCOPE_PERMISSIONS.get(scope, ())) or "a scope Gatehouse knows"
        return f"This token's user may no longer do what the scope {str(scope)!r} allows (it needs the permission {needed})."
    return None


def required_scope(request: Any, view: Any) -> str:
    """The scope an endpoint needs: the view's `scopes[method]`, else `read` for safe
    methods. A writing method a view does not name needs a scope no token has (fail closed)."""
    declared = getattr(view, "scopes", {}) or {}
    if request.method in declared:
        return str(declared[request.method])
    if request.method in permissions.SAFE_METHODS:
        return Scope.READ.value
    return "undeclared"


def insufficient_scope_message(scope: str, has: Iterable[str] | None) -> str:
    """Names scopes as a token holder writes them: `str()` of a Scope is its value (`hooks`),
    while its repr, which `!r` would print, is `Scope.HOOKS`."""
    return f"This token lacks the scope '{scope!s}' (it has: {', '.join(str(s) for s in has or ()) or 'none'})."


class TokenScope(permissions.BasePermission):
    """403 insufficient_scope when the request's token lacks the endpoint's scope."""

    code = "insufficient_scope"
    message = "This token lacks the scope this endpoint needs."

    def has_permission(self, request: Any, view: Any) -> bool:
        scope = required_scope(request, view)
        refusal = scope_refusal(request.auth, scope)
        if refusal is None:
            return True
        self.message = refusal
        return False
