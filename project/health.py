"""Is the deployment whole? The database decides; the channel layer only rings doorbells.

`GET /healthz` answers `{"database": "ok"|"down", "channel_layer": "ok"|"down"}` (503 when
the database is down). The console shows a banner while the channel layer is down: live
updates pause, but decisions still reach the agents (waiting runs read their rows).
"""

from __future__ import annotations

import time
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from drivers import runfloor
from infra import broadcast

_PROBE_EVERY_S = 3.0
_probed_at = 0.0
_layer_ok = True


def channel_layer_ok() -> bool:
    """A quick PING of the Redis channel layer, at most every few seconds per process (the
    in-memory layer of the embedded default is always up)."""
    global _probed_at, _layer_ok
    url = getattr(settings, "REDIS_URL", "")
    if not url:
        return True
    now = time.monotonic()
    if now - _probed_at < _PROBE_EVERY_S:
        return _layer_ok
    _probed_at = now
    try:
        client = redis.Redis.from_url(url, socket_timeout=0.3, socket_connect_timeout=0.3)
        try:
            _layer_ok = bool(client.ping())
        finally:
            client.close()
    except Exception:
        _layer_ok = False
    if _layer_ok:
        broadcast._recovered()
    return _layer_ok


def database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:
        return False


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    db = database_ok()
    layer = channel_layer_ok()
    body = {"database": "ok" if db else "down", "channel_layer": "ok" if layer else "down"}
    return JsonResponse(body, status=200 if db else 503)


def context(request: HttpRequest) -> dict[str, Any]:
    """Template context: `live_degraded` while the channel layer is unreachable;
    `sandbox_unavailable`, the reason, where runs need the sandbox floor and it cannot be
    built (the probe runs once per process)."""
    state, line = runfloor.status()
    return {"live_degraded": not channel_layer_ok(), "sandbox_unavailable": line if state == "unavailable" else ""}
