"""Repositories and a run's changes and delivery over the API (credentials never appear)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.access import runs_visible
from integrations.idempotency import IDEMPOTENCY_PARAMETER, IdempotentMixin, idempotent
from integrations.models import Scope
from integrations.tokens import TokenScope
from project.api import StrictCharField, StrictSerializer
from repos.errors import RepositoryError
from repos.git import scrub
from repos.models import Repository
from repos.services import MANAGE_PERMISSION, delivery_request, repository_create, run_changes, run_patch
from runs.models import Run


class RepositoryOutput(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()
    has_credential = serializers.BooleanField(read_only=True)

    class Meta:
        model = Repository
        fields = ["id", "name", "url", "default_ref", "credential_kind", "has_credential", "created_at"]

    def get_url(self, obj: Repository) -> str:
        return scrub(obj.url)


class ManagesRepositories(permissions.BasePermission):
    message = "You may not manage repositories (repos.add_repository, repos.view_repository)."

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        wanted = MANAGE_PERMISSION if request.method == "POST" else "repos.view_repository"
        return bool(user and user.has_perm(wanted))


class RepositoryListApi(IdempotentMixin, generics.ListAPIView):
    """Registered repositories; registering one (credentials only in the admin, write-only)."""

    permission_classes = [permissions.IsAuthenticated, TokenScope, ManagesRepositories]
    scopes = {"POST": Scope.RUNS_WRITE}
    serializer_class = RepositoryOutput
    queryset = Repository.objects.order_by("name")

    class RepositoryInput(StrictSerializer):
        name = StrictCharField(max_length=100)
        url = StrictCharField(max_length=1024)
        default_ref = StrictCharField(required=False, default="main", max_length=200)

    @extend_schema(request=RepositoryInput, responses={201: RepositoryOutput}, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request) -> Response:
        data = self.RepositoryInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        repository = repository_create(name=values["name"], url=values["url"], default_ref=values["default_ref"],
                                       user=request.user)
        return Response(RepositoryOutput(repository).data, status=status.HTTP_201_CREATED)


class ChangedFileOutput(serializers.Serializer):
    path = serializers.CharField()
    old_path = serializers.CharField()
    status = serializers.CharField()
    additions = serializers.IntegerField(allow_null=True)
    deletions = serializers.IntegerField(allow_null=True)
    binary = serializers.BooleanField()


class ChangesOutput(serializers.Serializer):
    base = serializers.CharField()
    files = ChangedFileOutput(many=True)
    diff = serializers.CharField()
    truncated = serializers.BooleanField()


def _run(request: Request, run_id: int) -> Run:
    return get_object_or_404(runs_visible(request.user, Run.objects.select_related("repository")), pk=run_id)


class RunChangesApi(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=["json", "patch"],
                                     description="patch: the workspace's state as one commit, a `git format-patch` mbox")],
        responses={200: ChangesOutput},
    )
    def get(self, request: Request, run_id: int) -> Any:
        run = _run(request, run_id)
        wanted = request.query_params.get("format", "json")
        if wanted not in ("json", "patch"):
            raise serializers.ValidationError({"format": [f"format must be 'json' or 'patch', not {wanted!r}."]})
        if wanted == "patch":
            patch = run_patch(run)
            response = HttpResponse(patch, content_type="application/mbox; charset=utf-8")
            response["Content-Disposition"] = f'attachment; filename="gatehouse-run-{run.pk}.patch"'
            return response
        changes = run_changes(run)
        return Response(ChangesOutput({"base": changes.base, "files": changes.files, "diff": changes.diff,
                                       "truncated": changes.truncated}).data)

    # DRF's `?format=` picks a renderer; this endpoint reads it itself.
    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        return super().perform_content_negotiation(request, force=True)


class DeliveryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    run = serializers.IntegerField(source="run_id")
    approval = serializers.IntegerField(source="approval_id")
    action = serializers.CharField()
    branch = serializers.CharField()
    commit = serializers.CharField()
    status = serializers.CharField()


class RunDeliverApi(IdempotentMixin, APIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope]
    scopes = {"POST": Scope.RUNS_WRITE}

    class DeliverInput(StrictSerializer):
        action = serializers.ChoiceField(choices=["push"])

    @extend_schema(request=DeliverInput, responses={201: DeliveryOutput}, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request, run_id: int) -> Response:
        run = _run(request, run_id)
        if run.created_by_id != request.user.pk and not request.user.has_perm("runs.change_run"):
            raise RepositoryError("forbidden", "Only the run's starter (or someone who may change runs) asks to deliver it.")
        data = self.DeliverInput(data=request.data)
        data.is_valid(raise_exception=True)
        delivery = delivery_request(run=run, user=request.user, action=data.validated_data["action"])
        return Response(DeliveryOutput(delivery).data, status=status.HTTP_201_CREATED)
