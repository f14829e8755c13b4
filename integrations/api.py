"""Integration endpoints: webhooks, and discovery (drivers)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import generics, permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from drivers import registry
from integrations.idempotency import IDEMPOTENCY_PARAMETER, IdempotentMixin, idempotent
from integrations.models import Scope, WebhookDelivery, WebhookEndpoint
from integrations.tokens import TokenScope
from integrations.webhooks.signing import MIN_CUSTOM_SECRET_LENGTH, custom_secret_problem, new_secret
from integrations.webhooks.targets import TargetRefused, check_url, resolve
from project.api import ApiError, StrictCharField, StrictSerializer

# --- drivers ------------------------------------------------------------------------------------


class DriverOutput(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    external = serializers.BooleanField(help_text="Its agent runs elsewhere and calls Gatehouse (no worker runs it).")
    sandbox = serializers.ListField(child=serializers.CharField())
    web_search = serializers.ListField(child=serializers.CharField())
    browser = serializers.ListField(child=serializers.CharField())
    approval_modes = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))
    retry = serializers.BooleanField()
    edits = serializers.ListField(
        child=serializers.CharField(),
        help_text="The tools whose requests a reviewer may edit before approving (edit before approve); empty: none.")
    structured_output = serializers.BooleanField()
    sees = serializers.ListField(child=serializers.CharField())
    cannot_see = serializers.ListField(child=serializers.CharField())


def driver_dict(name: str) -> dict[str, Any]:
    d = registry.descriptor(name)
    return {
        "name": d.name,
        "title": d.title,
        "external": d.external,
        "sandbox": sorted(d.sandbox),
        "web_search": sorted(d.web_search),
        "browser": sorted(d.browser),
        "approval_modes": {kind: sorted(modes) for kind, modes in sorted(d.approval_modes.items())},
        "retry": d.retry,
        "edits": sorted(d.edits),
        "structured_output": d.structured_output,
        "sees": list(d.sees),
        "cannot_see": list(d.cannot_see),
    }


class DriverListApi(APIView):
    @extend_schema(responses=DriverOutput(many=True))
    def get(self, request: Request) -> Response:
        """Every driver's descriptor: what it models, and what it can and cannot see."""
        return Response([driver_dict(name) for name in registry.names()])


# --- webhooks -------------------------------------------------------------------------------------


class WebhookOutput(serializers.ModelSerializer):
    secret_prefix = serializers.CharField(
        read_only=True, allow_null=True, help_text="The first characters of a generated secret; null for a custom one."
    )

    class Meta:
        model = WebhookEndpoint
        fields = ["id", "url", "events", "active", "secret_generated", "secret_prefix", "created_at"]


class WebhookCreatedOutput(WebhookOutput):
    secret = serializers.CharField(
        allow_null=True, help_text="A generated secret, shown once: keep it to verify signatures. Null for a custom one."
    )

    class Meta(WebhookOutput.Meta):
        fields = [*WebhookOutput.Meta.fields, "secret"]


class WebhookDeliveryOutput(serializers.ModelSerializer):
    class Meta:
        model = WebhookDelivery
        fields = ["id", "event", "status", "attempts", "next_attempt_at", "last_error", "created_at", "delivered_at"]


class CanManageWebhooks(permissions.BasePermission):
    message = "Registering webhooks is for administrators (integrations.add_webhookendpoint)."

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.has_perm("integrations.add_webhookendpoint"))


def webhook_create(*, url: str, events: list[str], secret: str = "", user: Any = None) -> WebhookEndpoint:
    """Register an endpoint: a callable URL, known events, a custom secret long enough; a
    secret is made when none is given."""
    problem = custom_secret_problem(secret) if secret else None
    if problem:
        raise ApiError("invalid", f"secret: {problem}", field="secret")
    try:
        _, host, port = check_url(url)
        resolve(host, port)
    except TargetRefused as exc:
        raise ApiError("invalid_target", f"url: {exc}", field="url") from None
    known = WebhookEndpoint.Event.values
    unknown = [e for e in events if e not in known]
    if unknown or not events:
        raise ApiError("invalid", f"events: choose from {', '.join(known)}" + (f", not {unknown[0]!r}" if unknown else ""), field="events")
    with transaction.atomic():
        return WebhookEndpoint.objects.create(
            url=url, events=sorted(set(events), key=known.index), secret=secret or new_secret(), secret_generated=not secret,
            created_by=user,
        )


