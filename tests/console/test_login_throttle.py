"""Password logins are throttled (django-axes): after GATEHOUSE_LOGIN_FAILURE_LIMIT failures
for one username from one address, that pair is locked out for the cool-off, with a page
that says so and for how long; other addresses and other usernames are not; the one-time
login link is not a password login and is never locked out."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from http import HTTPStatus
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from project.login_links import make_login_link

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple 42"


@pytest.fixture(autouse=True)
def _fast_hashes(settings: Any) -> None:
    """(The real hasher takes a third of a second a login; these tests log in dozens of times.)"""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def alice(make_user: Callable[..., Any]) -> Any:
    user = make_user("alice", superuser=False)
    user.set_password(PASSWORD)
    user.save()
    return user


def _login(client: Client, password: str, *, username: str = "alice", ip: str = "192.0.2.10", path: str = "/accounts/login/") -> Any:
    return client.post(path, {"username": username, "password": password}, REMOTE_ADDR=ip)


def _fail(times: int, **kwargs: Any) -> None:
    """Wrong passwords: the form again with its error, until the one that reaches the limit."""
    for attempt in range(1, times + 1):
        response = _login(Client(), "wrong password", **kwargs)
        limit = settings.AXES_FAILURE_LIMIT
        assert response.status_code == (HTTPStatus.TOO_MANY_REQUESTS if attempt >= limit else HTTPStatus.OK)


def _signed_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


def test_the_defaults_are_five_failures_and_fifteen_minutes(settings: Any) -> None:
    assert settings.AXES_FAILURE_LIMIT == 5
    assert settings.AXES_COOLOFF_TIME == timedelta(minutes=15)
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


def test_after_the_limit_even_the_right_password_is_refused_saying_why(alice: Any, settings: Any) -> None:
    _fail(settings.AXES_FAILURE_LIMIT)
    client = Client()
    response = _login(client, PASSWORD)
    assert response.status_code == HTTPStatus.TOO_MANY_REQUESTS
    page = response.content.decode()
    assert "Too many failed logins" in page and "alice" in page and "15 minutes" in page
    assert not _signed_in(client)


def test_a_failure_below_the_limit_does_not_lock_and_a_success_resets_the_count(alice: Any, settings: Any) -> None:
    _fail(settings.AXES_FAILURE_LIMIT - 1)
    client = Client()
    assert _login(client, PASSWORD).status_code == HTTPStatus.FOUND and _signed_in(client)
    _fail(settings.AXES_FAILURE_LIMIT - 1)  # counted from zero again
    assert _login(Client(), PASSWORD).status_code == HTTPStatus.FOUND


def test_the_lock_is_per_username_and_address(alice: Any, make_user: Callable[..., Any], settings: Any) -> None:
    bob = make_user("bob", superuser=False)
    bob.set_password(PASSWORD)
    bob.save()
    _fail(settings.AXES_FAILURE_LIMIT, ip="192.0.2.10")
    assert _login(Client(), PASSWORD, ip="192.0.2.10").status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert _login(Client(), PASSWORD, ip="198.51.100.7").status_code == HTTPStatus.FOUND  # alice elsewhere
    assert _login(Client(), PASSWORD, username="bob", ip="192.0.2.10").status_code == HTTPStatus.FOUND  # bob here


def test_the_lock_ends_after_the_cool_off(alice: Any, settings: Any) -> None:
    from axes.models import AccessAttempt

    _fail(settings.AXES_FAILURE_LIMIT)
    assert _login(Client(), PASSWORD).status_code == HTTPStatus.TOO_MANY_REQUESTS
    # The cool-off passes (the attempts are dated back rather than waiting).
    past = AccessAttempt.objects.get().attempt_time - settings.AXES_COOLOFF_TIME - timedelta(seconds=1)
    AccessAttempt.objects.update(attempt_time=past)
    client = Client()
    assert _login(client, PASSWORD).status_code == HTTPStatus.FOUND and _signed_in(client)


def test_the_login_link_works_while_password_logins_are_locked(alice: Any, settings: Any) -> None:
    _fail(settings.AXES_FAILURE_LIMIT)
    client = Client()
    response = client.get(make_login_link(alice), REMOTE_ADDR="192.0.2.10")
    assert response.status_code == HTTPStatus.FOUND and response["Location"] == "/"
    assert _signed_in(client)
    assert client.get("/", REMOTE_ADDR="192.0.2.10").status_code == HTTPStatus.OK


def test_the_admin_login_is_throttled_too(alice: Any, settings: Any) -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT):
        _login(Client(), "wrong password", path="/admin/login/")
    assert _login(Client(), PASSWORD, path="/admin/login/").status_code == HTTPStatus.TOO_MANY_REQUESTS


def test_the_failure_limit_and_cool_off_come_from_the_environment(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    from tests.processes import ROOT

    code = "from django.conf import settings; print(settings.AXES_FAILURE_LIMIT, settings.AXES_COOLOFF_TIME.total_seconds())"
    env = {**os.environ, "GATEHOUSE_VAR_DIR": str(tmp_path), "GATEHOUSE_LOGIN_FAILURE_LIMIT": "3",
           "GATEHOUSE_LOGIN_COOLOFF_MINUTES": "2.5", "DJANGO_SETTINGS_MODULE": "project.settings"}
    done = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["3", "150.0"], done.stderr
    bad = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT,
                         env={**env, "GATEHOUSE_LOGIN_FAILURE_LIMIT": "0"}, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "GATEHOUSE_LOGIN_FAILURE_LIMIT" in bad.stderr


def test_an_attempt_during_the_pause_restarts_it(alice: Any, settings: Any) -> None:
    from axes.models import AccessAttempt

    _fail(settings.AXES_FAILURE_LIMIT)
    almost_over = settings.AXES_COOLOFF_TIME - timedelta(minutes=1)
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - almost_over)
    assert _login(Client(), PASSWORD).status_code == HTTPStatus.TOO_MANY_REQUESTS  # tried again meanwhile
    # Two minutes later the first pause would be over; the restarted one is not.
    AccessAttempt.objects.update(attempt_time=AccessAttempt.objects.get().attempt_time - timedelta(minutes=2))
    assert _login(Client(), PASSWORD).status_code == HTTPStatus.TOO_MANY_REQUESTS
