"""`console_login_required`: login_required that also works for htmx requests.

A plain redirect would make htmx swap the login page into a card; for an htmx request the
browser is told to navigate instead (HX-Redirect), back to the page it was on.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django_htmx.http import HttpResponseClientRedirect


def console_login_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.user.is_authenticated:
            return view(request, *args, **kwargs)
        htmx = getattr(request, "htmx", None)
        if htmx:
            back = htmx.current_url_abs_path or request.get_full_path()
            return HttpResponseClientRedirect(redirect_to_login(back, resolve_url(settings.LOGIN_URL)).url)
        return redirect_to_login(request.get_full_path(), resolve_url(settings.LOGIN_URL))

    return wrapped