# What webhook_create checks beyond the serializer, said in the schema (the checks stay there).
@extend_schema_field({
    "type": "string",
    "pattern": r"^[Hh][Tt][Tt][Pp][Ss]?://[^/?#@]+([/?#][\s\S]*)?$",
    "description": "An http(s) URL without credentials, whose host resolves to public addresses only "
                   "(unless GATEHOUSE_WEBHOOK_ALLOW_PRIVATE); else 400 invalid_target.",
    "example": "https://hooks.example.com/gatehouse",
})
class WebhookUrlField(StrictCharField):
    pass


@extend_schema_field({
    "type": "array",
    "minItems": 1,
    "items": {"type": "string", "enum": list(WebhookEndpoint.Event.values)},
    "description": "The events to send (at least one; repeats are kept once).",
})
class WebhookEventsField(serializers.ListField):
    pass


@extend_schema_field({
    "type": "string",
    "oneOf": [{"maxLength": 0}, {"minLength": MIN_CUSTOM_SECRET_LENGTH}],
    "description": f"A custom signing secret (at least {MIN_CUSTOM_SECRET_LENGTH} characters, used as given), or "
                   "empty or left out: Gatehouse generates one and shows it once.",
})
class WebhookSecretField(StrictCharField):
    pass


class WebhookListApi(IdempotentMixin, generics.ListAPIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanManageWebhooks]
    scopes = {"GET": Scope.WEBHOOKS_MANAGE, "POST": Scope.WEBHOOKS_MANAGE}
    serializer_class = WebhookOutput
    queryset = WebhookEndpoint.objects.order_by("id")

    class WebhookInput(StrictSerializer):
        url = WebhookUrlField(max_length=2000)
        events = WebhookEventsField(child=serializers.ChoiceField(choices=WebhookEndpoint.Event.values), max_length=10)
        # Not trimmed: the key that signs is exactly the one its owner verifies with.
        secret = WebhookSecretField(required=False, allow_blank=True, default="", max_length=200, trim_whitespace=False)

    @extend_schema(request=WebhookInput, responses={201: WebhookCreatedOutput}, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request) -> Response:
        """Register an endpoint for `approval.requested`, `approval.resolved`, `run.finished`."""
        data = self.WebhookInput(data=request.data)
        data.is_valid(raise_exception=True)
        endpoint = webhook_create(**data.validated_data, user=request.user)
        body = {**WebhookOutput(endpoint).data, "secret": endpoint.secret if endpoint.secret_generated else None}
        return Response(body, status=status.HTTP_201_CREATED)


class WebhookDetailApi(APIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanManageWebhooks]
    scopes = {"GET": Scope.WEBHOOKS_MANAGE, "DELETE": Scope.WEBHOOKS_MANAGE}

    @extend_schema(responses=WebhookOutput)
    def get(self, request: Request, webhook_id: int) -> Response:
        return Response(WebhookOutput(get_object_or_404(WebhookEndpoint, pk=webhook_id)).data)

    @extend_schema(responses=WebhookOutput)
    def delete(self, request: Request, webhook_id: int) -> Response:
        """Stop sending to this endpoint (kept, inactive, with its delivery history)."""
        endpoint = get_object_or_404(WebhookEndpoint, pk=webhook_id)
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(active=False)
        endpoint.refresh_from_db()
        return Response(WebhookOutput(endpoint).data)


class WebhookDeliveriesApi(generics.ListAPIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanManageWebhooks]
    scopes = {"GET": Scope.WEBHOOKS_MANAGE}
    serializer_class = WebhookDeliveryOutput

    def get_queryset(self) -> Any:
        endpoint = get_object_or_404(WebhookEndpoint, pk=self.kwargs["webhook_id"])
        return WebhookDelivery.objects.filter(endpoint=endpoint).order_by("-id")
