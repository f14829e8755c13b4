"""Registering repositories: validation, the URL globs, write-only encrypted credentials."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from repos import crypto
from repos.errors import RepositoryError
from repos.models import Repository
from repos.services import repository_create

pytestmark = pytest.mark.django_db


def test_a_manager_registers_and_lists_a_repository(api: Any, remote: Path) -> None:
    response = api.post("/api/v1/repositories/", {"name": "app", "url": f"file://{remote}", "default_ref": "main"}, format="json")
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert response.json()["name"] == "app" and response.json()["has_credential"] is False
    listed = api.get("/api/v1/repositories/").json()["results"]
    assert [r["name"] for r in listed] == ["app"]
    assert "credential_encrypted" not in listed[0]


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "bad name", "url": "/srv/git/app.git"}, "name"),
    ({"name": "app", "url": "ext::sh -c touch% /tmp/x"}, "url"),
    ({"name": "app", "url": "https://user:s3cret-token@example.com/app.git"}, "url"),
    ({"name": "app", "url": "relative/path"}, "url"),
    ({"name": "app", "url": "--upload-pack=evil"}, "url"),
    ({"name": "app", "url": "/srv/git/app.git", "default_ref": "-x"}, "default_ref"),
    ({"name": "app", "url": "/srv/git/app.git", "default_ref": "a..b"}, "default_ref"),
])
def test_what_cannot_be_registered_is_refused_naming_the_field(api: Any, body: dict[str, str], field: str) -> None:
    response = api.post("/api/v1/repositories/", body, format="json")
    assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
    assert response.json()["field"] == field
    assert "s3cret-token" not in response.content.decode()
    assert not Repository.objects.exists()


def test_urls_outside_the_configured_globs_are_refused(api: Any, settings: Any, remote: Path) -> None:
    settings.GATEHOUSE_REPOSITORY_URLS = ["https://git.example.com/*", f"file://{remote.parent}/*.git"]
    refused = api.post("/api/v1/repositories/", {"name": "gh", "url": "https://github.com/someone/app.git"}, format="json")
    assert refused.status_code == HTTPStatus.BAD_REQUEST and refused.json()["field"] == "url"
    assert "GATEHOUSE_REPOSITORY_URLS" in refused.json()["message"]
    allowed = api.post("/api/v1/repositories/", {"name": "app", "url": f"file://{remote}"}, format="json")
    assert allowed.status_code == HTTPStatus.CREATED, allowed.content


def test_only_managers_may_register(make_user: Any) -> None:
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(make_user("bob", superuser=False, perms=("runs.add_run",)))
    response = client.post("/api/v1/repositories/", {"name": "app", "url": "/srv/app.git"}, format="json")
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert client.get("/api/v1/repositories/").status_code == HTTPStatus.FORBIDDEN


def test_credentials_are_stored_encrypted_and_never_shown_again(reviewer: Any, remote: Path) -> None:
    client = Client()
    client.force_login(reviewer)
    token = "ghp_" + "A1b2" * 9
    response = client.post("/admin/repos/repository/add/", {
        "name": "app", "url": f"file://{remote}", "default_ref": "main", "credential_kind": "token",
        "credential_username": "x-access-token", "credential": token})
    assert response.status_code == HTTPStatus.FOUND, response.content.decode()[-2000:]
    row = Repository.objects.get(name="app")
    assert token not in row.credential_encrypted and row.credential_encrypted
    assert crypto.decrypt(row.credential_encrypted) == token
    page = client.get(f"/admin/repos/repository/{row.pk}/change/").content.decode()
    assert token not in page and row.credential_encrypted not in page
    # Saving without a credential keeps the stored one.
    client.post(f"/admin/repos/repository/{row.pk}/change/", {
        "name": "app", "url": f"file://{remote}", "default_ref": "main", "credential_kind": "token",
        "credential_username": "x-access-token", "credential": ""})
    row.refresh_from_db()
    assert crypto.decrypt(row.credential_encrypted) == token
    assert token not in Client().get("/api/v1/repositories/").content.decode()


def test_the_key_may_be_set_apart_from_the_secret_key(settings: Any) -> None:
    settings.GATEHOUSE_REPOSITORY_KEY = "a passphrase of the administrator's"
    stored = crypto.encrypt("tok")
    settings.GATEHOUSE_REPOSITORY_KEY = ""
    with pytest.raises(crypto.CredentialUnreadable):
        crypto.decrypt(stored)


def test_a_duplicate_name_is_refused() -> None:
    repository_create(name="app", url="/srv/git/app.git")
    with pytest.raises(RepositoryError) as refused:
        repository_create(name="app", url="/srv/git/other.git")
    assert refused.value.fields["field"] == "name"
