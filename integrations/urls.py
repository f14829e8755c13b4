"""Integration routes, included under /api/v1/ (project/api_urls.py)."""

from __future__ import annotations

from django.urls import path

from integrations import api, streams
from integrations.hooks import views as hooks

urlpatterns = [
    *[
        path(f"hooks/{agent}/{event}/", view, {"agent": agent}, name=f"api-hook-{agent}-{event}")
        for agent in ("claude-code", "codex")
        for event, view in (("pre-tool-use", hooks.pre_tool_use), ("post-tool-use", hooks.post_tool_use),
                            ("session-end", hooks.session_end))
    ],
    path("runs/<int:run_id>/activities/stream/", streams.RunActivityStreamApi.as_view(), name="api-run-activities-stream"),
    path("approvals/stream/", streams.ApprovalStreamApi.as_view(), name="api-approvals-stream"),
    path("drivers/", api.DriverListApi.as_view(), name="api-drivers"),
    path("webhooks/", api.WebhookListApi.as_view(), name="api-webhooks"),
    path("webhooks/<int:webhook_id>/", api.WebhookDetailApi.as_view(), name="api-webhook"),
    path("webhooks/<int:webhook_id>/deliveries/", api.WebhookDeliveriesApi.as_view(), name="api-webhook-deliveries"),
]
