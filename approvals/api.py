"""Approvals, grants and policies over the API."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics, permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals import policy as core
from approvals.models import Approval, Grant, Policy
from approvals.selectors import approvals_pending, grants_active
from approvals.services import ApprovalError, approval_answer, approval_decide, grant_revoke
from integrations.idempotency import IDEMPOTENCY_PARAMETER, IdempotentMixin, idempotent
from integrations.models import Scope
from integrations.tokens import TokenScope
from project.api import ApiError, StrictCharField, StrictSerializer, query_int
from runs.models import AgentSession


class ApprovalOutput(serializers.ModelSerializer):
    run = serializers.IntegerField(source="run_id")
    step = serializers.IntegerField(source="step.seq", default=None, allow_null=True)
    decided_by = serializers.CharField(source="decided_by.username", default=None, allow_null=True)

    class Meta:
        model = Approval
        fields = [
            "id", "run", "step", "kind", "subtype", "status", "capability", "presentation", "request", "hash",
            "suggested_grant", "suggested_grant_label", "reason", "answers", "plan_mode", "scope",
            "decided_by", "decided_via", "decided_at", "deadline", "attempt", "created_at",
        ]


class GrantOutput(serializers.ModelSerializer):
    session = serializers.IntegerField(source="session_id")
    created_by = serializers.CharField(source="created_by.username", default=None, allow_null=True)

    class Meta:
        model = Grant
        fields = ["id", "session", "rule", "label", "approval", "created_by", "created_at", "revoked_at"]


class CanDecide(permissions.BasePermission):
    message = "You may not decide approvals."

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.has_perm("approvals.change_approval"))


class ApprovalListApi(generics.ListAPIView):
    serializer_class = ApprovalOutput

    @extend_schema(
        parameters=[
            OpenApiParameter("status", str, enum=Approval.Status.values),
            OpenApiParameter("run", int, description="Only this run's approvals."),
        ]
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> Any:
        approvals = Approval.objects.select_related("step", "decided_by").order_by("created_at", "id")
        status = self.request.query_params.get("status")
        if status and status not in Approval.Status.values:
            raise serializers.ValidationError({"status": [f"Unknown status {status!r}."]})
        run = query_int(self.request, "run")
        if status == Approval.Status.PENDING:
            # The inbox's selector: the same rows, oldest first as this list always was.
            return approvals_pending(run_id=run, sort="oldest")
        if status:
            approvals = approvals.filter(status=status)
        if run is not None:
            approvals = approvals.filter(run_id=run)
        return approvals


class ApprovalDetailApi(APIView):
    @extend_schema(responses=ApprovalOutput)
    def get(self, request: Request, approval_id: int) -> Response:
        approval = Approval.objects.select_related("step", "decided_by").filter(pk=approval_id).first()
        if approval is None:
            raise ApprovalError("unavailable", f"No approval {approval_id}.")
        return Response(ApprovalOutput(approval).data)


# A decision names the request it decides: the approval's hash, as shown (issue 12).
def hash_field() -> StrictCharField:
    return StrictCharField(max_length=64, help_text="The approval's `hash`: the request you decide is the one you showed.")


def require_hash(request: Request, approval_id: int) -> None:
    """400 hash_required (for an approval that exists): a client never decides a request it
    did not show."""
    data = request.data
    if not isinstance(data, dict) or data.get("hash") in (None, ""):
        # (with a hash, the service answers "unavailable" for a missing approval itself)
        if not Approval.objects.filter(pk=approval_id).exists():
            raise ApprovalError("unavailable", f"No approval {approval_id}.")
        raise ApiError(
            "hash_required", "Send the approval's hash with every decision (GET the approval to read it).", field="hash"
        )


class ApprovalApproveApi(IdempotentMixin, APIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanDecide]
    scopes = {"POST": Scope.APPROVALS_DECIDE}

    class ApprovalApproveInput(StrictSerializer):
        hash = hash_field()
        scope = serializers.ChoiceField(choices=["once", "session"], required=False, default="once")
        mode = serializers.ChoiceField(choices=["default", "accept-edits"], required=False, default="")

    @extend_schema(request=ApprovalApproveInput, responses=ApprovalOutput, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request, approval_id: int) -> Response:
        require_hash(request, approval_id)
        data = self.ApprovalApproveInput(data=request.data)
        data.is_valid(raise_exception=True)
        approval = approval_decide(approval_id=approval_id, user=request.user, approve=True, via="api", **data.validated_data)
        return Response(ApprovalOutput(approval).data)


class ApprovalDenyApi(IdempotentMixin, APIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanDecide]
    scopes = {"POST": Scope.APPROVALS_DECIDE}

    class ApprovalDenyInput(StrictSerializer):
        hash = hash_field()
        reason = StrictCharField(required=False, allow_blank=True, default="", max_length=2000)

    @extend_schema(request=ApprovalDenyInput, responses=ApprovalOutput, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request, approval_id: int) -> Response:
        require_hash(request, approval_id)
        data = self.ApprovalDenyInput(data=request.data)
        data.is_valid(raise_exception=True)
        approval = approval_decide(approval_id=approval_id, user=request.user, approve=False, via="api", **data.validated_data)
        return Response(ApprovalOutput(approval).data)


class ApprovalAnswerApi(IdempotentMixin, APIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanDecide]
    scopes = {"POST": Scope.APPROVALS_DECIDE}

    class ApprovalAnswerInput(StrictSerializer):
        hash = hash_field()
        answers = serializers.DictField(required=False, default=dict)
        decline = serializers.BooleanField(required=False, default=False)

    @extend_schema(request=ApprovalAnswerInput, responses=ApprovalOutput, parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request, approval_id: int) -> Response:
        require_hash(request, approval_id)
        data = self.ApprovalAnswerInput(data=request.data)
        data.is_valid(raise_exception=True)
        approval = approval_answer(approval_id=approval_id, user=request.user, via="api", **data.validated_data)
        return Response(ApprovalOutput(approval).data)


class SessionGrantsApi(APIView):
    @extend_schema(responses=GrantOutput(many=True))
    def get(self, request: Request, session_id: int) -> Response:
        session = get_object_or_404(AgentSession, pk=session_id)
        return Response(GrantOutput(grants_active(session_id=session.pk), many=True).data)


class GrantDetailApi(APIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanDecide]
    scopes = {"DELETE": Scope.APPROVALS_DECIDE}

    @extend_schema(responses={200: GrantOutput})
    def delete(self, request: Request, grant_id: int) -> Response:
        grant = get_object_or_404(Grant, pk=grant_id)
        return Response(GrantOutput(grant_revoke(grant=grant, user=request.user)).data)


class PolicyEvaluateApi(APIView):
    # Evaluating changes nothing: a read.
    scopes = {"POST": Scope.READ}

    class PolicyEvaluateInput(StrictSerializer):
        request = serializers.JSONField()
        grants = serializers.ListField(child=serializers.JSONField(), required=False, default=list)
        # Where the paths of the request are anchored (default: the request's cwd).
        workspace = StrictCharField(required=False, allow_blank=False, trim_whitespace=False, max_length=4096)

    @extend_schema(request=PolicyEvaluateInput, responses=dict)
    def post(self, request: Request, policy_id: int) -> Response:
        from approvals.gate.paths import offline_path_context

        policy = get_object_or_404(Policy, pk=policy_id)
        data = self.PolicyEvaluateInput(data=request.data)
        data.is_valid(raise_exception=True)
        tool_request = core.validate_request(data.validated_data["request"])
        grants = [core.validate_grant(g) for g in data.validated_data["grants"]]
        workspace = data.validated_data.get("workspace") or tool_request.get("cwd")
        if workspace is not None and (not workspace.startswith("/") or "\x00" in workspace):
            raise core.PolicyError("invalid_request", "`workspace` must be an absolute path", field="workspace",
                                   value=workspace)
        paths = offline_path_context(workspace) if workspace else None
        verdict = core.evaluate(core.compile_policy(policy.document), tool_request, grants=grants, paths=paths)
        return Response(verdict.to_dict())
