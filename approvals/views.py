"""Console views for approvals: the inbox, the three decide endpoints and batch decisions.

A decide view parses the form, calls one service with via="console" and renders the card
partial: the decided card ("Approved by alice") on success, the card with the refusal
("Already decided") otherwise, status 200 so htmx swaps it. Without htmx it redirects back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.middleware import HtmxDetails

from approvals import insights
from approvals import policy as core
from approvals.access import approvals_visible, runs_visible
from approvals.errors import HASH_REQUIRED, ApprovalError
from approvals.forms import InboxFilterForm
from approvals.models import Approval, Policy
from approvals.selectors import BadCursor, pending_page, subagents_asking
from approvals.services import BatchOutcome, approval_answer, approval_decide, approval_decide_each
from project.console_auth import console_login_required
from runs.models import Run

RECENT_RUNS = 10


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


INBOX_PAGE = 25


def _inbox_context(request: HtmxHttpRequest) -> tuple[dict[str, Any], int]:
    """The filter form, one page of the pending list, and the socket URL of the same view."""
    form = InboxFilterForm(request.GET, user=request.user)
    context: dict[str, Any] = {"filter_form": form, "page": None}
    if form.is_valid():
        try:
            page = pending_page(filters=form.pending_filter(), sort=form.sort_order, cursor=form.page_cursor, size=INBOX_PAGE)
        except BadCursor:
            form.add_error("cursor", "This page link is broken; start again from the first page.")
        else:
            context.update(page=page, next_query=form.query(cursor=page.next_cursor))
    if form.errors:
        return {**context, "filtered": True, "ws_url": "/ws/inbox/?view=runs"}, 400
    live = form.query(page="later" if form.page_cursor else None)
    context.update(filtered=not form.pending_filter().is_empty, ws_url="/ws/inbox/" + (f"?{live}" if live else ""))
    return context, 200


@console_login_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def inbox(request: HtmxHttpRequest) -> HttpResponse:
    context, status = _inbox_context(request)
    if request.htmx.target == "approvals":
        return render(request, "approvals/inbox.html#approval-list", context, status=status)
    recent_runs = runs_visible(request.user, Run.objects.select_related("created_by"))[:RECENT_RUNS]
    if request.htmx.target == "runs-body":
        return render(request, "runs/run_list.html#run-rows", {"runs": recent_runs})
    return render(request, "approvals/inbox.html", {**context, "recent_runs": recent_runs}, status=status)


def _batch_items(request: HttpRequest) -> list[tuple[int, str]]:
    """`item=<id>:<hash>` per selected card: each approval is decided with its own hash."""
    items = []
    for raw in request.POST.getlist("item"):
        approval_id, _, hash = raw.partition(":")
        if approval_id.isascii() and approval_id.isdigit() and len(approval_id) < 19:
            items.append((int(approval_id), hash.strip()))
    return items


@console_login_required
@permission_required("approvals.change_approval", raise_exception=True)
@require_POST
def approvals_batch_view(request: HtmxHttpRequest) -> HttpResponse:
    """Approve or deny the selected cards, each once with its own hash; never a grant."""
    decision = request.POST.get("decision", "")
    items = _batch_items(request)
    error = ""
    outcomes: list[BatchOutcome] = []
    if decision not in ("approve", "deny"):
        error = "Choose Approve each or Deny each."
    elif not items:
        error = "Select at least one request first (its checkbox, or x)."
    else:
        try:
            outcomes = approval_decide_each(
                items=items, user=request.user, approve=decision == "approve",
                reason="" if decision == "approve" else request.POST.get("reason", "").strip()[:2000], via="console",
            )
        except ApprovalError as exc:
            error = exc.message
    decided = [o for o in outcomes if o.error is None]
    refused = [o for o in outcomes if o.error is not None]
    if not request.htmx:
        if error:
            messages.error(request, error)
        if decided:
            messages.success(request, f"{'Approved' if decision == 'approve' else 'Denied'} {len(decided)}.")
        for outcome in refused:
            assert outcome.error is not None
            messages.error(request, f"Request {outcome.approval_id} not decided: {outcome.error.message}")
        return redirect(_back(request))
    approvals = Approval.objects.select_related("run", "run__session", "run__created_by", "step", "decided_by").in_bulk(
        [o.approval_id for o in outcomes]
    )
    cards = [(approvals[o.approval_id], o.error) for o in outcomes if o.approval_id in approvals]
    return render(
        request,
        "approvals/_approval_card.html#batch-result",
        {
            "error": error, "verb": "Approved" if decision == "approve" else "Denied",
            "decided": decided, "refused": refused, "cards": cards,
            "asking": subagents_asking([a for a, _ in cards]),
        },
        status=400 if error else 200,
    )


def _decided(request: HtmxHttpRequest, approval_id: int, decide: Callable[[], Approval], **extra: Any) -> HttpResponse:
    error: ApprovalError | None = None
    visible = approvals_visible(request.user, Approval.objects.select_related("run", "step", "decided_by"))
    approval = get_object_or_404(visible, pk=approval_id)
    try:
        if not request.POST.get("hash"):
            # as the API: a decision names the request the reviewer saw (its hash)
            raise ApprovalError("hash_required", HASH_REQUIRED)
        approval = decide()
    except ApprovalError as exc:
        error = exc
    if not request.htmx:
        if error is not None:
            messages.error(request, error.message)
        return redirect(_back(request))
    approval = Approval.objects.select_related("run", "run__session", "run__created_by", "step", "decided_by").get(pk=approval.pk)
    context = {"approval": approval, "error": error, "asking": subagents_asking([approval]), **extra}
    return render(request, "approvals/_approval_card.html#card", context)


def _back(request: HttpRequest) -> str:
    referer = request.headers.get("Referer", "")
    if url_has_allowed_host_and_scheme(referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return referer
    return "inbox"


@console_login_required
@permission_required("approvals.change_approval", raise_exception=True)
@require_POST
def approval_decide_view(request: HtmxHttpRequest, approval_id: int, approve: bool) -> HttpResponse:
    """Approve (optionally for the session, or a plan with a mode, or with an edited input)
    or deny with a reason."""
    edited = _edited_from_form(request)
    return _decided(
        request,
        approval_id,
        lambda: approval_decide(
            approval_id=approval_id,
            user=request.user,
            approve=approve,
            hash=request.POST.get("hash", ""),
            scope=(request.POST.get("scope", "once") or "once") if approve else "once",
            mode=request.POST.get("mode", "") if approve else "",
            reason="" if approve else request.POST.get("reason", "").strip(),
            via="console",
            confirmation=request.POST.get("confirmation", "") if approve else "",
            edited_input=edited if approve else None,
        ),
        edited_given=next(iter(edited.values())) if edited else None,
    )


def _edited_from_form(request: HttpRequest) -> dict[str, str] | None:
    """`edited:<key>` fields (the card's Edit) as `edited_input`, line ends as the agent's
    (a browser sends a textarea's as CRLF); None when the form has none."""
    edited = {name.removeprefix("edited:"): str(value).replace("\r\n", "\n")
              for name, value in request.POST.items() if name.startswith("edited:")}
    return edited or None


def _answers_from_form(request: HttpRequest, approval_id: int) -> tuple[dict[str, Any], dict[str, str]]:
    """`q:<id>` holds chosen labels, `q:<id>:other` the free text (beside them, or alone);
    the service validates. Returns (answers, other)."""
    approval = get_object_or_404(approvals_visible(request.user), pk=approval_id)
    answers: dict[str, Any] = {}
    others: dict[str, str] = {}
    for question in approval.presentation.get("questions", []):
        qid = str(question.get("id", ""))
        chosen = request.POST.getlist(f"q:{qid}")
        other = request.POST.get(f"q:{qid}:other", "").strip()
        if chosen:
            answers[qid] = chosen
        if other:
            others[qid] = other
    return answers, others


@console_login_required
@permission_required("approvals.change_approval", raise_exception=True)
@require_POST
def approval_answer_view(request: HtmxHttpRequest, approval_id: int) -> HttpResponse:
    decline = request.POST.get("decline") == "1"

    def answer() -> Approval:
        answers, others = ({}, {}) if decline else _answers_from_form(request, approval_id)
        return approval_answer(
            approval_id=approval_id,
            user=request.user,
            answers=answers,
            other=others,
            hash=request.POST.get("hash", ""),
            decline=decline,
            via="console",
        )

    # A refused answer re-renders the form with the choices the reviewer made.
    chosen = {key[2:]: request.POST.getlist(key) for key in request.POST if key.startswith("q:") and not key.endswith(":other")}
    typed = {key[2:-6]: request.POST[key] for key in request.POST if key.startswith("q:") and key.endswith(":other")}
    return _decided(request, approval_id, answer, answers_given=chosen, others_given=typed)


@console_login_required
@permission_required("approvals.change_policy", raise_exception=True)
@require_GET
def insights_page(request: HttpRequest) -> HttpResponse:
    """What the record of decisions says about a policy: approval rates by class and shape,
    time to decide, prompts per run, rules to learn, rubber-stamp candidates. For people
    who may change policies (they act on it)."""
    policies = list(Policy.objects.order_by("-is_default", "name"))
    chosen = request.GET.get("policy") or ""
    policy = next((p for p in policies if str(p.pk) == chosen), None) or next((p for p in policies if p.is_default), None) \
        or (policies[0] if policies else None)
    try:
        days, threshold = insights.parse_window(request.GET.get("days"), request.GET.get("threshold"))
    except core.PolicyError as exc:
        return HttpResponse(exc.message, status=400, content_type="text/plain")
    context = {"policies": policies, "policy": policy, "days": days, "threshold": threshold,
               "data": insights.insights(policy, days=days, threshold=threshold) if policy is not None else None}
    return render(request, "approvals/insights.html", context)
