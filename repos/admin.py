"""Repositories in the admin: the credential is write-only (a password field never filled
in again; empty keeps the stored one, "Remove the credential" drops it)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin

from repos.errors import RepositoryError
from repos.models import Delivery, Repository
from repos.services import repository_check, repository_set_credential


class RepositoryForm(forms.ModelForm):
    credential = forms.CharField(
        required=False, strip=False, widget=forms.Textarea(attrs={"rows": 4, "autocomplete": "off"}),
        help_text="A token (HTTPS) or an SSH private key. Write-only: stored encrypted, never shown again; "
                  "leave empty to keep the stored one.")
    remove_credential = forms.BooleanField(required=False, label="Remove the stored credential")

    class Meta:
        model = Repository
        fields = ["name", "url", "default_ref", "credential_kind", "credential_username"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Never rendered back: a bound form re-displaying the posted value would show it.
        self.fields["credential"].widget.render_value = False  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            repository_check(name=data.get("name") or "", url=data.get("url") or "", default_ref=data.get("default_ref") or "",
                             credential_kind=data.get("credential_kind") or "none", secret=data.get("credential") or "",
                             instance=self.instance)
        except RepositoryError as exc:
            field = exc.fields.get("field")
            self.add_error(field if field in self.fields else None, exc.message)
        return data

    def save(self, commit: bool = True) -> Any:
        repository = super().save(commit=False)
        secret = self.cleaned_data.get("credential") or ""
        if self.cleaned_data.get("remove_credential"):
            repository_set_credential(repository, "")
        elif secret:
            repository_set_credential(repository, secret)
        if commit:
            repository.save()
        return repository


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    form = RepositoryForm
    list_display = ["name", "url", "default_ref", "credential_kind", "has_credential", "created_at"]
    search_fields = ["name", "url"]
    readonly_fields = ["has_credential", "created_by", "created_at", "updated_at"]

    @admin.display(boolean=True, description="credential stored")
    def has_credential(self, obj: Repository) -> bool:
        return obj.has_credential

    def save_model(self, request: Any, obj: Repository, form: Any, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "action", "branch", "commit", "status", "requested_by", "created_at", "finished_at"]
    list_filter = ["status"]

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False
