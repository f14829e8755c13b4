"""WebSocket routes of the console (project.asgi wraps them in auth and origin checks)."""

from __future__ import annotations

from django.urls import path

from runs.consumers import InboxConsumer, RunConsumer

websocket_urlpatterns = [
    path("ws/inbox/", InboxConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", RunConsumer.as_asgi()),
]
