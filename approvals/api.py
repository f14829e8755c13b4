"""Approvals, grants and policies over the API."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, time, timedelta
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db.models import Max
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, permissions, serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals import insights
from approvals import policy as core
from approvals.access import approvals_visible, policies_visible, sessions_visible
from approvals.audit import EXPORT_FORMATS, OUTCOMES, ExportFilter, decisions_for_export, export_csv, export_jsonl
from approvals.errors import HASH_REQUIRED, ApprovalError
from approvals.gate.edits import approval_editable
from approvals.gate.paths import offline_path_context
from approvals.models import Approval, Grant, Policy, PolicyVersion
from approvals.policy import EDITABLE_KEYS
from approvals.policy.classes import EDIT_TOOLS
from approvals.policy.edits import MAX_EDITED_CHARS
from approvals.policy.request import NETWORK_TOOL
from approvals.policy_replay import policy_dry_run
from approvals.policy_versions import PolicyInvalid, document_problems
from approvals.policy_warnings import policy_warnings
from approvals.selectors import approvals_pending, grants_active
from approvals.services import approval_answer, approval_decide, grant_revoke
from integrations.idempotency import IDEMPOTENCY_PARAMETER, IdempotentMixin, idempotent
from integrations.models import Scope
from integrations.tokens import TokenScope
from project.api import ApiError, StrictCharField, StrictSerializer, query_int


class ApprovalOutput(serializers.ModelSerializer):
    run = serializers.IntegerField(source="run_id")
    step = serializers.IntegerField(source="step.seq", default=None, allow_null=True)
    tool_call_id = serializers.CharField(source="step.tool_call_id", default="",
                                         help_text="The agent's own id of the tool call (empty when it gave none).")
    decided_by = serializers.CharField(source="decided_by.username", default=None, allow_null=True)
    confirmation = serializers.CharField(
        read_only=True, help_text='What approving takes beyond Approve: "" nothing, "typed" (send `confirmation`: '
        "`confirmation_word`), \"second-reviewer\" (two different people approve).")
    confirmation_word = serializers.CharField(read_only=True, help_text="The word a typed confirmation asks for.")
    approvals_given = serializers.IntegerField(read_only=True, help_text="People who approved so far.")
    approvals_required = serializers.IntegerField(read_only=True, help_text="People who must approve (2 for a second reviewer).")
    input = serializers.DictField(source="request.input", read_only=True, default=dict,
                                  help_text="The tool's input as the agent asked it (`request.input`).")
    edited_input = serializers.DictField(
        read_only=True, allow_null=True,
        help_text="The input the reviewer approved instead (edit before approve); null when approved as asked.")
    edits_offered = serializers.SerializerMethodField(
        help_text="Whether this request can be edited before it is approved (its driver can carry the edited input).")

    class Meta:
        model = Approval
        fields = [
            "id", "run", "step", "tool_call_id", "kind", "subtype", "status", "capability", "presentation", "request", "hash",
            "suggested_grant", "suggested_grant_label", "reason", "answers", "plan_mode", "scope",
            "decided_by", "decided_via", "decided_at", "deadline", "attempt", "created_at", "grant",
            "confirmation", "confirmation_word", "approvals_given", "approvals_required",
            "input", "edited_input", "edits_offered",
        ]

    def get_edits_offered(self, approval: Approval) -> bool:
        return approval_editable(approval)


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
            OpenApiParameter("tool_call_id", str, description="Only the approvals of this tool call of the agent."),
        ]
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self) -> Any:
        user = self.request.user
        approvals = approvals_visible(user, Approval.objects.select_related("step", "decided_by")).order_by("created_at", "id")
        status = self.request.query_params.get("status")
        if status and status not in Approval.Status.values:
            raise serializers.ValidationError({"status": [f"Unknown status {status!r}."]})
        run = query_int(self.request, "run")
        tool_call_id = self.request.query_params.get("tool_call_id")
        if status == Approval.Status.PENDING:
            # The inbox's selector: the same rows, oldest first as this list always was.
            pending = approvals_visible(user, approvals_pending(run_id=run, sort="oldest"))
            return pending.filter(step__tool_call_id=tool_call_id) if tool_call_id else pending
        if tool_call_id:
            approvals = approvals.filter(step__tool_call_id=tool_call_id)
        if status:
            approvals = approvals.filter(status=status)
        if run is not None:
            approvals = approvals.filter(run_id=run)
        return approvals


class ApprovalDetailApi(APIView):
    @extend_schema(responses=ApprovalOutput)
    def get(self, request: Request, approval_id: int) -> Response:
        approval = approvals_visible(request.user, Approval.objects.select_related("step", "decided_by")).filter(pk=approval_id).first()
        if approval is None:
            raise ApprovalError("unavailable", f"No approval {approval_id}.")
        return Response(ApprovalOutput(approval).data)


# --- OpenAPI: what a decision and a policy evaluation validate ------------------------------

_NO_NUL_PATH = {"type": "string", "minLength": 1, "pattern": r"^[^\x00]*[^\s\x00][^\x00]*$"}
_ABSOLUTE = {"type": "string", "pattern": r"^/[^\x00]*$", "description": "An absolute path."}
_MATCHED_TOOLS = sorted({"bash", "read", NETWORK_TOOL, *EDIT_TOOLS})


def tool_request_schema() -> dict[str, Any]:
    """A tool request as approvals.policy.validate_request reads it: one shape per tool."""

    def shape(tool: dict[str, Any], tool_input: dict[str, Any]) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["tool", "input"],
                "properties": {"tool": tool, "input": tool_input, "cwd": _ABSOLUTE}}

    return {
        "oneOf": [
            shape({"type": "string", "enum": ["bash"]},
                  {"type": "object", "required": ["command"],
                   "properties": {"command": {"type": "string", "pattern": r"^[^\x00]*$"}}}),
            shape({"type": "string", "enum": sorted(EDIT_TOOLS)},
                  {"type": "object", "anyOf": [{"required": ["file_path"]}, {"required": ["notebook_path"]}],
                   "properties": {"file_path": _NO_NUL_PATH, "notebook_path": _NO_NUL_PATH, "move_path": _NO_NUL_PATH}}),
            shape({"type": "string", "enum": [NETWORK_TOOL]},
                  {"type": "object", "required": ["host", "port"],
                   "properties": {"host": {"type": "string", "minLength": 1, "maxLength": 255},
                                  "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                  "addresses": {"type": "array", "items": {"type": "string"}}}}),
            shape({"type": "string", "pattern": r"\S", "not": {"enum": ["bash", NETWORK_TOOL, *sorted(EDIT_TOOLS)]},
                   "description": "Any other tool (read, webFetch, an MCP tool...): its input as the agent sent it."},
                  {"type": "object"}),
        ],
        "description": "`bash` needs `input.command`; the edit tools `input.file_path` (or `input.notebook_path`); "
                       "`network` `input.host` and `input.port`.",
        "example": {"tool": "bash", "input": {"command": "npm test"}, "cwd": "/srv/project"},
    }


def grant_schema() -> dict[str, Any]:
    """A session grant as approvals.policy.validate_grant reads it."""
    return {
        "oneOf": [
            {"type": "object", "additionalProperties": False, "required": ["tool"],
             "properties": {"tool": {"type": "string", "enum": _MATCHED_TOOLS},
                            "match": {"type": "string", "pattern": r"\S",
                                      "description": "A command pattern (bash), a path glob (edit tools, read), a host "
                                                     "(network)."}}},
            {"type": "object", "additionalProperties": False, "required": ["tool"],
             "properties": {"tool": {"type": "string", "pattern": r"\S", "not": {"enum": _MATCHED_TOOLS},
                                     "description": "Any other tool, whole (no `match`)."}}},
        ],
        "example": {"tool": "bash", "match": "npm run build"},
    }


@extend_schema_field(tool_request_schema())
class ToolRequestField(serializers.JSONField):
    """A tool request (validated by the policy core; documented here)."""


@extend_schema_field(grant_schema())
class GrantField(serializers.JSONField):
    """A session grant (validated by the policy core; documented here)."""


@extend_schema_field({
    "type": "object",
    "nullable": True,
    "minProperties": 1,
    "additionalProperties": False,
    "properties": {key: {"type": "string", "maxLength": MAX_EDITED_CHARS}
                   for key in sorted(set().union(*EDITABLE_KEYS.values()))},
    "example": {"command": "npm test -- --runInBand"},
})
class EditedInputField(serializers.DictField):
    """Edit before approve (validated by approvals.policy.edited_request; documented here)."""


@extend_schema_field({
    "type": "object",
    "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
    "example": {"color": ["Red"], "name": "Ada"},
})
class AnswersField(serializers.DictField):
    """Answers by question id (validated by approvals.policy.answers_of; documented here)."""


@extend_schema_field({"type": "string", "enum": ["default", "accept-edits"],
                      "description": "A plan review only: the mode the agent goes on in (omitted: as the plan said)."})
class PlanModeField(serializers.ChoiceField):
    pass


def _as_the_plan_said() -> str:
    # (a callable default: the schema shows no default outside the enum; omitted is "")
    return ""


@extend_schema_field({"type": "string", "minLength": 1, "pattern": r"^/[^\x00]*$"})
class AbsolutePathField(StrictCharField):
    pass


class PathUseOutput(serializers.Serializer):
    path = serializers.CharField()
    access = serializers.CharField(help_text="read, write or link")
    resolved = serializers.CharField(allow_null=True)
    relative = serializers.CharField(allow_null=True)
    side_effect_class = serializers.CharField(allow_null=True)
    decision = serializers.CharField()
    rule = serializers.CharField(allow_null=True)
    reason = serializers.CharField()


class SegmentOutput(serializers.Serializer):
    command = serializers.CharField()
    words = serializers.ListField(child=serializers.CharField())
    side_effect_class = serializers.CharField(allow_null=True)
    decision = serializers.CharField()
    rule = serializers.CharField(allow_null=True)
    writes_file = serializers.BooleanField()
    reason = serializers.CharField()
    cwd = serializers.CharField(allow_null=True)
    paths = PathUseOutput(many=True)


class VerdictOutput(serializers.Serializer):
    decision = serializers.ChoiceField(choices=["allow", "ask", "deny", "abort"])
    reason = serializers.CharField()
    rule = serializers.CharField()
    segments = SegmentOutput(many=True, help_text="A command's verdict per simple command.")
    paths = PathUseOutput(many=True, required=False, help_text="The paths an edit or read tool touches (when any).")
    grant = serializers.DictField(required=False, help_text="The grant that turned ask into allow (when one did).")


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
        raise ApiError("hash_required", HASH_REQUIRED, field="hash")


class ApprovalApproveApi(IdempotentMixin, APIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanDecide]
    scopes = {"POST": Scope.APPROVALS_DECIDE}

    class ApprovalApproveInput(StrictSerializer):
        hash = hash_field()
        scope = serializers.ChoiceField(choices=["once", "session"], required=False, default="once")
        mode = PlanModeField(choices=["default", "accept-edits"], required=False, default=_as_the_plan_said)
        confirmation = StrictCharField(
            max_length=200, required=False, default="", allow_blank=True,
            help_text="For a request whose `confirmation` is typed: its `confirmation_word`, as the card asks.")
        edited_input = EditedInputField(
            required=False, default=None, allow_null=True,
            help_text="Edit before approve: the input keys to change (`command` for bash; `file_path`, `content` for "
                      "write; `file_path`, `old_string`, `new_string` for edit), each a string. The edited request is "
                      "evaluated by the policy again: 400 edit_denied (with the `rule`) if it would refuse it; "
                      "409 edit_unsupported where the run's driver cannot carry an edit.")

    @extend_schema(request=ApprovalApproveInput, responses={200: ApprovalOutput, 202: ApprovalOutput},
                   parameters=[IDEMPOTENCY_PARAMETER])
    @idempotent
    def post(self, request: Request, approval_id: int) -> Response:
        """Approve. A request that needs a second reviewer answers 202 after the first
        approval (`status` still pending, `approvals_given` 1 of `approvals_required` 2)."""
        require_hash(request, approval_id)
        data = self.ApprovalApproveInput(data=request.data)
        data.is_valid(raise_exception=True)
        approval = approval_decide(approval_id=approval_id, user=request.user, approve=True, via="api", **data.validated_data)
        return Response(ApprovalOutput(approval).data, status=202 if approval.is_pending else 200)


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
        answers = AnswersField(
            required=False, default=dict,
            help_text="By question id: the chosen option labels (a list), or free text. Questions left out stay "
                      "unanswered (the agent is told so).")
        other = serializers.DictField(
            child=serializers.CharField(allow_blank=True, trim_whitespace=False), required=False, default=dict,
            help_text="By question id: free text beside the chosen options, where the question allows its own answer.")
        decline = serializers.BooleanField(required=False, default=False,
                                           help_text="Decline to answer (with no `answers` nor `other`).")

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
        session = get_object_or_404(sessions_visible(request.user), pk=session_id)
        return Response(GrantOutput(grants_active(session_id=session.pk), many=True).data)


class GrantDetailApi(APIView):
    # Who may revoke is the service's rule (approvals.change_grant, or the session's creator).
    permission_classes = [permissions.IsAuthenticated, TokenScope]
    scopes = {"DELETE": Scope.APPROVALS_DECIDE}

    @extend_schema(responses={200: GrantOutput})
    def delete(self, request: Request, grant_id: int) -> Response:
        grant = get_object_or_404(Grant.objects.filter(session__in=sessions_visible(request.user)), pk=grant_id)
        return Response(GrantOutput(grant_revoke(grant=grant, user=request.user)).data)


class PolicyEvaluateApi(APIView):
    # Evaluating changes nothing: a read.
    scopes = {"POST": Scope.READ}

    class PolicyEvaluateInput(StrictSerializer):
        request = ToolRequestField()
        grants = serializers.ListField(child=GrantField(), required=False, default=list)
        # Where the paths of the request are anchored (default: the request's cwd).
        workspace = AbsolutePathField(required=False, allow_blank=False, trim_whitespace=False, max_length=4096,
                                    help_text="An absolute path: where the request's paths are anchored "
                                              "(default: the request's `cwd`).")

    @extend_schema(request=PolicyEvaluateInput, responses=VerdictOutput)
    def post(self, request: Request, policy_id: int) -> Response:
        policy = get_object_or_404(policies_visible(request.user), pk=policy_id)
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


# --- Policies: read, their versions, and a dry run on history (issue 10) ---------------------


class DriverWarningOutput(serializers.Serializer):
    driver = serializers.CharField()
    field = serializers.CharField(help_text="The policy part (`reads`, `run_policy.sandbox`, …) or `cannot_see`.")
    message = serializers.CharField()


class PolicyOutput(serializers.ModelSerializer):
    version = serializers.CharField(help_text="The rule document's identity (sha256 of its canonical JSON), as on runs and steps.")
    version_number = serializers.IntegerField(source="current_number", allow_null=True, help_text="The latest PolicyVersion's number.")
    shadow_policy = serializers.IntegerField(source="shadow_policy_id", allow_null=True)
    document = serializers.JSONField()
    run_policy = serializers.JSONField(allow_null=True)
    warnings = serializers.SerializerMethodField(help_text="Per driver, what of this policy it cannot enforce.")

    class Meta:
        model = Policy
        fields = ["id", "name", "description", "is_default", "version", "version_number", "document", "run_policy",
                  "shadow_policy", "warnings", "updated_at"]

    @extend_schema_field(DriverWarningOutput(many=True))
    def get_warnings(self, policy: Policy) -> list[dict[str, str]]:
        return [w.to_dict() for w in policy_warnings(document=policy.document, run_policy=policy.run_policy)]


class PolicyVersionOutput(serializers.ModelSerializer):
    policy = serializers.IntegerField(source="policy_id")
    author = serializers.CharField(source="author.username", default=None, allow_null=True)
    document = serializers.JSONField()
    run_policy = serializers.JSONField(allow_null=True)

    class Meta:
        model = PolicyVersion
        fields = ["id", "policy", "number", "version", "document", "run_policy", "author", "comment", "created_at"]


def _policies(user: Any) -> Any:
    return policies_visible(user).annotate(current_number=Max("versions__number")).order_by("name", "id")


class PolicyListApi(generics.ListAPIView):
    """Every policy for those who may view or change policies; else those you may name for a run."""

    serializer_class = PolicyOutput

    def get_queryset(self) -> Any:
        return _policies(self.request.user)


class PolicyDetailApi(APIView):
    @extend_schema(responses=PolicyOutput)
    def get(self, request: Request, policy_id: int) -> Response:
        return Response(PolicyOutput(get_object_or_404(_policies(request.user), pk=policy_id)).data)


class PolicyVersionsApi(generics.ListAPIView):
    """Newest first."""

    serializer_class = PolicyVersionOutput

    def get_queryset(self) -> Any:
        policy = get_object_or_404(policies_visible(self.request.user), pk=self.kwargs["policy_id"])
        return PolicyVersion.objects.filter(policy=policy).select_related("author").order_by("-number")


class CanChangePolicies(permissions.BasePermission):
    message = "You may not change policies (approvals.change_policy)."

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.has_perm("approvals.change_policy"))


class ChangedStepOutput(serializers.Serializer):
    step = serializers.IntegerField()
    request = serializers.JSONField()
    was = serializers.CharField()
    now = serializers.CharField()
    rule = serializers.CharField()


class DryRunCountsOutput(serializers.Serializer):
    allow = serializers.IntegerField()
    deny = serializers.IntegerField()
    ask = serializers.IntegerField()
    abort = serializers.IntegerField()


class DryRunOutput(serializers.Serializer):
    compared = serializers.IntegerField(help_text="How many recorded requests were decided again.")
    changed = ChangedStepOutput(many=True, help_text="Each that the draft decides differently, newest first.")
    counts = DryRunCountsOutput(help_text="The changed requests by what the draft now decides.")
    external_unrecorded = serializers.IntegerField(
        required=False,
        help_text="Only when the draft names an external decision point: its recorded answers are replayed, never asked again; "
        "this many requests recorded none (compared on the rules alone)."
    )


class PolicyDryRunApi(APIView):
    permission_classes = [permissions.IsAuthenticated, TokenScope, CanChangePolicies]
    # A dry run changes nothing: a read (for people who may change policies).
    scopes = {"POST": Scope.READ}

    class PolicyDryRunInput(StrictSerializer):
        document = serializers.DictField(help_text="The draft rule policy.")
        limit = serializers.IntegerField(required=False, default=500, min_value=1, max_value=5000)

    @extend_schema(request=PolicyDryRunInput, responses=DryRunOutput)
    def post(self, request: Request, policy_id: int) -> Response:
        """What the draft would have decided on the policy's last `limit` recorded requests
        (every policy's when it decided none yet), each it decides differently."""
        policy = get_object_or_404(Policy, pk=policy_id)
        data = self.PolicyDryRunInput(data=request.data)
        data.is_valid(raise_exception=True)
        document = data.validated_data["document"]
        problems = document_problems(document)
        if problems:
            raise PolicyInvalid(problems)
        result = policy_dry_run(document=document, policy=policy, limit=data.validated_data["limit"])
        body = {"compared": result.compared, "changed": [c.to_dict() for c in result.changed], "counts": result.counts}
        if result.external_unrecorded is not None:
            body["external_unrecorded"] = result.external_unrecorded
        return Response(body)


class SuggestionOutput(serializers.Serializer):
    section = serializers.CharField(help_text="commands, edits, reads, network or tools")
    rule = serializers.CharField(help_text="the allow rule to add")
    up_to = serializers.CharField(allow_null=True, help_text="a command rule's bound: it allows nothing more severe "
                                  "than this side-effect class (the most severe a person approved)")
    approved = serializers.IntegerField()
    denied = serializers.IntegerField()
    reviewers = serializers.IntegerField(help_text="how many different people approved it")
    median_seconds = serializers.FloatField(allow_null=True, help_text="median time a person took to approve")
    would_allow = serializers.IntegerField(help_text="recorded requests it would have allowed that were not")
    compared = serializers.IntegerField(help_text="recorded requests the dry run compared")


class InsightSuggestionsApi(APIView):
    """Rules learned from approvals (issue 32): what people keep approving, as allow rules."""

    permission_classes = [permissions.IsAuthenticated, TokenScope, CanChangePolicies]
    scopes = {"GET": Scope.READ}

    @extend_schema(
        parameters=[
            OpenApiParameter("policy", int, required=True, description="the rule policy"),
            OpenApiParameter("days", int, description="the window, in days (default 30, at most 366)"),
            OpenApiParameter("threshold", int, description="approvals needed before a rule is suggested (default 10)"),
        ],
        responses=SuggestionOutput(many=True),
    )
    def get(self, request: Request) -> Response:
        """Shapes approved at least `threshold` times by a person and never denied, never of
        a destructive, protected, remote-mutation or outside-workspace request, each with
        what it would have allowed on the policy's recorded requests (the dry run)."""
        policy_id = query_int(request, "policy")
        if policy_id is None:
            raise serializers.ValidationError({"policy": ["This query parameter is required."]})
        policy = get_object_or_404(policies_visible(request.user), pk=policy_id)
        days, threshold = insights.parse_window(request.query_params.get("days"), request.query_params.get("threshold"))
        return Response([s.as_json() for s in insights.suggestions(policy, days=days, threshold=threshold)])


# --- The audit export (issue 32.6) ----------------------------------------------------------

EXPORT_CONTENT_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv; charset=utf-8"}


def _query_time(request: Request, name: str, *, end_of_day: bool = False) -> datetime | None:
    """An ISO 8601 date or date-time (without a zone: UTC), or a 400 naming the parameter.
    A bare date as `to` means the end of that day (`to` is exclusive)."""
    raw = request.query_params.get(name, "").strip()
    if not raw:
        return None
    problem = f"{name}: {raw!r} is not an ISO 8601 date (2026-12-03) or date-time (2026-12-03T09:30:00Z)."
    try:  # (a bare date first: parse_datetime would read it as its midnight)
        day = parse_date(raw) if len(raw) == 10 else None
        moment = None if day is not None else parse_datetime(raw)
    except ValueError:  # well formed, out of range (2026-02-30)
        raise ApiError("invalid", problem, field=name) from None
    if moment is None and day is None:
        raise ApiError("invalid", problem, field=name)
    if moment is None:
        assert day is not None
        moment = datetime.combine(day + timedelta(days=1) if end_of_day else day, time.min)
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)


