"""ASGI entry: HTTP through Django, WebSocket through the console consumers, and the
`drivers` channel through the driver worker (used by `runworker drivers` and `serve`)."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

# Django must be set up before the consumers (and their models) are imported.
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ChannelNameRouter, ProtocolTypeRouter, URLRouter  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from drivers.worker import DriverWorkerConsumer  # noqa: E402
from project.routing import websocket_urlpatterns  # noqa: E402
from project.ws_origin import SameOriginValidator  # noqa: E402

application = ProtocolTypeRouter(
    {
        # Static files come from this process too: the embedded default has nothing in
        # front of it. (Behind a proxy or CDN, the proxy answers /static/ first.)
        "http": ASGIStaticFilesHandler(django_asgi_app),
        # The Origin must be the console's own host and port (project/ws_origin.py).
        "websocket": SameOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
        "channel": ChannelNameRouter({"drivers": DriverWorkerConsumer.as_asgi()}),
    }
)
