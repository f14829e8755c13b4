"""Token authentication for the async views (the hook gateway), with DRF's rules and codes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse
from rest_framework import exceptions

from integrations.models import ApiToken
from integrations.tokens import key_from_header, scope_refusal, token_authenticate
from project.api import json_error


@dataclass(frozen=True)
class Authenticated:
    user: Any
    token: ApiToken


def check_token(header: str, scope: str, permission: str = "") -> Authenticated | JsonResponse:
    """From sync code: the token's user, or the error response."""
    scope = str(scope)  # a Scope member: its value, `hooks`, in the message and the body
    try:
        key = key_from_header(header)
        if key is None:
            return _unauthorized("not_authenticated", "Send Authorization: Token <token> (see create_api_token).")
        token = token_authenticate(key)
    except exceptions.AuthenticationFailed as exc:
        return _unauthorized(str(exc.get_codes()), str(exc.detail))
    refusal = scope_refusal(token, scope)
    if refusal is not None:
        return json_error("insufficient_scope", refusal, 403, scope=str(scope))
    if permission and not token.user.has_perm(permission):
        return json_error("forbidden", f"You need the permission {permission}.", 403)
    return Authenticated(user=token.user, token=token)


def _unauthorized(code: str, message: str) -> JsonResponse:
    response = json_error(code, message, 401)
    response["WWW-Authenticate"] = "Token"
    return response


async def authenticate_token(request: HttpRequest, *, scope: str, permission: str = "") -> Authenticated | JsonResponse:
    """The token's user, or the error response (401 unknown/expired/revoked, 403 scope)."""
    return await sync_to_async(check_token)(request.META.get("HTTP_AUTHORIZATION", ""), scope, permission)
