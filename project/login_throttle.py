"""What a locked-out password login sees (django-axes calls `lockout_response`).

Axes counts failed password logins per username and client address and, past
AXES_FAILURE_LIMIT, refuses that pair for AXES_COOLOFF_TIME. Its own answer is a bare line
of text; this one is the console's page saying who is locked, for how long, and what still
works (a one-time login link is not a password login: axes never sees it).
"""

from __future__ import annotations

from datetime import timedelta
from http import HTTPStatus
from typing import Any

from axes.helpers import get_client_username, get_cool_off
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def duration(value: timedelta) -> str:
    """15 minutes, 1 hour, 90 seconds: the wait as a person reads it."""
    seconds = max(1, round(value.total_seconds()))
    for unit, size in (("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    if seconds >= 120:
        return f"{round(seconds / 60)} minutes"
    return f"{seconds} seconds"


def lockout_response(request: HttpRequest, original_response: Any = None, credentials: dict[str, Any] | None = None) -> HttpResponse:
    """429 with the reason; JSON for a script, the login page's look for a browser."""
    username = get_client_username(request, credentials) or ""
    cool_off = get_cool_off(request)
    wait = duration(cool_off) if cool_off else ""
    message = (
        f"Too many failed logins for “{username}” from this address: password login is paused"
        + (f" for {wait}; each further attempt restarts the wait." if wait else " until an administrator lifts it.")
    )
    status = HTTPStatus.TOO_MANY_REQUESTS
    if request.headers.get("Accept", "").startswith("application/json") or getattr(request, "htmx", False):
        return JsonResponse({"code": "login_locked_out", "message": message}, status=status)
    context = {"message": message, "username": username, "wait": wait}
    return render(request, "registration/locked_out.html", context, status=status)
