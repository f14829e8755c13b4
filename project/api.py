"""API plumbing shared by the apps: the strict JSON boundary and one error format.

Every refusal is `{"code": ..., "message": ..., "field"?: ..., ...}` with an HTTP status
that says what happened (400 bad input, 401 not authenticated, 403 not allowed, 404 unknown,
409 conflict, 410 expired, 422 idempotency key reused, 429 rate limited) — from the DRF
views (the exception handler below), from the plain async views (`json_error`), and for
any URL under /api/ that matches nothing (`api_not_found`, e.g. `/api/v1/runs/null,null/`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.csrf import csrf_failure as page
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.extensions import OpenApiSerializerExtension, OpenApiSerializerFieldExtension
from rest_framework import exceptions, serializers
from rest_framework.parsers import BaseParser
from rest_framework.response import Response

from approvals.policy import PolicyError, parse_json_strict
from infra.errors import DomainError


class StrictJSONParser(BaseParser):
    """JSON read by the policy core's boundary: one value, valid UTF-8, depth <= 256,
    no repeated key, no lone surrogate; anything else is a 400 naming the problem."""

    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        data = stream.read() if stream is not None else b""
        if not data:
            return {}
        try:
            return parse_json_strict(data)
        except PolicyError as exc:
            raise exceptions.ParseError(f"invalid JSON: {exc.message}") from None


MAX_ID = 2**63 - 1


def query_int(request: Any, name: str, default: int | None = None) -> int | None:
    """An integer query parameter (ASCII digits, within the database's range) or a 400."""
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) > MAX_ID:
        raise serializers.ValidationError({name: [f"Must be a non-negative integer, not {raw!r}."]})
    return int(raw)


class ApiError(Exception):
    """A refusal raised by an API view that has no domain error of its own (hash_required...)."""

    def __init__(self, code: str, message: str, status: int = 400, **fields: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.fields = fields


def json_error(code: str, message: str, status: int, **fields: Any) -> JsonResponse:
    """The error body for views outside DRF (async views, the 404 and 500 handlers)."""
    body = {"code": code, "message": message}
    body.update({k: v for k, v in fields.items() if v is not None})
    return JsonResponse(body, status=status)


@csrf_exempt
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """Any path under /api/ that names nothing (a malformed id such as `null,null`)."""
    return json_error("not_found", f"Nothing at {request.path} (check the path and the ids in it).", 404)


def api_server_error(request: HttpRequest) -> JsonResponse:
    return json_error("server_error", "The server failed to answer this request; it was logged.", 500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: the JSON shape under /api/ (a cookie-carrying client), the page elsewhere."""
    if request.path.startswith("/api/"):
        return json_error("csrf_failed", f"CSRF check failed ({reason}); API clients authenticate with a token.", 403)
    return page(request, reason=reason)


class ErrorOutput(serializers.Serializer):
    """Every refusal: a stable code, a sentence, and the field it concerns when there is one."""

    code = serializers.CharField()
    message = serializers.CharField()
    field = serializers.CharField(required=False)


def document_errors(result: dict[str, Any], generator: Any, request: Any, public: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing: every operation may answer with the error body."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = {
        "type": "object",
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "field": {"type": "string"}},
        "required": ["code", "message"],
    }
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    statuses = {
        "400": "Invalid input (the field is named).",
        "401": "Not authenticated (no token, an unknown, expired or revoked token).",
        "403": "Not allowed (permission, or insufficient_scope for this token).",
        "404": "Unknown, or no longer available.",
        "409": "Conflict: already decided, stale request, run already finished, or a decision this request does not "
        "allow (second_reviewer_required, grant_not_allowed, batch_not_allowed).",
        "410": "Expired.",
    }
    throttled = {
        "description": "Rate limited (GATEHOUSE_API_RATE per token): retry after Retry-After seconds.",
        "headers": {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}},
        **error,
    }
    reused = {"description": "idempotency_key_reused: this Idempotency-Key was used for another request.", **error}
    too_large = {
        "description": "body_too_large: the request body is larger than GATEHOUSE_MAX_BODY_BYTES (refused before it is read).",
        **error,
    }
    for path in result.get("paths", {}).values():
        for operation in path.values():
            responses = operation.setdefault("responses", {})
            for status, description in statuses.items():
                responses.setdefault(status, {"description": description, **error})
            responses.setdefault("429", throttled)
            if "requestBody" in operation:
                responses.setdefault("413", too_large)
            if any(p.get("in") == "header" and p.get("name") == "Idempotency-Key" for p in operation.get("parameters", [])):
                responses.setdefault("422", reused)
    return result


class StrictCharField(serializers.CharField):
    """A string, and only a string: DRF would otherwise turn 5 into "5"."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, naming them (a typo must not pass silently)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


def error_response(code: str, message: str, status: int, **fields: Any) -> Response:
    body = {"code": code, "message": message}
    body.update({k: v for k, v in fields.items() if v is not None})
    return Response(body, status=status)


def _first_field_error(detail: Any, prefix: str = "") -> tuple[str, str]:
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            name = key if key != "non_field_errors" else ""
            return _first_field_error(value, f"{prefix}.{name}" if prefix and name else (name or prefix))
    if isinstance(detail, list) and detail:
        if isinstance(detail[0], (Mapping, list)):
            for index, item in enumerate(detail):
                if item:
                    return _first_field_error(item, f"{prefix}[{index}]")
        return prefix, str(detail[0])
    return prefix, str(detail)


def exception_handler(exc: Exception, context: Any) -> Response | None:
    # rest_framework.views reads DEFAULT_PARSER_CLASSES (this module) when it is imported:
    # imported here, any import order works.
    from rest_framework.views import exception_handler as drf_exception_handler

    if isinstance(exc, ApiError | DomainError):
        return error_response(exc.code, exc.message, exc.status, **exc.fields)
    if isinstance(exc, PolicyError):
        return Response(exc.to_dict(), status=400)
    if isinstance(exc, exceptions.ValidationError):
        field, message = _first_field_error(exc.detail)
        body: dict[str, Any] = {"code": "invalid", "message": f"{field}: {message}" if field else message, "field": field or None}
        body["errors"] = exc.detail
        return Response({k: v for k, v in body.items() if v is not None}, status=400)
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(response.data, Mapping) and "detail" in response.data:
        detail = response.data["detail"]
        response.data = {"code": getattr(detail, "code", "error"), "message": str(detail)}
    return response


# --- OpenAPI: the schema says what the strict boundary refuses ------------------------------


class StrictSerializerSchema(OpenApiSerializerExtension):
    """A StrictSerializer refuses unknown fields: `additionalProperties: false`."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> Any:
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema


class StrictCharFieldSchema(OpenApiSerializerFieldExtension):
    """A StrictCharField refuses NUL characters (DRF's CharField does); one that may not be
    blank refuses "" (and, trimmed, whitespace only)."""

    target_class = StrictCharField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: Any) -> Any:
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        field = self.target
        if direction != "request":
            return schema
        if field.allow_blank:
            schema.setdefault("pattern", r"^[^\x00]*$")
        else:
            schema["minLength"] = max(1, field.min_length or 0)
            schema.setdefault("pattern", r"^[^\x00]*[^\s\x00][^\x00]*$" if field.trim_whitespace else r"^[^\x00]*$")
        return schema
