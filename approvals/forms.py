"""The inbox's filters: query parameters of `/`, parsed at the boundary into a PendingFilter.

The same parsing serves the page and its WebSocket (`/ws/inbox/?kind=question`), so a live
update shows a new request exactly when a reload of that page would.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import QueryDict

from approvals.access import approval_scope
from approvals.models import Approval
from approvals.selectors import PENDING_SORTS, SIDE_EFFECT_CLASSES, PendingFilter, PendingSort
from drivers import registry

MAX_ID = 2**63 - 1
DRIVER_LABELS = {"claude-code": "Claude Code", "codex": "Codex", "scripted": "Scripted", "acp": "ACP agent", "opencode": "OpenCode"}


def pending_visible_to(user: Any) -> int | None:
    """None for who sees every approval (reviewers, administrators); else the user's id:
    they see their own runs' approvals only (`approvals.access`). Nobody signed in: no id
    a run has, so nothing."""
    if approval_scope(user)[0]:
        return None
    return getattr(user, "pk", None) or 0


def _driver_choices() -> list[tuple[str, str]]:
    return [("", "Any agent")] + [(name, DRIVER_LABELS.get(name, name)) for name in registry.names()]


class InboxFilterForm(forms.Form):
    """`driver`, `kind`, `class`, `session`, `run`, `started_by`, `mine=1`, `sort`, `cursor`."""

    driver = forms.ChoiceField(required=False, label="Agent")
    kind = forms.ChoiceField(required=False, choices=[("", "Any kind"), *Approval.Kind.choices])
    side_effect_class = forms.ChoiceField(
        required=False, label="Class", choices=[("", "Any class")] + [(c, c) for c in SIDE_EFFECT_CLASSES]
    )
    session = forms.IntegerField(required=False, min_value=1, max_value=MAX_ID, widget=forms.NumberInput(attrs={"inputmode": "numeric"}))
    run = forms.IntegerField(required=False, min_value=1, max_value=MAX_ID, widget=forms.NumberInput(attrs={"inputmode": "numeric"}))
    started_by = forms.CharField(required=False, max_length=150, label="Started by", widget=forms.TextInput(attrs={"autocomplete": "off"}))
    mine = forms.BooleanField(required=False, label="Runs I started")
    sort = forms.ChoiceField(
        required=False,
        choices=[("deadline", "Soonest deadline"), ("oldest", "Oldest first"), ("newest", "Newest first")],
    )
    cursor = forms.CharField(required=False, max_length=200, widget=forms.HiddenInput)

    # The query parameter is `class` (a Python keyword): the form reads it under its own name.
    PARAMETERS = {"class": "side_effect_class"}

    def __init__(self, query: Any, *, user: Any = None) -> None:
        data = {self.PARAMETERS.get(key, key): query.get(key) for key in query}
        super().__init__(data)
        self.user = user
        driver_field = self.fields["driver"]
        assert isinstance(driver_field, forms.ChoiceField)  # declared as one above
        driver_field.choices = _driver_choices()

    def pending_filter(self) -> PendingFilter:
        """The filter (call after is_valid)."""
        data = self.cleaned_data
        return PendingFilter(
            driver=data.get("driver") or "",
            kind=data.get("kind") or "",
            side_effect_class=data.get("side_effect_class") or "",
            session_id=data.get("session"),
            run_id=data.get("run"),
            started_by=(data.get("started_by") or "").strip(),
            started_by_id=getattr(self.user, "pk", None) if data.get("mine") else None,
            visible_to_id=pending_visible_to(self.user),
        )

    @property
    def sort_order(self) -> PendingSort:
        value = self.cleaned_data.get("sort") or "deadline"
        return value if value in PENDING_SORTS else "deadline"

    @property
    def page_cursor(self) -> str:
        return str(self.cleaned_data.get("cursor") or "")

    def active(self) -> list[tuple[str, str]]:
        """(label, value) of each filter in force, for the chips above the list."""
        data = self.cleaned_data
        shown = []
        for name in ("driver", "kind", "side_effect_class", "session", "run", "started_by"):
            value = data.get(name)
            if value not in (None, ""):
                bound = self[name]
                field = self.fields[name]
                label = dict(getattr(field, "choices", [])).get(value, value) if isinstance(field, forms.ChoiceField) else value
                shown.append((str(bound.label), str(label)))
        if data.get("mine"):
            shown.append(("Runs I started", "yes"))
        return shown

    def query(self, **overrides: Any) -> str:
        """The query string of this view (filters and sort, without the cursor) plus `overrides`."""
        params = QueryDict(mutable=True)
        reverse = {v: k for k, v in self.PARAMETERS.items()}
        for name in ("driver", "kind", "side_effect_class", "session", "run", "started_by", "sort"):
            value = self.cleaned_data.get(name) if self.is_bound and hasattr(self, "cleaned_data") else None
            if value not in (None, "") and not (name == "sort" and value == "deadline"):
                params[reverse.get(name, name)] = str(value)
        if getattr(self, "cleaned_data", {}).get("mine"):
            params["mine"] = "1"
        for key, value in overrides.items():
            if value in (None, ""):
                params.pop(key, None)
            else:
                params[key] = str(value)
        return params.urlencode()