def export_filter(request: Request) -> tuple[ExportFilter, str]:
    params = request.query_params
    fmt = params.get("format", "jsonl")
    if fmt not in EXPORT_FORMATS:
        raise ApiError("invalid", f"format: {fmt!r} is not an export format (jsonl or csv).", field="format")
    outcome = params.get("outcome", "")
    if outcome and outcome not in OUTCOMES:
        raise ApiError("invalid", f"outcome: {outcome!r} is not one of {', '.join(OUTCOMES)}.", field="outcome")
    since, until = _query_time(request, "from"), _query_time(request, "to", end_of_day=True)
    if since is not None and until is not None and since >= until:
        raise ApiError("invalid", "from: must be earlier than `to`.", field="from")
    wanted = ExportFilter(
        since=since, until=until, run_id=query_int(request, "run"), session_id=query_int(request, "session"),
        policy_id=query_int(request, "policy"), reviewer=params.get("reviewer", "").strip(), outcome=outcome,
    )
    return wanted, fmt


async def _async_chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """Streams a database iterator under ASGI one chunk at a time (a sync iterator would be
    read whole first), every chunk on the request's own thread and connection."""
    pull = sync_to_async(lambda: next(chunks, None), thread_sensitive=True)
    while (chunk := await pull()) is not None:
        yield chunk


