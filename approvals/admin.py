from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from approvals import policy as core
from approvals.models import Approval, Grant, Policy
from approvals.services import policy_save
from runs.admin import ReadOnlyAdmin


class PolicyForm(forms.ModelForm):
    class Meta:
        model = Policy
        fields = ["name", "description", "is_default", "document", "run_policy"]

    def clean_document(self) -> Any:
        document = self.cleaned_data["document"]
        try:
            core.compile_policy(document or {})
        except core.PolicyError as exc:
            raise forms.ValidationError(f"{exc.field}: {exc.message}" if exc.field else exc.message) from None
        return document

    def clean_run_policy(self) -> Any:
        run_policy = self.cleaned_data["run_policy"]
        if run_policy is not None:
            try:
                core.parse_run_policy(run_policy)
            except core.PolicyError as exc:
                raise forms.ValidationError(f"{exc.field}: {exc.message}" if exc.field else exc.message) from None
        return run_policy


@admin.register(Policy)
class PolicyAdmin(admin.ModelAdmin):
    form = PolicyForm
    list_display = ["name", "is_default", "version", "updated_at"]
    readonly_fields = ["version", "created_at", "updated_at"]
    search_fields = ["name"]

    def save_model(self, request: Any, obj: Policy, form: Any, change: bool) -> None:
        policy_save(policy=obj)


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "kind", "subtype", "status", "decided_by", "decided_via", "created_at"]
    list_filter = ["status", "kind", "decided_via"]
    search_fields = ["hash"]


@admin.register(Grant)
class GrantAdmin(ReadOnlyAdmin):
    list_display = ["id", "session", "label", "created_by", "created_at", "revoked_at"]
