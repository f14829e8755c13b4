"""Runs over the API: each endpoint validates input, calls one service, serializes output."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.access import activities_visible, runs_visible, sessions_visible
from approvals.policy import run_policy
from approvals.policy.classnames import CLASSES
from approvals.policy.questions import FORMATS, VALUE_TYPES
from drivers import registry
from drivers.acp import agents as acp_agents
from drivers.base import OptionsError
from drivers.scripted import MAX_STEPS
from integrations.idempotency import IDEMPOTENCY_PARAMETER, IdempotentMixin, idempotent
from integrations.models import Scope
from integrations.tokens import TokenScope
from project.api import StrictCharField, StrictSerializer, query_int
from runs.errors import RunError
from runs.models import Activity, AgentSession, InteractionMode, Run, RuntimeMode
from runs.services import run_cancel, run_create, session_set_modes


class RunOutput(serializers.ModelSerializer):
    session = serializers.IntegerField(source="session_id")
    policy = serializers.CharField(source="policy.name", default=None, allow_null=True)
    repository = serializers.CharField(source="repository.name", default=None, allow_null=True)

    class Meta:
        model = Run
        fields = [
            "id", "session", "driver", "prompt", "scenario", "options", "workspace", "repository", "ref", "branch", "base_commit",
            "policy", "policy_version", "run_policy",
            "status", "failure_reason", "failure_detail", "result_text", "usage", "cancel_requested",
            "created_at", "started_at", "finished_at",
        ]


class ActivityOutput(serializers.ModelSerializer):
    # A string, not the schema's closed enum of `runs.events.Event`: the timeline's vocabulary
    # grows, and a client generated from the schema should not reject a newer event.
    event = serializers.CharField(max_length=64)

    class Meta:
        model = Activity
        fields = ["seq", "kind", "event", "payload", "created_at"]


class CanCreateRuns(permissions.BasePermission):
    message = "You may not start runs."

    def has_permission(self, request: Request, view: Any) -> bool:
        return request.method != "POST" or bool(request.user and request.user.has_perm("runs.add_run"))


@extend_schema_field({"type": "string", "enum": [n for n in registry.names() if n not in registry.external_names()],
                      "description": "A driver from GET /api/v1/drivers/ (not an external one: its agent starts those runs)."})
class DriverNameField(StrictCharField):
    pass


# --- OpenAPI: what POST /runs/ validates (run_create: drivers.registry.validate_options,
# drivers.scripted.validate_scenario, approvals.policy.parse_run_policy), built when the
# schema is, so it follows the registry and the configured ACP agents. ------------------


def _nullable_choice(values: tuple[str, ...] | list[str], description: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "enum": [*values, None], "nullable": True}
    if description:
        schema["description"] = description
    return schema


def run_policy_schema() -> dict[str, Any]:
    """A run policy as `parse_run_policy` reads it: known fields only, each an enum or a bound."""
    approvals = {
        "type": "object",
        "nullable": True,
        "additionalProperties": False,
        "properties": {
            "permission": _nullable_choice(run_policy.ROUTING),
            "plan_review": _nullable_choice(run_policy.ROUTING),
            "question": _nullable_choice(run_policy.QUESTION_ROUTING),
            "timeout_s": {
                "type": "number", "nullable": True, "maximum": run_policy.MAX_TIMEOUT_S, "not": {"enum": [0]},
                "description": "Seconds a reviewer has; negative: no deadline; never 0.",
            },
            "on_timeout": _nullable_choice(run_policy.FALLBACK),
            "on_reject": _nullable_choice(run_policy.FALLBACK),
            "max_retries": {"type": "integer", "nullable": True, "minimum": 0, "maximum": run_policy.MAX_RETRIES},
            "confirm": {
                "type": "object",
                "nullable": True,
                "additionalProperties": False,
                "properties": {name: {"type": "string", "enum": list(run_policy.CONFIRM)} for name in CLASSES},
                "description": "What approving a request of this side-effect class takes beyond Approve.",
            },
        },
    }
    return {
        "type": "object",
        "nullable": True,
        "additionalProperties": False,
        "description": "The run policy (null: inherit). A preset stands for a whole document; fields beside it replace its.",
        "properties": {
            "preset": {"type": "string", "enum": list(run_policy.PRESETS)},
            "sandbox": _nullable_choice(run_policy.SANDBOX),
            "web_search": _nullable_choice(run_policy.FEATURE),
            "browser": _nullable_choice(run_policy.FEATURE),
            "approvals": approvals,
        },
        "example": {"sandbox": "workspace-write", "approvals": {"permission": "ask", "timeout_s": 600}},
    }


_TEXT = {"type": "string"}
_NON_EMPTY = {"type": "string", "minLength": 1}
# The scripted tools whose inputs the scenario checks (drivers.scripted._validate_tool_input).
_SCRIPTED_INPUTS = {
    "bash": ("command",),
    "write": ("file_path", "content"),
    "edit": ("file_path", "old_string", "new_string"),
    "read": ("file_path",),
}


def _question_schema() -> dict[str, Any]:
    """One question as approvals.policy.validate_questions reads it."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "question"],
        "properties": {
            "id": _NON_EMPTY,
            "header": _TEXT,
            "question": _NON_EMPTY,
            "options": {
                "type": "array",
                "items": {"type": "object", "additionalProperties": False, "required": ["label"],
                          "properties": {"label": _NON_EMPTY, "description": _TEXT}},
            },
            "multi_select": {"type": "boolean"},
            "allow_other": {"type": "boolean"},
            "secret": {"type": "boolean"},
            "required": {"type": "boolean"},
            "value_type": {"type": "string", "enum": list(VALUE_TYPES)},
            "minimum": {"type": "number"},
            "maximum": {"type": "number"},
            "min_length": {"type": "integer", "minimum": 0},
            "max_length": {"type": "integer", "minimum": 0},
            "format": {"type": "string", "enum": list(FORMATS)},
        },
    }


