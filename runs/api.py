"""Runs over the API: each endpoint validates input, calls one service, serializes output."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.access import activities_visible, runs_visible, sessions_visible
from drivers import registry
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
        run_policy = serializers.DictField(required=False, default=None, allow_null=True)
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
        run_policy = serializers.DictField(
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
