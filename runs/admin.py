from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from approvals.policy import PolicyError
from runs.errors import RunError
from runs.models import Activity, AgentSession, Run, Step
from runs.services import session_run_policy_check, session_set_run_policy


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written by services only: the admin shows them and never edits them."""

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


class SessionRunPolicyForm(forms.ModelForm):
    user: Any = None  # set by the admin: who saves it

    class Meta:
        model = AgentSession
        fields = ["run_policy"]

    def clean_run_policy(self) -> Any:
        value = self.cleaned_data.get("run_policy")
        if value is not None and not isinstance(value, dict):
            raise forms.ValidationError("The run policy must be a JSON object (or empty: inherit).")
        try:
            session_run_policy_check(session=self.instance, run_policy=value, user=self.user)
        except (RunError, PolicyError) as exc:
            raise forms.ValidationError(exc.message) from None
        return value


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
    """Sessions are written by services; here only their run policy is edited (through
    `session_set_run_policy`: validated, and a loosening needs runs.override_policy)."""

    form = SessionRunPolicyForm
    list_display = ["id", "title", "runtime_mode", "interaction_mode", "created_at"]
    readonly_fields = ["title", "runtime_mode", "interaction_mode", "modes_set_by", "created_by", "created_at"]
    fields = ["title", "runtime_mode", "interaction_mode", "modes_set_by", "run_policy", "created_by", "created_at"]

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        form.user = request.user  # type: ignore[attr-defined]  # (SessionRunPolicyForm declares it)
        return form

    def save_model(self, request: Any, obj: AgentSession, form: Any, change: bool) -> None:
        session_set_run_policy(session=AgentSession.objects.get(pk=obj.pk), run_policy=form.cleaned_data.get("run_policy"),
                               user=request.user)


class StepInline(admin.TabularInline):
    model = Step
    fields = readonly_fields = ("seq", "tool", "verdict", "rule", "status", "decided_by", "exit_code")
    extra = 0
    can_delete = False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["id", "driver", "status", "failure_reason", "created_at", "finished_at"]
    list_filter = ["status", "driver"]
    search_fields = ["prompt"]
    inlines = [StepInline]


@admin.register(Step)
class StepAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "seq", "tool", "verdict", "status", "decided_by"]
    list_filter = ["status", "verdict"]


@admin.register(Activity)
class ActivityAdmin(ReadOnlyAdmin):
    list_display = ["id", "run", "seq", "kind", "event", "created_at"]
    list_filter = ["kind"]
