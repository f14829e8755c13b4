"""Admin: tokens (created here, shown once), webhooks with every delivery attempt."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.authtoken.models import TokenProxy

from integrations.models import ALL_SCOPES, ApiToken, HookSession, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from integrations.tokens import TokenError, parse_scopes, token_create
from integrations.webhooks.signing import MIN_CUSTOM_SECRET_LENGTH, custom_secret_problem, new_secret
from integrations.webhooks.targets import TargetRefused, check_url, resolve
from runs.admin import ReadOnlyAdmin

# The first API's plain-text tokens are not created any more (the migration hashed them).
if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)


class ApiTokenForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(choices=[(s, s) for s in ALL_SCOPES], initial=list(ALL_SCOPES),
                                       widget=forms.CheckboxSelectMultiple)
    expires_in_days = forms.FloatField(required=False, min_value=0.001, max_value=3650, help_text="Empty: never expires.")

    class Meta:
        model = ApiToken
        fields = ["user", "name", "scopes"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "scopes", "created_at", "expires_at", "last_used_at", "revoked_at", "legacy"]
    list_filter = ["legacy"]
    search_fields = ["prefix", "name", "user__username"]
    actions = ["revoke"]

    def get_form(self, request: Any, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = ApiTokenForm
        return super().get_form(request, obj, change, **kwargs)

    def formfield_for_foreignkey(self, db_field: Any, request: Any, **kwargs: Any) -> Any:
        # A user mints tokens for themselves; only a superuser for others (issue 34).
        if db_field.name == "user" and not request.user.is_superuser:
            kwargs["queryset"] = get_user_model().objects.filter(pk=request.user.pk)
            kwargs["initial"] = request.user.pk
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_queryset(self, request: Any) -> Any:
        tokens = super().get_queryset(request)
        return tokens if request.user.is_superuser else tokens.filter(user=request.user)

    def get_readonly_fields(self, request: Any, obj: Any = None) -> Any:
        if obj is None:
            return []
        return ["user", "name", "prefix", "scopes", "created_at", "expires_at", "last_used_at", "revoked_at", "legacy"]

    def save_model(self, request: Any, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            return  # tokens are never edited; revoke and create a new one
        if form.cleaned_data["user"] != request.user and not request.user.is_superuser:
            messages.error(request, "You may create tokens only for yourself.")
            return
        try:
            scopes = parse_scopes(form.cleaned_data["scopes"])
            token, key = token_create(
                user=form.cleaned_data["user"], scopes=scopes, expires_in_days=form.cleaned_data.get("expires_in_days"),
                name=form.cleaned_data.get("name", ""),
            )
        except TokenError as exc:
            messages.error(request, exc.message)
            return
        obj.pk = token.pk
        obj.refresh_from_db()
        messages.warning(request, f"The new token (shown only now; only its hash is stored): {key}")

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: Any, queryset: Any) -> None:
        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        messages.info(request, f"Revoked {count} token(s).")


class WebhookEndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https")
    events = forms.MultipleChoiceField(choices=WebhookEndpoint.Event.choices, widget=forms.CheckboxSelectMultiple)
    # A password field that is never filled in again: a refused form does not show it back.
    secret = forms.CharField(
        required=False, strip=False, max_length=200, widget=forms.PasswordInput(render_value=False),
        help_text=f"Empty: one is generated (shown once after saving). Your own: at least {MIN_CUSTOM_SECRET_LENGTH} "
        "characters, never shown again.",
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["url", "events", "secret", "active"]

    def clean_secret(self) -> str:
        secret = str(self.cleaned_data.get("secret") or "")
        problem = custom_secret_problem(secret) if secret else None
        if problem:
            raise forms.ValidationError(problem[:1].upper() + problem[1:] + ".")
        return secret

    def clean_url(self) -> str:
        url = self.cleaned_data["url"]
        try:
            _, host, port = check_url(url)
            resolve(host, port)
        except TargetRefused as exc:
            raise forms.ValidationError(str(exc)) from None
        return str(url)


class WebhookDeliveryInline(admin.TabularInline):
    model = WebhookDelivery
    fields = readonly_fields = ("id", "event", "status", "attempts", "next_attempt_at", "last_error", "created_at")
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ["-id"]

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(admin.ModelAdmin):
    form = WebhookEndpointForm
    list_display = ["url", "events", "active", "signing_secret", "created_at"]
    readonly_fields = ["signing_secret"]
    inlines = [WebhookDeliveryInline]

    def get_fields(self, request: Any, obj: Any = None) -> Any:
        return ["url", "events", "active", "signing_secret"] if obj is not None else ["url", "events", "secret", "active"]

    @admin.display(description="signing secret")
    def signing_secret(self, obj: WebhookEndpoint) -> str:
        return f"{obj.secret_prefix}…" if obj.secret_prefix else "custom (never shown)"

    def save_model(self, request: Any, obj: WebhookEndpoint, form: Any, change: bool) -> None:
        created = not change
        if created:
            custom = form.cleaned_data.get("secret") or ""
            obj.secret = custom or new_secret()
            obj.secret_generated = not custom
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        if created and obj.secret_generated:
            messages.warning(request, f"The signing secret (shown only now): {obj.secret}")
        elif created:
            messages.info(request, "Your signing secret is stored; Gatehouse never shows it, not even in part.")


class WebhookAttemptInline(admin.TabularInline):
    model = WebhookAttempt
    fields = readonly_fields = ("number", "started_at", "status_code", "duration_ms", "error", "response_excerpt")
    extra = 0
    can_delete = False

    def has_add_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ["id", "endpoint", "event", "status", "attempts", "next_attempt_at", "created_at", "delivered_at"]
    list_filter = ["status", "event"]
    inlines = [WebhookAttemptInline]


@admin.register(HookSession)
class HookSessionAdmin(ReadOnlyAdmin):
    list_display = ["id", "agent", "external_id", "user", "session", "run", "created_at"]
