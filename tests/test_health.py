"""Health: the database decides, the channel layer only rings doorbells."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest

from infra import broadcast
from project import health
from tests.processes import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_probe() -> None:
    health._probed_at = 0.0
    health._layer_ok = True
    broadcast._down_since = None


def test_healthz_is_ok_on_the_embedded_default(client: Any, settings: Any) -> None:
    settings.REDIS_URL = ""
    response = client.get("/healthz")
    assert response.status_code == HTTPStatus.OK
    assert response.json() == {"database": "ok", "channel_layer": "ok"}


def test_an_unreachable_channel_layer_is_reported_and_the_console_says_so(client: Any, settings: Any, reviewer: Any) -> None:
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    assert client.get("/healthz").json() == {"database": "ok", "channel_layer": "down"}
    client.force_login(reviewer)
    page = client.get("/").content.decode()
    assert "Live updates are paused" in page


def test_the_banner_is_absent_while_the_layer_is_up(client: Any, settings: Any, reviewer: Any) -> None:
    settings.REDIS_URL = ""
    client.force_login(reviewer)
    assert "Live updates are paused" not in client.get("/").content.decode()


def test_a_full_channel_drops_its_doorbell_without_calling_the_layer_down(settings: Any) -> None:
    """A burst (a thousand runs created at once) fills the in-memory `drivers` channel: the
    extra doorbells are dropped — the worker's reconcile loop finds those runs by their rows —
    but the layer is up, so decision doorbells keep ringing and no banner appears."""
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 2}}}
    channel_layers.backends.pop("default", None)
    try:
        for i in range(5):
            broadcast.send_to_channel_now("drivers", {"type": "run.start", "run_id": i})
        assert not broadcast.layer_degraded()
        layer = channel_layers["default"]
        assert layer.channels["drivers"].qsize() == 2  # the channel really was full
    finally:
        channel_layers.backends.pop("default", None)
