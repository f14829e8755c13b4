"""The policy admin's own pages and fragments: "Try it", the dry run, version diffs,
restore, import and export. Each parses, calls one service, renders; the admin site
wraps each (staff only, CSRF checked on POST) and `for_admin` adds the model permission.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from approvals import policy as core
from approvals.access import policy_loosenings
from approvals.admin_forms import DryRunForm, PolicyImportForm, TryItForm
from approvals.models import Policy, PolicyVersion
from approvals.policy_replay import DRY_RUN_LIMIT, policy_dry_run, policy_try, shadow_agreement
from approvals.policy_versions import (
    PolicyInvalid,
    document_problems,
    policy_export_json,
    policy_import,
    policy_restore,
    version_diff,
)
from approvals.policy_warnings import policy_warnings
from approvals.templatetags.gatehouse import diff_lines, segment_rows
from runs.models import Step

TEMPLATES = "admin/approvals/policy"


def for_admin(model_admin: Any, view: Callable[..., HttpResponse], permission: str) -> Callable[..., HttpResponse]:
    """`view(request, model_admin=…, **kwargs)`, refused (403) without the model permission
    (`change` for what edits or replays a policy, `add` to import, `view` to read)."""
    check = getattr(model_admin, f"has_{permission}_permission")

    @functools.wraps(view)
    def wrapped(request: HttpRequest, **kwargs: Any) -> HttpResponse:
        if not check(request):
            raise PermissionDenied
        return view(request, model_admin=model_admin, **kwargs)

    return wrapped


def download(text: str, name: str, extension: str) -> HttpResponse:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "policy"
    response = HttpResponse(text, content_type="application/json" if extension == "json" else "text/plain")
    response["Content-Disposition"] = f'attachment; filename="{slug}.{extension}"'
    return response


# --- "Try it" and the dry run (htmx fragments of the change page) ------------------------------


def _draft(text: str) -> tuple[Any, list[str]]:
    """The document as typed in the textarea, and what keeps it from being evaluated."""
    try:
        document = core.parse_json_strict(text.encode())
    except core.PolicyError as exc:
        return None, [f"The rule policy is not valid JSON: {exc.message}"]
    return document, [p.message for p in document_problems(document)]


@require_POST
def policy_try_view(request: HttpRequest, *, model_admin: Any) -> HttpResponse:
    form = TryItForm(request.POST)
    context: dict[str, Any] = {"problems": []}
    if not form.is_valid():
        context["problems"] = [f"{form.fields[name].label or name}: {' '.join(str(e) for e in errors)}" if name in form.fields else " ".join(str(e) for e in errors)
                               for name, errors in form.errors.items()]
        return render(request, f"{TEMPLATES}/_try_result.html", context)
    document, context["problems"] = _draft(form.cleaned_data["document"])
    if context["problems"]:
        return render(request, f"{TEMPLATES}/_try_result.html", context)
    workspace = form.cleaned_data["try_workspace"]
    try:
        request_json = form.tool_request()
        tried = policy_try(document=document, request=request_json, workspace=workspace)
    except core.PolicyError as exc:
        context["problems"] = [f"The request: {exc.message}"]
        return render(request, f"{TEMPLATES}/_try_result.html", context)
    verdict = tried.verdict
    data = verdict.to_dict()
    segments = segment_rows(data["segments"], verdict.decision, workspace)
    for row, reading in zip(segments, tried.readings, strict=False):
        row["reading"] = reading
    context.update(
        verdict=verdict, request_json=request_json, workspace=workspace, segments=segments,
        paths=data.get("paths", []),
    )
    return render(request, f"{TEMPLATES}/_try_result.html", context)


@require_POST
def policy_dry_run_view(request: HttpRequest, *, model_admin: Any, policy_id: int | None = None) -> HttpResponse:
    policy = get_object_or_404(Policy, pk=policy_id) if policy_id is not None else None
    form = DryRunForm(request.POST)
    if not form.is_valid():
        return render(request, f"{TEMPLATES}/_dry_run.html", {"problems": ["Send the rule policy to replay."]})
    document, problems = _draft(form.cleaned_data["document"])
    if problems:
        return render(request, f"{TEMPLATES}/_dry_run.html", {"problems": problems})
    result = policy_dry_run(document=document, policy=policy, limit=form.cleaned_data.get("limit") or DRY_RUN_LIMIT)
    return render(request, f"{TEMPLATES}/_dry_run.html", {"result": result, "policy": policy, "shown": result.changed[:50]})


# --- The change page: versions, shadow, warnings ---------------------------------------------------


def policy_page_context(policy: Policy) -> dict[str, Any]:
    """What the change page shows beside the form."""
    by_driver: dict[str, list[Any]] = defaultdict(list)
    for warning in policy_warnings(document=policy.document, run_policy=policy.run_policy):
        by_driver[warning.driver].append(warning)
    as_shadow = None
    if Step.objects.filter(shadow_version__policy=policy).exists():
        as_shadow = shadow_agreement(shadow=policy)
    shadow = policy.shadow_policy
    live_shadow = shadow_agreement(shadow=shadow, live=policy) if shadow is not None else None
    return {
        "policy_versions": list(PolicyVersion.objects.filter(policy=policy).select_related("author").order_by("-number")),
        "driver_warnings": dict(by_driver),
        "as_shadow": as_shadow,
        "live_shadow": live_shadow,
        "shadowing": list(policy.shadowing.order_by("name")),
        "export_formats": ("json", "claude", "codex"),
        "loosenings": policy_loosenings(policy),
    }


@require_GET
def policy_diff_view(request: HttpRequest, *, model_admin: Any, policy_id: int) -> HttpResponse:
    policy = get_object_or_404(Policy, pk=policy_id)
    versions = list(PolicyVersion.objects.filter(policy=policy).order_by("-number"))
    by_number = {v.number: v for v in versions}

    def pick(name: str, default: int | None) -> PolicyVersion | None:
        raw = request.GET.get(name, "")
        number = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 10 else default
        return by_number.get(number) if number is not None else None

    newest = versions[0].number if versions else None
    newer = pick("b", newest)
    older = pick("a", (newer.number - 1) if newer is not None else None)
    lines = diff_lines("\n".join(version_diff(older, newer))) if older is not None and newer is not None else []
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": Policy._meta, "original": policy, "title": f"{policy.name}: changes between versions",
        "versions": versions, "older": older, "newer": newer, "lines": lines,
    }
    return render(request, f"{TEMPLATES}/diff.html", context)


def _change_url(policy: Policy) -> str:
    return reverse("admin:approvals_policy_change", args=[policy.pk])


@require_POST
def policy_restore_view(request: HttpRequest, *, model_admin: Any, policy_id: int, number: int) -> HttpResponse:
    policy = get_object_or_404(Policy, pk=policy_id)
    try:
        version = policy_restore(policy=policy, number=number, user=request.user)
    except core.PolicyError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Restored version {number} of {policy.name} as version {version.number}.")
    return HttpResponseRedirect(_change_url(policy))


@require_GET
def policy_export_view(request: HttpRequest, *, model_admin: Any, policy_id: int, fmt: str) -> HttpResponse:
    policy = get_object_or_404(Policy, pk=policy_id)
    if fmt == "json":
        return download(policy_export_json(policy), policy.name, "json")
    if fmt not in core.EXPORT_FORMATS:
        messages.error(request, f"There is no {fmt!r} export (json, {', '.join(core.EXPORT_FORMATS)}).")
        return HttpResponseRedirect(_change_url(policy))
    result = core.export_policy(policy.document, fmt)
    if result.unexpressed:
        messages.warning(request, f"The {fmt} export cannot express: " + "; ".join(result.unexpressed))
    return download(result.text, policy.name, "json" if fmt == "claude" else "rules")


def policy_import_view(request: HttpRequest, *, model_admin: Any) -> HttpResponse:
    form = PolicyImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            policy = policy_import(
                data=upload.read(), name=form.cleaned_data["name"], user=request.user,
                comment=form.cleaned_data["comment"] or f"Imported from {upload.name} in the admin.",
            )
        except PolicyInvalid as exc:
            for problem in exc.problems:
                form.add_error("file", problem.message)
        except core.PolicyError as exc:
            form.add_error("name" if exc.field == "name" else "file", exc.message)
        else:
            messages.success(request, f"Imported {policy.name}.")
            return HttpResponseRedirect(_change_url(policy))
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": Policy._meta, "title": "Import a policy", "form": form,
    }
    return render(request, f"{TEMPLATES}/import.html", context)
