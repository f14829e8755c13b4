"""The console's Changes tab of a run: per-file stats and the diff, highlighted with Pygments
(its output escapes every character of the diff: agent-written text stays text), the patch
download, and "Push branch" (a delivery approval, decided by someone else in the inbox)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_POST
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer

from approvals.access import runs_visible
from project.console_auth import console_login_required
from repos.errors import RepositoryError
from repos.git import Changes
from repos.models import Delivery
from repos.services import delivery_request, run_changes, run_patch
from runs.models import Run

_FORMATTER = HtmlFormatter(cssclass="highlight")


def _per_file(diff: str) -> list[str]:
    """The unified diff cut at each `diff --git` line, in the order of the files."""
    chunks: list[str] = []
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git ") or not chunks:
            chunks.append(line)
        else:
            chunks[-1] += line
    return chunks


def highlighted(diff: str) -> SafeString:
    # Pygments' HtmlFormatter escapes &, <, >, " and ' in every token: the diff is data.
    return mark_safe(highlight(diff, DiffLexer(), _FORMATTER))  # noqa: S308


def changes_context(changes: Changes) -> dict[str, Any]:
    chunks = _per_file(changes.diff)
    files = []
    for index, changed in enumerate(changes.files):
        files.append({"file": changed, "html": highlighted(chunks[index]) if index < len(chunks) and not changed.binary else ""})
    return {"changes": changes, "files": files,
            "additions": sum(f.additions or 0 for f in changes.files), "deletions": sum(f.deletions or 0 for f in changes.files)}


def _run(request: HttpRequest, run_id: int) -> Run:
    return get_object_or_404(runs_visible(request.user, Run.objects.select_related("repository", "session")), pk=run_id)


@console_login_required
@require_GET
def run_changes_view(request: HttpRequest, run_id: int) -> HttpResponse:
    run = _run(request, run_id)
    context: dict[str, Any] = {"run": run, "deliveries": Delivery.objects.filter(run=run).order_by("-id")[:5]}
    try:
        context.update(changes_context(run_changes(run)))
    except RepositoryError as exc:
        context["unavailable"] = exc.message
    if getattr(request, "htmx", False):  # the run page's live section
        return render(request, "repos/run_changes.html#summary", context)
    return render(request, "repos/run_changes.html", context)


@console_login_required
@require_GET
def run_patch_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """"Download patch": anyone who may view the run."""
    run = _run(request, run_id)
    try:
        patch = run_patch(run)
    except RepositoryError as exc:
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain; charset=utf-8")
    response = HttpResponse(patch, content_type="application/mbox; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="gatehouse-run-{run.pk}.patch"'
    return response


@console_login_required
@require_POST
def run_deliver_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """"Push branch": opens the delivery approval; the push happens once someone approves it."""
    run = _run(request, run_id)
    user: Any = request.user
    if run.created_by_id != user.pk and not user.has_perm("runs.change_run"):
        messages.error(request, "Only the run's starter (or someone who may change runs) asks to deliver it.")
    else:
        try:
            delivery = delivery_request(run=run, user=user, action="push")
        except RepositoryError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Asked to push {delivery.branch}: a reviewer decides it in the inbox.")
    return redirect("run-changes", run_id=run.pk)
