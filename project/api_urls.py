from django.urls import include, path

from approvals import api as approvals_api
from repos import api as repos_api
from runs import api as runs_api

urlpatterns = [
    # Before the runs and approvals routes: `approvals/stream/` is not an approval id.
    path("", include("integrations.urls")),
    path("runs/", runs_api.RunListApi.as_view(), name="api-runs"),
    path("runs/<int:run_id>/", runs_api.RunDetailApi.as_view(), name="api-run"),
    path("runs/<int:run_id>/cancel/", runs_api.RunCancelApi.as_view(), name="api-run-cancel"),
    path("runs/<int:run_id>/activities/", runs_api.RunActivitiesApi.as_view(), name="api-run-activities"),
    path("runs/<int:run_id>/changes/", repos_api.RunChangesApi.as_view(), name="api-run-changes"),
    path("runs/<int:run_id>/deliver/", repos_api.RunDeliverApi.as_view(), name="api-run-deliver"),
    path("repositories/", repos_api.RepositoryListApi.as_view(), name="api-repositories"),
    path("approvals/", approvals_api.ApprovalListApi.as_view(), name="api-approvals"),
    path("approvals/<int:approval_id>/", approvals_api.ApprovalDetailApi.as_view(), name="api-approval"),
    path("approvals/<int:approval_id>/approve/", approvals_api.ApprovalApproveApi.as_view(), name="api-approval-approve"),
    path("approvals/<int:approval_id>/deny/", approvals_api.ApprovalDenyApi.as_view(), name="api-approval-deny"),
    path("approvals/<int:approval_id>/answer/", approvals_api.ApprovalAnswerApi.as_view(), name="api-approval-answer"),
    path("decisions/export", approvals_api.DecisionExportApi.as_view(), name="api-decisions-export"),
    path("sessions/", runs_api.SessionListApi.as_view(), name="api-sessions"),
    path("sessions/<int:session_id>/", runs_api.SessionDetailApi.as_view(), name="api-session"),
    path("sessions/<int:session_id>/grants/", approvals_api.SessionGrantsApi.as_view(), name="api-session-grants"),
    path("grants/<int:grant_id>/", approvals_api.GrantDetailApi.as_view(), name="api-grant"),
    path("insights/suggestions/", approvals_api.InsightSuggestionsApi.as_view(), name="api-insight-suggestions"),
    path("policies/", approvals_api.PolicyListApi.as_view(), name="api-policies"),
    path("policies/<int:policy_id>/", approvals_api.PolicyDetailApi.as_view(), name="api-policy"),
    path("policies/<int:policy_id>/versions/", approvals_api.PolicyVersionsApi.as_view(), name="api-policy-versions"),
    path("policies/<int:policy_id>/dry-run/", approvals_api.PolicyDryRunApi.as_view(), name="api-policy-dry-run"),
    path("policies/<int:policy_id>/evaluate/", approvals_api.PolicyEvaluateApi.as_view(), name="api-policy-evaluate"),
]
