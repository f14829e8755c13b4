"""Console views for runs and sessions: runs list, run page (with its live partials), new
run, cancel, revoke grant, session modes; the sessions list and page, and "Continue" (a
follow-up prompt: the session's next run).

Each view parses, calls at most one service, and renders a template or one of its inline
partials; the run page's partials are the same ones the WebSocket pushes.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from approvals.access import grants_visible, runs_visible, sessions_visible
from approvals.errors import ApprovalError
from approvals.forms import pending_visible_to
from approvals.models import Grant
from approvals.policy import PolicyError
from approvals.policy.run_policy import LOOSE_RUNTIME_MODES
from approvals.selectors import PendingFilter, approvals_pending, grants_active, subagents_asking
from approvals.services import grant_revoke
from project.console_auth import console_login_required
from runs.errors import RunError
from runs.forms import FollowUpForm, RunCreateForm, parse_json_object
from runs.models import AgentSession, InteractionMode, Run, RuntimeMode
from runs.selectors import latest_runs_of, session_latest_run, sessions_with_facts, steps_by_seq, timeline_page
from runs.services import run_cancel, run_create, run_follow_up, session_joinable, session_set_modes

RUNS_PER_PAGE = 25


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@console_login_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def run_list(request: HtmxHttpRequest) -> HttpResponse:
    paginator = Paginator(runs_visible(request.user, Run.objects.select_related("created_by")), RUNS_PER_PAGE)
    page_obj = paginator.get_page(request.GET.get("page"))
    if request.htmx.target == "runs-body":
        return render(request, "runs/run_list.html#run-rows", {"runs": page_obj.object_list})
    return render(
        request,
        "runs/run_list.html",
        {"page_obj": page_obj, "is_first_page": page_obj.number == 1, "refresh_url": request.path},
    )


def _session_context(session: AgentSession, user: Any = None) -> dict[str, Any]:
    """What the session panels (modes, grants, follow-up) show, on the run and session pages."""
    may_join = user is not None and user.has_perm("runs.add_run") and session_joinable(session=session, user=user)
    return {
        "session": session,
        "may_join_session": may_join,
        "grants": grants_active(session_id=session.pk).select_related("created_by"),
        "runtime_modes": RuntimeMode.choices,
        "loose_runtime_modes": LOOSE_RUNTIME_MODES,
        "interaction_modes": InteractionMode.choices,
    }


def _follow_up_form(session: AgentSession, data: Any = None) -> FollowUpForm | None:
    latest = session_latest_run(session)
    return FollowUpForm(data, driver=latest.driver) if latest is not None else None


def _run_context(run: Run, user: Any = None) -> dict[str, Any]:
    approvals = list(approvals_pending(run_id=run.pk))
    activities, earlier = timeline_page(run)
    latest = session_latest_run(run.session)
    return {
        **_session_context(run.session, user),
        "run": run,
        "approvals": approvals,
        "asking": subagents_asking(approvals),
        "activities": activities,
        "steps": steps_by_seq(run.pk, activities),
        "earlier": earlier,
        # "Continue this session" is offered on the session's latest run (and its page).
        "follow_up": FollowUpForm(driver=run.driver) if latest is not None and latest.pk == run.pk else None,
    }


# What the page re-fetches when its WebSocket (re)opens, by the id of the element asking
# (the timeline, which catches up with what came after its last row, is handled apart).
_RUN_PARTIALS = {
    "approvals": "runs/run_detail.html#run-approvals",
    "grants": "runs/run_detail.html#grants",
}


@console_login_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def run_detail(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(runs_visible(request.user, Run.objects.select_related("created_by", "policy", "session")), pk=run_id)
    target = request.htmx.target or ""
    if target == f"run-header-{run.pk}":
        return render(request, "runs/run_detail.html#run-header", {"run": run})
    if target == "timeline" and request.htmx:
        # "Earlier" (before=SEQ) puts older rows first; a reconnect (after=SEQ) appends the missed.
        after, before = query_run_id(request.GET.get("after")), query_run_id(request.GET.get("before"))
        activities, earlier = timeline_page(run, before=before, after=after)
        context = {"run": run, "activities": activities, "steps": steps_by_seq(run.pk, activities), "earlier": earlier,
                   "paged": before is not None}
        return render(request, "runs/run_detail.html#timeline-rows", context)
    if target in _RUN_PARTIALS:
        return render(request, _RUN_PARTIALS[target], _run_context(run, request.user))
    return render(request, "runs/run_detail.html", _run_context(run, request.user))


@console_login_required
@permission_required("runs.add_run", raise_exception=True)
@require_http_methods(["GET", "POST"])
def run_new(request: HtmxHttpRequest) -> HttpResponse:
    initial = {"session": query_run_id(request.GET.get("session"))}
    form = RunCreateForm(request.POST or None, initial=initial, user=request.user)
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
                repository=form.cleaned_data["repository"],
                ref=form.cleaned_data["ref"],
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
    session_id = query_run_id(str(form["session"].value() or ""))
    return render(request, "runs/run_new.html", {"form": form, "session_id": session_id}, status=status)


@console_login_required
@require_POST
def run_cancel_view(request: HtmxHttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(runs_visible(request.user), pk=run_id)
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
@require_POST
def grant_revoke_view(request: HtmxHttpRequest, grant_id: int) -> HttpResponse:
    grant = get_object_or_404(grants_visible(request.user, Grant.objects.select_related("session")), pk=grant_id)
    try:
        grant_revoke(grant=grant, user=request.user)
    except ApprovalError as exc:
        raise PermissionDenied(exc.message) from None
    run = _posted_from_run(request, grant.session_id)
    on_session_page = request.POST.get("from") == "session"
    if not request.htmx or (run is None and not on_session_page):
        messages.success(request, f"Grant “{grant.label or grant.rule}” revoked.")
        if on_session_page or run is None:
            return redirect("session-detail", session_id=grant.session_id)
        return redirect("run-detail", run_id=run.pk)
    if on_session_page:
        return render(request, "runs/session_detail.html#session-grants", _session_context(grant.session, request.user))
    assert run is not None
    return render(request, "runs/run_detail.html#grants", _run_context(run, request.user))


@console_login_required
@require_POST
def session_modes_view(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(sessions_visible(request.user), pk=session_id)
    error = ""
    changes: dict[str, Any] = {}
    try:
        if "run_policy" in request.POST:  # empty: inherit (the rule policy's, else the server's)
            text = request.POST["run_policy"].strip()
            changes["run_policy"] = parse_json_object(text, "session's run policy") if text else None
        session_set_modes(
            session=session,
            runtime_mode=request.POST.get("runtime_mode") or None,
            interaction_mode=request.POST.get("interaction_mode") or None,
            user=request.user,
            seen_from_run=query_run_id(request.POST.get("run")),
            **changes,
        )
    except RunError as exc:
        error = exc.message
    except PolicyError as exc:
        error = f"Run policy: {exc.message}"
    except ValidationError as exc:
        error = f"Run policy: {' '.join(exc.messages)}"
    run = _posted_from_run(request, session_id)
    on_session_page = request.POST.get("from") == "session"
    if not request.htmx or (run is None and not on_session_page):
        if error:
            messages.error(request, error)
        if on_session_page or run is None:
            return redirect("session-detail", session_id=session_id)
        return redirect("run-detail", run_id=run.pk)
    session.refresh_from_db()
    context = {**_session_context(session, request.user), "run": None if on_session_page else run, "saved": not error, "error": error}
    return render(request, "runs/_session.html#session-modes", context)


# --- Sessions --------------------------------------------------------------------------------

SESSIONS_PER_PAGE = 25


@console_login_required
@require_GET
def session_list(request: HtmxHttpRequest) -> HttpResponse:
    """Every session, newest first: its runs, modes, grants, waiting requests, last activity."""
    page_obj = Paginator(sessions_visible(request.user, sessions_with_facts()), SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    sessions = list(page_obj.object_list)
    runs = latest_runs_of([s.pk for s in sessions], runs=runs_visible(request.user))
    rows = [(session, runs.get(session.pk, [])) for session in sessions]
    return render(request, "runs/session_list.html", {"page_obj": page_obj, "rows": rows})


def _session_page(request: HtmxHttpRequest, session_id: int, *, follow_up: FollowUpForm | None = None, status: int = 200) -> HttpResponse:
    session = get_object_or_404(sessions_visible(request.user, sessions_with_facts()), pk=session_id)
    runs_page = Paginator(runs_visible(request.user, Run.objects.filter(session=session).select_related("created_by")), RUNS_PER_PAGE).get_page(request.GET.get("page"))
    approvals = list(approvals_pending(filters=PendingFilter(session_id=session.pk, visible_to_id=pending_visible_to(request.user))))
    context = {
        **_session_context(session, request.user),
        "runs_page": runs_page,
        "runs_live": runs_page.number == 1,
        "approvals": approvals,
        "asking": subagents_asking(approvals),
        "follow_up": follow_up or _follow_up_form(session),
    }
    if request.htmx.target == "approvals":
        return render(request, "runs/session_detail.html#session-approvals", context)
    if request.htmx.target == "runs-body":
        return render(request, "runs/run_list.html#run-rows", {"runs": runs_page.object_list})
    return render(request, "runs/session_detail.html", context, status=status)


@console_login_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def session_detail(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    return _session_page(request, session_id)


@console_login_required
@permission_required("runs.add_run", raise_exception=True)
@require_POST
def session_continue_view(request: HtmxHttpRequest, session_id: int) -> HttpResponse:
    """A follow-up prompt: the session's next run (the agent resumes its conversation).
    A refusal (403 foreign_session, policy_override_forbidden) is shown in the form: with
    htmx as a 200 swap, as the decide views do; without, with its own status."""
    session = get_object_or_404(sessions_visible(request.user), pk=session_id)
    form = _follow_up_form(session, request.POST)
    if form is None:
        messages.error(request, f"Session {session.pk} has no run to continue.")
        return redirect("session-detail", session_id=session.pk)
    status = 400
    if form.is_valid():
        try:
            run = run_follow_up(
                session=session, prompt=form.cleaned_data["prompt"], scenario=form.cleaned_data.get("scenario"), user=request.user
            )
        except RunError as exc:
            form.add_service_error(exc.fields.get("field"), exc.message)
            status = exc.status
        else:
            if request.htmx:
                response = HttpResponse(status=200)
                response["HX-Redirect"] = reverse("run-detail", args=[run.pk])
                return response
            return redirect("run-detail", run_id=run.pk)
    if request.htmx:
        return render(request, "runs/_session.html#follow-up", {"session": session, "follow_up": form, "may_join_session": True})
    return _session_page(request, session.pk, follow_up=form, status=status)
