"""`Idempotency-Key` on the POST endpoints that create or decide.

A retry with the same key and the same request (method, path, body bytes) gets the first
response again — same status, same body, header `Idempotent-Replayed: true` — and nothing
is done twice; the same key with another request is refused `422 idempotency_key_reused`.
While the first request is still being answered a retry gets `409 idempotency_in_progress`.
Keys belong to the user who sent them and expire after GATEHOUSE_IDEMPOTENCY_TTL_S (24 h).
A first request that crashed (5xx) keeps nothing, so its retry runs again.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import Http404
from django.http.request import RawPostDataException
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.response import Response

from approvals.policy import PolicyError, canonical_json
from infra.errors import DomainError
from integrations.models import IdempotencyKey
from project.api import error_response

HEADER = "Idempotency-Key"
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")  # visible ASCII, no spaces

# For extend_schema(parameters=[...]) on every endpoint that takes the header.
IDEMPOTENCY_PARAMETER = OpenApiParameter(
    HEADER,
    str,
    location=OpenApiParameter.HEADER,
    required=False,
    description="Make a retry safe: the same key and body get the first response again (24 h); "
    "the same key with another body gets 422 idempotency_key_reused.",
)


def _fingerprint(request: Request) -> str:
    digest = hashlib.sha256()
    digest.update(str(request.method).encode() + b" " + request.path.encode() + b"\n")
    try:
        digest.update(request._request.body)
    except RawPostDataException:  # already parsed: the canonical form of what was read

        digest.update(canonical_json(request.data).encode())
    return digest.hexdigest()


def _expired_before() -> Any:
    return timezone.now() - timedelta(seconds=settings.GATEHOUSE_IDEMPOTENCY_TTL_S)


def idempotency_purge() -> int:
    """Forget keys past their lifetime (the maintenance loop calls this)."""
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=_expired_before()).delete()
    return deleted


def _claim(user: Any, key: str, fingerprint: str) -> IdempotencyKey | Response:
    """The new row this request will answer into, or the response a retry gets now."""
    IdempotencyKey.objects.filter(user=user, key=key, created_at__lt=_expired_before()).delete()
    try:
        # Committed at once (requests run outside a transaction), so a concurrent retry sees it.
        with transaction.atomic():
            return IdempotencyKey.objects.create(user=user, key=key, fingerprint=fingerprint)
    except IntegrityError:
        first = IdempotencyKey.objects.filter(user=user, key=key).first()
    if first is None:  # purged between the two queries: let the client retry
        return error_response("idempotency_in_progress", "This Idempotency-Key is being reused; retry.", 409)
    if first.fingerprint != fingerprint:
        return error_response(
            "idempotency_key_reused",
            "This Idempotency-Key was already used for a different request; use a new key for a new request.",
            422,
            field=HEADER,
        )
    if first.status_code is None:
        return error_response("idempotency_in_progress", "The first request with this Idempotency-Key is still being answered.", 409)
    return Response(first.body, status=first.status_code, headers={"Idempotent-Replayed": "true"})


def idempotent(method: Callable[..., Response]) -> Callable[..., Response]:
    """Decorate an APIView's `post`: honour the Idempotency-Key header when one is sent."""

    @functools.wraps(method)
    def wrapper(view: Any, request: Request, *args: Any, **kwargs: Any) -> Response:
        key = request.headers.get(HEADER)
        if key is None:
            return method(view, request, *args, **kwargs)
        if not _KEY.match(key):
            return error_response("invalid", f"{HEADER}: 1 to 255 visible ASCII characters, no spaces.", 400, field=HEADER)
        claimed = _claim(request.user, key, _fingerprint(request))
        if isinstance(claimed, Response):
            return claimed
        try:
            response = view.handle_exception_for_idempotency(method, request, *args, **kwargs)
        except BaseException:
            claimed.delete()
            raise
        if response.status_code >= 500:
            claimed.delete()
        else:
            IdempotencyKey.objects.filter(pk=claimed.pk).update(status_code=response.status_code, body=response.data)
        return response

    return wrapper


class IdempotentMixin:
    """Lets `idempotent` record a refusal too: a 409 or 400 the first request got is what a
    retry gets (DRF turns exceptions into responses only after the handler returns)."""

    def handle_exception_for_idempotency(self, method: Callable[..., Response], request: Request, *args: Any, **kwargs: Any) -> Response:
        try:
            return method(self, request, *args, **kwargs)
        except Exception as exc:
            if not isinstance(exc, (exceptions.APIException, Http404)) and not _is_domain_error(exc):
                raise
            response: Response = self.handle_exception(exc)  # type: ignore[attr-defined]
            return response


def _is_domain_error(exc: Exception) -> bool:
    return isinstance(exc, DomainError | PolicyError)
