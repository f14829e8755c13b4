"""The htmx console: inbox, runs, sessions, decisions, and the login routes (included at "")."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from approvals import views as approval_views
from integrations.notifications import views as notification_views
from project import login_links
from repos import views as repo_views
from runs import views as run_views

urlpatterns = [
    path("", approval_views.inbox, name="inbox"),
    path("approvals/<int:approval_id>/approve/", approval_views.approval_decide_view, {"approve": True}, name="approval-approve"),
    path("approvals/<int:approval_id>/deny/", approval_views.approval_decide_view, {"approve": False}, name="approval-deny"),
    path("approvals/<int:approval_id>/answer/", approval_views.approval_answer_view, name="approval-answer"),
    path("approvals/batch/", approval_views.approvals_batch_view, name="approvals-batch"),
    path("insights/", approval_views.insights_page, name="insights"),
    path("runs/", run_views.run_list, name="run-list"),
    path("runs/new/", run_views.run_new, name="run-new"),
    path("runs/<int:run_id>/", run_views.run_detail, name="run-detail"),
    path("runs/<int:run_id>/cancel/", run_views.run_cancel_view, name="run-cancel"),
    path("runs/<int:run_id>/changes/", repo_views.run_changes_view, name="run-changes"),
    path("runs/<int:run_id>/changes/patch/", repo_views.run_patch_view, name="run-patch"),
    path("runs/<int:run_id>/deliver/", repo_views.run_deliver_view, name="run-deliver"),
    path("sessions/", run_views.session_list, name="session-list"),
    path("sessions/<int:session_id>/", run_views.session_detail, name="session-detail"),
    path("sessions/<int:session_id>/continue/", run_views.session_continue_view, name="session-continue"),
    path("sessions/<int:session_id>/modes/", run_views.session_modes_view, name="session-modes"),
    path("grants/<int:grant_id>/revoke/", run_views.grant_revoke_view, name="grant-revoke"),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),  # POST only (Django 5)
    path("login-link/<str:token>/", login_links.login_link_view, name="login-link"),
    # One-tap links from notifications (issue 32.4) and a person's own page.
    path("a/<str:token>/", notification_views.approval_link_view, name="approval-link"),
    path("me/", notification_views.me_view, name="me"),
]