def scenario_schema() -> dict[str, Any]:
    """The scripted driver's scenario (drivers.scripted.validate_scenario): one kind per step."""
    tool_steps = [
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["tool", "input"],
            "properties": {
                "tool": {"type": "string", "enum": [tool]},
                "input": {"type": "object", "required": list(keys), "properties": {k: _TEXT for k in keys}},
            },
        }
        for tool, keys in _SCRIPTED_INPUTS.items()
    ]
    tool_steps.append({
        "type": "object",
        "additionalProperties": False,
        "required": ["tool"],
        "properties": {
            "tool": {"type": "string", "minLength": 1, "not": {"enum": list(_SCRIPTED_INPUTS)},
                     "description": "Any other tool: asked, not executed."},
            "input": {"type": "object"},
        },
    })

    def only(key: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": [key], "properties": {key: schema}}

    steps = [
        *tool_steps,
        only("message", _TEXT),
        only("plan", _TEXT),
        only("question", {"type": "object", "required": ["questions"],
                          "properties": {"questions": {"type": "array", "minItems": 1, "items": _question_schema()}}}),
        only("elicitation", {"type": "object", "additionalProperties": False,
                             "properties": {"server": _TEXT, "message": _TEXT, "schema": {"type": "object"}},
                             "description": "An MCP server's form: its JSON schema (flat, of the supported kinds)."}),
    ]
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["steps"],
        "properties": {"steps": {"type": "array", "minItems": 1, "maxItems": MAX_STEPS, "items": {"oneOf": steps}}},
        "example": {"steps": [{"tool": "bash", "input": {"command": "echo hello > hello.txt"}}, {"message": "Done."}]},
    }


