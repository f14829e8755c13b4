"""Console views for approvals: the inbox and the three decide endpoints.

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

from approvals.models import Approval
from approvals.selectors import approvals_pending
from approvals.services import ApprovalError, approval_answer, approval_decide
from project.console_auth import console_login_required
from runs.models import Run

RECENT_RUNS = 10


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


@console_login_required
@require_GET
@vary_on_headers("HX-Request", "HX-Target")
def inbox(request: HtmxHttpRequest) -> HttpResponse:
    if request.htmx.target == "approvals":
        return render(request, "approvals/inbox.html#approval-list", {"approvals": approvals_pending()})
    recent_runs = Run.objects.select_related("created_by")[:RECENT_RUNS]
    if request.htmx.target == "runs-body":
        return render(request, "runs/run_list.html#run-rows", {"runs": recent_runs})
    return render(request, "approvals/inbox.html", {"approvals": approvals_pending(), "recent_runs": recent_runs})


def _decided(request: HtmxHttpRequest, approval_id: int, decide: Callable[[], Approval], **extra: Any) -> HttpResponse:
    error: ApprovalError | None = None
    try:
        approval = decide()
    except ApprovalError as exc:
        error = exc
        approval = get_object_or_404(Approval.objects.select_related("run", "step", "decided_by"), pk=approval_id)
    if not request.htmx:
        if error is not None:
            messages.error(request, error.message)
        return redirect(_back(request))
    approval = Approval.objects.select_related("run", "step", "decided_by").get(pk=approval.pk)
    return render(request, "approvals/_approval_card.html#card", {"approval": approval, "error": error, **extra})


def _back(request: HttpRequest) -> str:
    referer = request.headers.get("Referer", "")
    if url_has_allowed_host_and_scheme(referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return referer
    return "inbox"


@console_login_required
@permission_required("approvals.change_approval", raise_exception=True)
@require_POST
def approval_decide_view(request: HtmxHttpRequest, approval_id: int, approve: bool) -> HttpResponse:
    """Approve (optionally for the session, or a plan with a mode) or deny with a reason."""
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
        ),
    )


def _answers_from_form(request: HttpRequest, approval_id: int) -> dict[str, Any]:
    """`q:<id>` holds chosen labels, `q:<id>:other` the free text; the service validates."""
    approval = get_object_or_404(Approval, pk=approval_id)
    answers: dict[str, Any] = {}
    for question in approval.presentation.get("questions", []):
        qid = str(question.get("id", ""))
        chosen = request.POST.getlist(f"q:{qid}")
        other = request.POST.get(f"q:{qid}:other", "").strip()
        if chosen and other:
            raise ApprovalError("invalid_decision", f"“{question.get('header') or qid}”: choose an option or write your own answer, not both.")
        if chosen or other:
            answers[qid] = other or chosen
    return answers


@console_login_required
@permission_required("approvals.change_approval", raise_exception=True)
@require_POST
def approval_answer_view(request: HtmxHttpRequest, approval_id: int) -> HttpResponse:
    decline = request.POST.get("decline") == "1"

    def answer() -> Approval:
        answers = {} if decline else _answers_from_form(request, approval_id)
        return approval_answer(
            approval_id=approval_id,
            user=request.user,
            answers=answers,
            hash=request.POST.get("hash", ""),
            decline=decline,
            via="console",
        )

    # A refused answer re-renders the form with the choices the reviewer made.
    chosen = {key[2:]: request.POST.getlist(key) for key in request.POST if key.startswith("q:") and not key.endswith(":other")}
    typed = {key[2:-6]: request.POST[key] for key in request.POST if key.startswith("q:") and key.endswith(":other")}
    return _decided(request, approval_id, answer, answers_given=chosen, others_given=typed)
