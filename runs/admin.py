from __future__ import annotations

from typing import Any

from django.contrib import admin

from runs.models import Activity, AgentSession, Run, Step


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written by services only: the admin shows them and never edits them."""

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(AgentSession)
class AgentSessionAdmin(ReadOnlyAdmin):
    list_display = ["id", "title", "runtime_mode", "interaction_mode", "created_at"]


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
