from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path

from approvals import admin_views
from approvals.admin_forms import PolicyForm, pretty
from approvals.models import Approval, Grant, Policy, PolicyVersion
from approvals.policy import CLASSES
from approvals.policy import insights as learn
from approvals.policy_versions import policy_export_json, policy_save
from runs.admin import ReadOnlyAdmin


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin):
    """Policies are edited here; every save goes through `policy_save` (a new version)."""

    form = PolicyForm
    change_form_template = "admin/approvals/policy/change_form.html"
    change_list_template = "admin/approvals/policy/change_list.html"
    list_display = ["name", "is_default", "shadow_policy", "versions_count", "updated_at"]
    readonly_fields = ["version", "created_at", "updated_at"]
    search_fields = ["name"]
    filter_horizontal = ["available_to_users", "available_to_groups"]
    actions = ["export_json"]
    fieldsets = [
        (None, {"fields": ["name", "description", "is_default"]}),
        ("Rule policy", {"fields": ["document"]}),
        ("Run policy", {
            "fields": ["sandbox", "web_search", "browser", "permission", "plan_review", "question", "timeout_s",
                       "on_timeout", "on_reject", "max_retries", "confirm"],
            "description": "Guardrails and approval routing. Every field on inherit: the server's default run policy "
            "(GATEHOUSE_DEFAULT_RUN_POLICY), else the built-in defaults. A run policy replaces the farther one whole, "
            "so a field left on inherit next to a set one is the built-in default.",
        }),
        ("Shadow", {"fields": ["shadow_policy"]}),
        ("Who may use it", {
            "fields": ["available_to_users", "available_to_groups"],
            "description": "Anyone who may start runs may name a policy at least as strict as the default policy. "
            "A looser one only people with the permission to override policies, and those listed here.",
        }),
        ("Notifications", {
            "fields": ["notify_group"],
            "description": "Who hears of this policy's approvals by e-mail and chat, with one-tap links "
            "(GATEHOUSE_EMAIL_URL, GATEHOUSE_CHAT_WEBHOOK_URL): the group's reviewers, each as their own page says.",
        }),
        ("This save", {"fields": ["comment", "version", "created_at", "updated_at"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Policy]:
        return super().get_queryset(request).select_related("shadow_policy").annotate(versions_total=Count("versions"))

    @admin.display(description="versions", ordering="versions_total")
    def versions_count(self, policy: Policy) -> int:
        return int(getattr(policy, "versions_total", 0))

    def save_model(self, request: Any, obj: Policy, form: Any, change: bool) -> None:
        policy_save(policy=obj, user=request.user, comment=form.cleaned_data.get("comment", ""))

    def get_urls(self) -> list[URLPattern]:
        def view(function: Any, permission: str = "change") -> Any:
            return self.admin_site.admin_view(admin_views.for_admin(self, function, permission))

        name = "approvals_policy"
        return [
            path("try/", view(admin_views.policy_try_view), name=f"{name}_try"),
            path("dry-run/", view(admin_views.policy_dry_run_view), name=f"{name}_dry_run"),
            path("import/", view(admin_views.policy_import_view, "add"), name=f"{name}_import"),
            path("<int:policy_id>/dry-run/", view(admin_views.policy_dry_run_view), name=f"{name}_dry_run_for"),
            path("<int:policy_id>/versions/diff/", view(admin_views.policy_diff_view, "view"), name=f"{name}_diff"),
            path("<int:policy_id>/versions/<int:number>/restore/", view(admin_views.policy_restore_view),
                 name=f"{name}_restore"),
            path("<int:policy_id>/export/<str:fmt>/", view(admin_views.policy_export_view, "view"), name=f"{name}_export"),
            *super().get_urls(),
        ]

    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change=change, **kwargs)
        suggested = _suggested_rule(request) if obj is not None and request.method == "GET" else None
        if suggested is None:
            return form
        section, rule, up_to = suggested

        class WithSuggestedRule(form):  # type: ignore[misc, valid-type]
            """The policy's form with the learned rule added (insights' "Make this a rule")."""

            def __init__(self, *args: Any, **kw: Any) -> None:
                super().__init__(*args, **kw)
                if not self.is_bound:
                    self.initial["document"] = pretty(learn.with_rule(self.instance.document, section, rule, up_to))
                    self.initial["comment"] = f"Rule learned from approvals: allow {section} `{rule}`"

        return WithSuggestedRule

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None) -> Any:
        policy = self.get_object(request, unquote(object_id))
        context = admin_views.policy_page_context(policy) if policy is not None else {}
        suggested = _suggested_rule(request) if request.method == "GET" else None
        if suggested is not None and policy is not None:
            context["suggested_rule"] = {"section": suggested[0], "rule": suggested[1]}
            messages.info(request, f"The rule allow {suggested[0]} `{suggested[1]}` is added to the document below, "
                          "not saved: check it with Try it and the dry run, then save (a new version).")
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **context})

    @admin.action(description="Export the selected policy (JSON file)")
    def export_json(self, request: HttpRequest, queryset: QuerySet[Policy]) -> HttpResponse | None:
        policies = list(queryset[:2])
        if len(policies) != 1:
            self.message_user(request, "Select exactly one policy to export.", messages.ERROR)
            return None
        return admin_views.download(policy_export_json(policies[0]), policies[0].name, "json")


@admin.register(PolicyVersion)
class PolicyVersionAdmin(ReadOnlyAdmin):
    list_display = ["policy", "number", "short_version", "author", "created_at", "comment"]
    list_filter = ["policy"]
    list_select_related = ["policy", "author"]

    @admin.display(description="identity")
    def short_version(self, version: PolicyVersion) -> str:
        return version.version[:12]


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "kind", "subtype", "status", "decided_by", "decided_via", "created_at"]
    list_filter = ["status", "kind", "decided_via"]
    search_fields = ["hash"]


@admin.register(Grant)
class GrantAdmin(ReadOnlyAdmin):
    list_display = ["id", "session", "label", "created_by", "created_at", "revoked_at"]


_RULE_SECTIONS = ("commands", "edits", "reads", "network", "tools")


def _suggested_rule(request: Any) -> tuple[str, str, str | None] | None:
    """`?add_rule=section:rule[&up_to=class]` (insights' "Make this a rule"), or None when
    absent or bad."""
    raw = str(request.GET.get("add_rule") or "")
    section, _, rule = raw.partition(":")
    up_to = request.GET.get("up_to") or None
    if section not in _RULE_SECTIONS or not rule.strip() or len(rule) > 500 or (up_to is not None and up_to not in CLASSES):
        return None
    return section, rule, up_to
