"""The console's WebSockets open only for a page of the console itself: the Origin must be
the host *and port* the request was sent to (its Host header), or be listed in
CSRF_TRUSTED_ORIGINS; and the Host must be one of ALLOWED_HOSTS (DNS rebinding)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client

from project.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def cookie(make_user: Callable[..., Any]) -> str:
    """The session cookie of a signed-in user (so only the origin decides)."""
    client = Client()
    client.force_login(make_user("alice"))
    return f"{django_settings.SESSION_COOKIE_NAME}={client.cookies[django_settings.SESSION_COOKIE_NAME].value}"


async def _opens(cookie: str, *, host: str | None, origin: str | None, path: str = "/ws/inbox/") -> bool:
    headers = [(b"cookie", cookie.encode())]
    if host is not None:
        headers.append((b"host", host.encode()))
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    comm = WebsocketCommunicator(application, path, headers=headers)
    connected, _ = await comm.connect()
    await comm.disconnect()
    return bool(connected)


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("localhost:8000", "http://localhost:8000"),
        ("127.0.0.1", "http://127.0.0.1"),
        ("127.0.0.1", "https://127.0.0.1"),  # behind a TLS proxy: the browser's page is https
        ("127.0.0.1:80", "http://127.0.0.1"),
        ("127.0.0.1:443", "https://127.0.0.1"),  # a proxy that writes the port into Host
        ("[::1]:8000", "http://[::1]:8000"),
        ("LOCALHOST:8000", "http://localhost:8000"),
    ],
)
async def test_the_consoles_own_origin_opens_a_socket(settings: Any, cookie: str, host: str, origin: str) -> None:
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
    assert await _opens(cookie, host=host, origin=origin)


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8000", "http://127.0.0.1:3000"),  # another service on the same host
        ("127.0.0.1:8000", "http://127.0.0.1"),
        ("127.0.0.1", "http://127.0.0.1:8080"),
        ("127.0.0.1:80", "https://127.0.0.1"),
        ("127.0.0.1:443", "http://127.0.0.1"),
        ("127.0.0.1:8000", "http://127.0.0.1:8000/path"),
        ("127.0.0.1:8000", "http://127.0.0.1:99999"),
        ("127.0.0.1:8000", "http://localhost:8000"),  # another name
        ("127.0.0.1:8000", "http://evil.example:8000"),
        ("evil.example:8000", "http://evil.example:8000"),  # DNS rebinding: a Host we do not serve
        ("127.0.0.1:8000", None),
        ("127.0.0.1:8000", "null"),
        ("127.0.0.1:8000", "file://"),
        (None, "http://127.0.0.1:8000"),
        ("127.0.0.1:8000", "http://127.0.0.1:8000@evil.example"),
    ],
)
async def test_any_other_origin_is_refused(settings: Any, cookie: str, host: str | None, origin: str | None) -> None:
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
    assert not await _opens(cookie, host=host, origin=origin)
    assert not await _opens(cookie, host=host, origin=origin, path="/ws/runs/1/")


async def test_an_origin_listed_in_csrf_trusted_origins_opens_a_socket(settings: Any, cookie: str) -> None:
    settings.ALLOWED_HOSTS = ["gatehouse.example"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://console.example:8443", "https://*.tools.example"]
    session = cookie
    assert await _opens(session, host="gatehouse.example", origin="https://console.example:8443")
    assert await _opens(session, host="gatehouse.example", origin="https://a.tools.example")
    # Listed with its scheme and port: nothing else of that host.
    assert not await _opens(session, host="gatehouse.example", origin="https://console.example")
    assert not await _opens(session, host="gatehouse.example", origin="http://console.example:8443")
    assert not await _opens(session, host="gatehouse.example", origin="http://a.tools.example")
    # A trusted origin does not make an unknown Host acceptable.
    assert not await _opens(session, host="other.example", origin="https://console.example:8443")


async def test_with_debug_and_no_allowed_hosts_localhost_still_works(settings: Any, cookie: str) -> None:
    settings.DEBUG, settings.ALLOWED_HOSTS = True, []
    session = cookie
    assert await _opens(session, host="localhost:8000", origin="http://localhost:8000")
    assert not await _opens(session, host="localhost:8000", origin="http://localhost:8001")