class DecisionExportApi(APIView):
    """Every decision of the runs you may see, streamed as JSON lines or CSV."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        # `format` names the export, not a renderer (DRF would answer 404 for `csv`); a
        # refusal is the JSON error body whatever the client accepts.
        return JSONRenderer(), JSONRenderer.media_type

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=list(EXPORT_FORMATS), description="`jsonl` (default) or `csv`."),
            OpenApiParameter("from", str, description="ISO 8601 date or date-time (UTC without a zone): steps at or after it."),
            OpenApiParameter("to", str, description="ISO 8601 date or date-time: steps before it (a date: up to its end)."),
            OpenApiParameter("run", int, description="Only this run's decisions."),
            OpenApiParameter("session", int, description="Only this session's decisions."),
            OpenApiParameter("policy", int, description="Only the decisions of runs under this policy (its id)."),
            OpenApiParameter("reviewer", str, description="Only the requests whose approval this user (username) decided."),
            OpenApiParameter("outcome", str, enum=list(OUTCOMES)),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiResponse(
                response=OpenApiTypes.STR, description="One JSON object per decision and line (see docs/api.md)."),
            (200, "text/csv"): OpenApiResponse(
                response=OpenApiTypes.STR, description="A header line, then one line per decision (see docs/api.md)."),
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        wanted, fmt = export_filter(request)
        steps = decisions_for_export(request.user, wanted)
        chunks = export_jsonl(steps) if fmt == "jsonl" else export_csv(steps)
        # Under ASGI (Daphne) an async iterator, so the rows are not read whole before the first byte.
        content = _async_chunks(chunks) if isinstance(request._request, ASGIRequest) else chunks
        response = StreamingHttpResponse(content, content_type=EXPORT_CONTENT_TYPES[fmt])
        response["Content-Disposition"] = f'attachment; filename="decisions.{fmt}"'
        response["Cache-Control"] = "no-store"
        response["X-Accel-Buffering"] = "no"
        return response