def _driver_options_schema(driver: str) -> dict[str, Any]:
    """What `options` a driver takes: the acp driver an `agent` it has configured; the
    others none (an empty object, or null)."""
    if driver != "acp":
        return {"type": "object", "nullable": True, "maxProperties": 0, "description": f"The {driver} driver takes no options."}

    try:
        agents = sorted(acp_agents.configured_agents(registry.driver_settings("acp")))
    except OptionsError:  # a misconfigured agent: the run is refused naming it; document the name alone
        agents = []
    agent: dict[str, Any] = {"type": "string", "description": "An ACP agent the server configured (default: claude-code-acp)."}
    if agents:
        agent["enum"] = agents
    return {"type": "object", "nullable": True, "additionalProperties": False, "properties": {"agent": agent},
            "example": {"agent": "opencode"}}




@extend_schema_field(run_policy_schema())
class RunPolicyField(serializers.DictField):
    """A run policy (validated by run_create / session_set_modes; documented here)."""


class RunListApi(IdempotentMixin, generics.ListAPIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanCreateRuns]
    scopes = {"POST": Scope.RUNS_WRITE}
    serializer_class = RunOutput

    class RunListInput(StrictSerializer):
        # Documented as validated: `driver` one of the registry's (the run_create service
        # names it), `scenario` and `run_policy` objects, `session` an id.
        driver = DriverNameField(max_length=64)
        prompt = StrictCharField(required=False, allow_blank=True, default="")
        scenario = serializers.DictField(required=False, default=None, allow_null=True, help_text="scripted only: {\"steps\": [...]}")
        options = serializers.DictField(required=False, default=None, allow_null=True, help_text="driver options, e.g. {\"agent\": \"opencode\"} for acp")
        workspace = StrictCharField(required=False, allow_blank=True, default="", max_length=1024)
        repository = StrictCharField(required=False, allow_blank=True, default="", max_length=100,
                                     help_text="a registered repository's name, instead of workspace")
        ref = StrictCharField(required=False, allow_blank=True, default="", max_length=200,
                              help_text="with repository: the branch, tag or commit to start from (default: its default ref)")
        run_policy = RunPolicyField(required=False, default=None, allow_null=True)
        policy = StrictCharField(required=False, allow_blank=True, default="", max_length=100)
        session = serializers.IntegerField(required=False, default=None, allow_null=True, min_value=1, max_value=2**63 - 1)

    @extend_schema(parameters=[OpenApiParameter("status", str, enum=Run.Status.values)])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> Any:
        runs = runs_visible(self.request.user, Run.objects.select_related("policy", "repository")).order_by("-created_at", "-id")
        status_filter = self.request.query_params.get("status")
        if status_filter:
            if status_filter not in Run.Status.values:
                raise serializers.ValidationError({"status": [f"Unknown status {status_filter!r}."]})
            runs = runs.filter(status=status_filter)
        return runs

    @extend_schema(request=RunListInput, responses={201: RunOutput}, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request) -> Response:
        data = self.RunListInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        if values["driver"] in registry.external_names():
            raise RunError(
                "invalid_driver", f"{values['driver']} runs are started by the agent's own hook, not by the API (README, Integrations).",
                field="driver",
            )
        session = None
        if values["session"] is not None:
            session = sessions_visible(request.user).filter(pk=values["session"]).first()
            if session is None:
                raise serializers.ValidationError({"session": [f"No session {values['session']}."]})
        run = run_create(
            driver=values["driver"],
            prompt=values["prompt"],
            scenario=values["scenario"],
            options=values["options"],
            workspace=values["workspace"],
            repository=values["repository"],
            ref=values["ref"],
            run_policy=values["run_policy"],
            policy_name=values["policy"],
            session=session,
            user=request.user,
        )
        return Response(RunOutput(run).data, status=status.HTTP_201_CREATED)


def _component_name(driver: str) -> str:
    return "".join(part.capitalize() for part in driver.split("-")) + "RunInput"


