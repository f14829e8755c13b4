"""One-time login links: how `make run` lets a newcomer in without any default password.

The token is a TimestampSigner-signed payload: the user's pk and a fingerprint of
(pk, last_login, password hash). Logging in updates last_login, which changes the
fingerprint, so a link works once; a password change also kills it; the signature's age
bounds it to settings.GATEHOUSE_LOGIN_LINK_MAX_AGE seconds.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.core import signing
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

SALT = "gatehouse.login-link"


def _fingerprint(user: Any) -> str:
    value = f"{user.pk}:{user.last_login.isoformat() if user.last_login else ''}:{user.password}"
    return salted_hmac(SALT, value, algorithm="sha256").hexdigest()[:32]


def make_login_link(user: Any) -> str:
    """The link's path (`/login-link/<token>/`); the caller prefixes the server's origin."""
    token = signing.TimestampSigner(salt=SALT).sign_object({"u": user.pk, "f": _fingerprint(user)}, compress=False)
    return reverse("login-link", args=[token])


class LoginLinkError(Exception):
    pass


def user_for_token(token: str) -> Any:
    """The user the token logs in, or LoginLinkError saying why not."""
    try:
        data = signing.TimestampSigner(salt=SALT).unsign_object(token, max_age=settings.GATEHOUSE_LOGIN_LINK_MAX_AGE)
    except signing.SignatureExpired:
        raise LoginLinkError("This login link has expired.") from None
    except signing.BadSignature:
        raise LoginLinkError("This login link is not valid.") from None
    if not isinstance(data, dict):
        raise LoginLinkError("This login link is not valid.")
    user_pk = data.get("u")
    if user_pk is None:  # filter(pk=None) would match no user either
        raise LoginLinkError("This login link is not valid.")
    user = get_user_model()._default_manager.filter(pk=user_pk).first()
    if user is None or not user.is_active:
        raise LoginLinkError("This login link is not valid.")
    if not constant_time_compare(str(data.get("f", "")), _fingerprint(user)):
        raise LoginLinkError("This login link was already used.")
    return user


def _spend(user: Any) -> bool:
    """Compare-and-set on last_login: of two clicks racing with one link, one logs in."""
    manager = type(user)._default_manager
    same = {"last_login__isnull": True} if user.last_login is None else {"last_login": user.last_login}
    now = timezone.now()
    if manager.filter(pk=user.pk, **same).update(last_login=now) != 1:
        return False
    user.last_login = now
    return True


@never_cache
@require_GET
def login_link_view(request: HttpRequest, token: str) -> HttpResponse:
    """Log in once with the link, then go to the inbox; otherwise say why not (400)."""
    try:
        user = user_for_token(token)
        if not _spend(user):
            raise LoginLinkError("This login link was already used.")
    except LoginLinkError as exc:
        context = {"reason": str(exc), "max_age_minutes": max(1, settings.GATEHOUSE_LOGIN_LINK_MAX_AGE // 60)}
        return render(request, "registration/login_link_invalid.html", context, status=400)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return redirect(settings.LOGIN_REDIRECT_URL)
