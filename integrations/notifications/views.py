"""The one-tap link page (`/a/<token>/`: GET shows, POST decides) and a person's page (`/me/`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render, resolve_url
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from approvals.errors import ApprovalError
from approvals.services import approval_own_run
from integrations.notifications.links import (
    Link,
    LinkRefused,
    link_check,
    link_decide,
    link_decider,
    link_needs_session,
    link_read,
)
from integrations.notifications.preferences import policies_notifying, preference_of, preference_set
from integrations.notifications.render import summary
from project.console_auth import console_login_required

REFUSED_STATUS = {"invalid": 400, "wrong_person": 403, "not_reviewer": 403}


def _page(request: HttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    response = render(request, "integrations/approval_link.html", context, status=status)
    response["Referrer-Policy"] = "no-referrer"  # the token is in the URL: never sent on
    return response


def _refused(request: HttpRequest, refusal: LinkRefused | ApprovalError, link: Link | None = None) -> HttpResponse:
    code = refusal.code
    return _page(request, {"refusal": refusal, "code": code, "link": link}, status=REFUSED_STATUS.get(code, 409))


@never_cache
@require_http_methods(["GET", "POST"])
def approval_link_view(request: HttpRequest, token: str) -> HttpResponse:
    """GET: what the link will decide (the request, the run, the policy's reason) and one
    button; decides nothing. POST (with the page's CSRF token): decides, once."""
    try:
        link = link_read(token)
        approval = link_check(link)
        user = link_decider(link, approval, request.user)
    except LinkRefused as exc:
        return _refused(request, exc)
    if user is None:
        # A session is needed: sign in, then this page again (it shows the typed field).
        if request.method == "POST":
            return redirect_to_login(request.path, resolve_url(settings.LOGIN_URL))
        shown = summary(approval) if link.user_id is not None else None  # a channel's link shows nothing unsigned
        return _page(request, {"link": link, "approval": approval, "s": shown, "sign_in": True,
                               "login_url": f"{resolve_url(settings.LOGIN_URL)}?next={request.path}"})
    context = {"link": link, "approval": approval, "s": summary(approval, request_chars=4000), "decider": user,
               "needs_session": link_needs_session(link, approval)}
    if approval_own_run(run=approval.run, user=user):
        return _refused(request, LinkRefused("own_run", f"You started run #{approval.run_id}: another reviewer must "
                                                        "decide its requests (four-eyes rule)."), link)
    if request.method == "GET":
        return _page(request, context)
    try:
        decided = link_decide(link=link, user=user, reason=request.POST.get("reason", "").strip()[:2000],
                              confirmation=request.POST.get("confirmation", ""))
    except LinkRefused as exc:
        return _refused(request, exc, link)
    except ApprovalError as exc:
        if exc.code == "confirmation_required":
            return _page(request, {**context, "error": exc}, status=400)
        return _refused(request, exc, link)
    return _page(request, {**context, "approval": decided, "done": True})


@console_login_required
@require_http_methods(["GET", "POST"])
def me_view(request: HttpRequest) -> HttpResponse:
    """The signed-in person's page: how they hear of approvals away from the console."""
    if request.method == "POST":
        preference_set(user=request.user, email=request.POST.get("email") == "on", chat=request.POST.get("chat") == "on")
        return redirect("me")
    return render(request, "integrations/me.html", {
        "preference": preference_of(request.user),
        "policies": policies_notifying(request.user),
        "email_enabled": settings.GATEHOUSE_EMAIL_ENABLED,
        "chat_enabled": bool(settings.GATEHOUSE_CHAT_WEBHOOK_URL),
    })