class RunInputSchema(OpenApiSerializerExtension):
    """POST /runs/: one shape per driver (`driver` says which). The scripted driver needs a
    `scenario`, the others take none; `options` are the driver's own."""

    target_class = RunListApi.RunListInput
    priority = 1  # before project.api's StrictSerializer extension

    def map_serializer(self, auto_schema: Any, direction: Any) -> Any:
        base = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        mapping = {}
        for driver in registry.names():
            if driver in registry.external_names():
                continue
            properties = {k: dict(v) for k, v in base["properties"].items() if k != "scenario"}
            properties["driver"] = {"type": "string", "enum": [driver], "description": registry.descriptor(driver).title}
            properties["options"] = _driver_options_schema(driver)
            properties["run_policy"] = run_policy_schema()
            required = ["driver"]
            if driver == "scripted":
                properties["scenario"] = scenario_schema()
                required.append("scenario")
            schema = {"type": "object", "additionalProperties": False, "properties": properties, "required": required}
            component = ResolvedComponent(name=_component_name(driver), type=ResolvedComponent.SCHEMA,
                                          object=f"run-input-{driver}", schema=schema)
            auto_schema.registry.register_on_missing(component)
            mapping[driver] = component.ref["$ref"]
        return {
            "required": ["driver"],  # (and so the request body is required)
            "oneOf": [{"$ref": ref} for ref in mapping.values()],
            "discriminator": {"propertyName": "driver", "mapping": mapping},
            "description": "One shape per driver of GET /api/v1/drivers/ (not an external one: its agent starts those runs).",
        }


class RunDetailApi(APIView):
    @extend_schema(responses=RunOutput)
    def get(self, request: Request, run_id: int) -> Response:
        return Response(RunOutput(get_object_or_404(runs_visible(request.user, Run.objects.select_related("policy", "repository")), pk=run_id)).data)


class RunCancelApi(IdempotentMixin, APIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope]
    scopes = {"POST": Scope.RUNS_WRITE}

    @extend_schema(request=None, responses=RunOutput, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(runs_visible(request.user), pk=run_id)
        return Response(RunOutput(run_cancel(run=run, user=request.user)).data)


class RunActivitiesApi(generics.ListAPIView):
    serializer_class = ActivityOutput

    @extend_schema(parameters=[OpenApiParameter("after", int, description="Only activities with a larger seq.")])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> Any:
        run = get_object_or_404(runs_visible(self.request.user), pk=self.kwargs["run_id"])
        after = query_int(self.request, "after", 0)
        return activities_visible(self.request.user, run).filter(seq__gt=after).order_by("seq")


class SessionOutput(serializers.ModelSerializer):
    class Meta:
        model = AgentSession
        fields = ["id", "title", "runtime_mode", "interaction_mode", "run_policy", "created_at"]


class SessionListApi(generics.ListAPIView):
    """Sessions, newest first (a hook session's title names the agent's session)."""

    serializer_class = SessionOutput

    def get_queryset(self) -> Any:
        return sessions_visible(self.request.user).order_by("-created_at", "-id")


class SessionDetailApi(APIView):
    scopes = {"PATCH": Scope.RUNS_WRITE}

    class SessionDetailInput(StrictSerializer):
        runtime_mode = serializers.ChoiceField(choices=RuntimeMode.values, required=False, default=None)
        interaction_mode = serializers.ChoiceField(choices=InteractionMode.values, required=False, default=None)
        run_policy = RunPolicyField(
            required=False, allow_null=True,
            help_text="The session's run policy (null: inherit); same validation and ceiling as a run's.")

    @extend_schema(responses=SessionOutput)
    def get(self, request: Request, session_id: int) -> Response:
        return Response(SessionOutput(get_object_or_404(sessions_visible(request.user), pk=session_id)).data)

    @extend_schema(request=SessionDetailInput, responses=SessionOutput)
    def patch(self, request: Request, session_id: int) -> Response:
        session = get_object_or_404(sessions_visible(request.user), pk=session_id)
        data = self.SessionDetailInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(SessionOutput(session_set_modes(session=session, user=request.user, **data.validated_data)).data)
