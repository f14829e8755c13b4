"""The API's input boundary: oversized bodies refused before they are read, and canonical
JSON's boundary cases refused with a message that names what is wrong."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

import pytest

pytestmark = pytest.mark.django_db

RUNS = "/api/v1/runs/"


def post_raw(client: Any, body: bytes, **extra: Any) -> Any:
    return client.generic("POST", RUNS, body, content_type="application/json", **extra)


@pytest.fixture
def client_in(client: Any, reviewer: Any) -> Any:
    client.force_login(reviewer)
    return client


def test_a_body_over_the_limit_is_refused_with_413_before_it_is_read(client_in: Any, settings: Any) -> None:
    settings.GATEHOUSE_MAX_BODY_BYTES = 1024
    body = json.dumps({"driver": "scripted", "prompt": "x" * 2000}).encode()
    response = post_raw(client_in, body)
    assert response.status_code == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert response.json()["code"] == "body_too_large"
    assert "limit is 1024 bytes" in response.json()["message"]


def test_a_body_within_the_limit_goes_through(client_in: Any, settings: Any) -> None:
    settings.GATEHOUSE_MAX_BODY_BYTES = 64 * 1024
    body = json.dumps({"driver": "scripted", "prompt": "hi", "scenario": {"steps": [{"message": "x"}]}}).encode()
    assert post_raw(client_in, body).status_code == HTTPStatus.CREATED


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b'{"driver": "scripted", "driver": "codex"}', "appears more than once"),
        (b'{"driver": "scripted", "prompt": NaN}', "NaN"),
        (b'{"driver": "scripted", "prompt": Infinity}', "Infinity"),
        (b'\xef\xbb\xbf{"driver": "scripted"}', "byte-order mark"),
        (b'{"driver": "scr\xffipted"}', "UTF-8"),
        (b'{"driver": "\\ud800"}', "surrogate"),
        (b"[" * 300 + b"]" * 300, "deeper"),
        (b'{"driver": "scripted"} {"driver": "codex"}', "malformed JSON"),
    ],
)
def test_canonical_json_boundary_cases_are_refused_clearly(client_in: Any, body: bytes, says: str) -> None:
    response = post_raw(client_in, body)
    assert response.status_code == HTTPStatus.BAD_REQUEST, response.content
    error = response.json()
    assert error["code"] == "parse_error" and error["message"].startswith("invalid JSON: "), error
    assert says.lower() in error["message"].lower(), error
