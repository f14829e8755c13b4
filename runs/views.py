"""Console views for runs: list, detail (with its live partials), new, cancel, revoke grant.

Each view parses, calls at most one service, and renders a template or one of its inline
partials; the run page's partials are the same ones the WebSocket pushes.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from approvals.models import Grant
from approvals.policy import PolicyError
from approvals.policy.run_policy import LOOSE_RUNTIME_MODES
from approvals.selectors import approvals_pending, grants_active
from approvals.services import grant_revoke
from project.console_auth import console_login_required
from runs.forms import RunCreateForm
from runs.models import AgentSession, InteractionMode, Run, RuntimeMode
from runs.services import RunError, run_cancel, run_create, session_joinable, session_set_modes

RUNS_PER_PAGE = 25


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@console_login_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def run_list(request: HtmxHttpRequest) -> HttpResponse:
    paginator = Paginator(Run.objects.select_related("created_by"), RUNS_PER_PAGE)
    page_obj = paginator.get_page(request.GET.get("page"))
    if request.htmx.target == "runs-body":
        return render(request, "runs/run_list.html#run-rows", {"runs": page_obj.object_list})
    return render(
        request,
        "runs/run_list.html",
        {"page_obj": page_obj, "is_first_page": page_obj.number == 1, "refresh_url": request.path},
    )


def _run_context(run: Run, user: Any = None) -> dict[str, Any]:
    return {
        "may_join_session": user is not None and user.has_perm("runs.add_run") and session_joinable(session=run.session, user=user),
        "run": run,
        "approvals": approvals_pending(run_id=run.pk),
        "activities": run.activities.order_by("seq"),
        "grants": grants_active(session_id=run.session_id).select_related("created_by"),
        "runtime_modes": RuntimeMode.choices,
        "loose_runtime_modes": LOOSE_RUNTIME_MODES,
        "interaction_modes": InteractionMode.choices,
    }


# What the page re-fetches when its WebSocket (re)opens, by the id of the element asking.
_RUN_PARTIALS = {
    "approvals": "runs/run_detail.html#run-approvals",
    "timeline": "runs/run_detail.html#timeline-rows",
    "grants": "runs/run_detail.html#grants",
}


@console_login_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def run_detail(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run.objects.select_related("created_by", "policy", "session"), pk=run_id)
    target = request.htmx.target or ""
    if target == f"run-header-{run.pk}":
        return render(request, "runs/run_detail.html#run-header", {"run": run})
    if target in _RUN_PARTIALS:
        return render(request, _RUN_PARTIALS[target], _run_context(run, request.user))
    return render(request, "runs/run_detail.html", _run_context(run, request.user))


@console_login_required
@permission_required("runs.add_run", raise_exception=True)
@require_http_methods(["GET", "POST"])
def run_new(request: HtmxHttpRequest) -> HttpResponse:
    initial = {"session": query_run_id(request.GET.get("session"))}
    form = RunCreateForm(request.POST or None, initial=initial)
    status = 200
    if request.method == "POST" and form.is_valid():
        given = form.cleaned_data["run_policy"] is not None
        try:
            run = run_create(
                driver=form.cleaned_data["driver"],
                policy_name=form.cleaned_data["policy"],
                prompt=form.cleaned_data["prompt"],
                scenario=form.cleaned_data["scenario"],
                workspace=form.cleaned_data["workspace"],
                run_policy=form.cleaned_data["run_policy"],
                session=form.cleaned_data["session"],
                user=request.user,
            )
        except RunError as exc:
            field = exc.fields.get("field")
            if exc.code == "policy_override_forbidden" and given and field not in (None, "runtime_mode"):
                field = f"run_policy.{field}"  # the run policy given here is what loosens
            form.add_service_error(field, exc.message)
            status = exc.status if exc.status == 403 else 200
        except PolicyError as exc:
            # A run policy given here is the nearest layer: its errors belong to its field.
            form.add_service_error(f"run_policy.{exc.field}" if given and exc.field else exc.field, exc.message)
        else:
            return redirect("run-detail", run_id=run.pk)
    return render(request, "runs/run_new.html", {"form": form, "session_id": form["session"].value()}, status=status)


@console_login_required
@permission_required("runs.change_run", raise_exception=True)
@require_POST
def run_cancel_view(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    error = ""
    try:
        run = run_cancel(run=run, user=request.user)
    except RunError as exc:
        error = exc.message
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect("run-detail", run_id=run.pk)
    run = Run.objects.select_related("created_by", "policy").get(pk=run.pk)
    return render(request, "runs/run_detail.html#run-header", {"run": run, "error": error})


def query_run_id(raw: str | None) -> int | None:
    return int(raw) if raw and raw.isascii() and raw.isdigit() and len(raw) < 19 else None


def _posted_from_run(request: HttpRequest, session_id: int) -> Run | None:
    """The run page a session form was posted from (`run` field), else the session's latest."""
    runs = Run.objects.filter(session_id=session_id).select_related("session")
    run_id = query_run_id(request.POST.get("run"))
    return (runs.filter(pk=run_id).first() if run_id is not None else None) or runs.first()


@console_login_required
@permission_required("approvals.change_grant", raise_exception=True)
@require_POST
def grant_revoke_view(request: HtmxHttpRequest, grant_id: int) -> HttpResponse:
    grant = get_object_or_404(Grant, pk=grant_id)
    grant_revoke(grant=grant, user=request.user)
    run = _posted_from_run(request, grant.session_id)
    if not request.htmx or run is None:
        messages.success(request, f"Grant “{grant.label or grant.rule}” revoked.")
        return redirect("run-detail", run_id=run.pk) if run else redirect("inbox")
    return render(request, "runs/run_detail.html#grants", _run_context(run, request.user))


@console_login_required
@permission_required("runs.change_agentsession", raise_exception=True)
@require_POST
def session_modes_view(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(AgentSession, pk=session_id)
    error = ""
    try:
        session_set_modes(
            session=session,
            runtime_mode=request.POST.get("runtime_mode") or None,
            interaction_mode=request.POST.get("interaction_mode") or None,
            user=request.user,
            seen_from_run=query_run_id(request.POST.get("run")),
        )
    except RunError as exc:
        error = exc.message
    run = _posted_from_run(request, session_id)
    if not request.htmx or run is None:
        if error:
            messages.error(request, error)
        return redirect("run-detail", run_id=run.pk) if run else redirect("inbox")
    return render(request, "runs/run_detail.html#session-modes", {**_run_context(run, request.user), "saved": not error, "error": error})
