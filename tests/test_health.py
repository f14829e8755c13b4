"""Health: the database decides, the channel layer only rings doorbells."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

import pytest

from project import health
from tests.processes import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_probe() -> None:
    health._probed_at = 0.0
    health._layer_ok = True


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
