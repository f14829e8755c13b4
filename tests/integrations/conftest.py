"""Fixtures for the integration surfaces: token clients with chosen scopes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient


@pytest.fixture
def token_client(reviewer: Any) -> Callable[..., APIClient]:
    """An API client authenticated by a real token of `user` (default: the reviewer)."""
    from integrations.tokens import token_create

    def make(*scopes: str, user: Any = None, **kwargs: Any) -> APIClient:
        _, key = token_create(user=user or reviewer, scopes=list(scopes) or None, **kwargs)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        client.token_key = key  # type: ignore[attr-defined]
        return client

    return make
