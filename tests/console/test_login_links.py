"""One-time login links: they log in once, then never again; expired or forged ones don't."""

from __future__ import annotations

import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.core import signing
from django.test import Client

from project.login_links import make_login_link

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(make_user: Callable[..., Any]) -> Any:
    user = make_user("admin")
    assert not user.has_usable_password()
    return user


def test_login_link_works_once(client: Client, admin: Any) -> None:
    link = make_login_link(admin)

    response = client.get(link)

    assert response.status_code == HTTPStatus.FOUND and response["Location"] == "/"
    assert client.get("/").status_code == HTTPStatus.OK
    assert int(client.session["_auth_user_id"]) == admin.pk

    other = Client()
    again = other.get(link)
    assert again.status_code == HTTPStatus.BAD_REQUEST
    assert "already used" in again.content.decode()
    assert "_auth_user_id" not in other.session


def test_expired_login_link_is_refused(client: Client, admin: Any, settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.GATEHOUSE_LOGIN_LINK_MAX_AGE = 60
    an_hour_ago = time.time() - 3600
    monkeypatch.setattr(signing.time, "time", lambda: an_hour_ago)
    link = make_login_link(admin)
    monkeypatch.undo()

    response = client.get(link)

    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert "expired" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_forged_login_link_is_refused(client: Client, admin: Any) -> None:
    link = make_login_link(admin)
    forged = link.replace("/login-link/", "/login-link/x")

    response = client.get(forged)

    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert "not valid" in response.content.decode()


def test_link_dies_when_the_password_changes(client: Client, admin: Any) -> None:
    link = make_login_link(admin)
    admin.set_password("a long new passphrase 42")
    admin.save()

    assert client.get(link).status_code == HTTPStatus.BAD_REQUEST


def test_link_for_an_inactive_user_is_refused(client: Client, admin: Any) -> None:
    link = make_login_link(admin)
    admin.is_active = False
    admin.save()

    assert client.get(link).status_code == HTTPStatus.BAD_REQUEST


def test_logout_is_post_only(client: Client, admin: Any) -> None:
    client.force_login(admin)
    assert client.get("/accounts/logout/").status_code == HTTPStatus.METHOD_NOT_ALLOWED
    assert client.post("/accounts/logout/").status_code == HTTPStatus.FOUND
    assert client.get("/").status_code == HTTPStatus.FOUND
