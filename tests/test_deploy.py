"""Production settings pass Django's deployment checks; the OpenAPI schema builds cleanly."""

from __future__ import annotations

import os
import subprocess
import sys
from http import HTTPStatus
from typing import Any

import pytest

from tests.processes import ROOT


def test_check_deploy_is_clean_with_production_settings(tmp_path: Any) -> None:
    env = {
        **os.environ,
        "GATEHOUSE_PRODUCTION": "1",
        "GATEHOUSE_SECRET_KEY": "test-only-" + "k" * 60,
        "GATEHOUSE_ALLOWED_HOSTS": "gatehouse.example",
        "GATEHOUSE_VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_production_without_a_secret_key_refuses_to_start(tmp_path: Any) -> None:
    env = {**os.environ, "GATEHOUSE_PRODUCTION": "1", "GATEHOUSE_VAR_DIR": str(tmp_path)}
    env.pop("GATEHOUSE_SECRET_KEY", None)
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "GATEHOUSE_SECRET_KEY" in result.stderr


def test_bad_environment_value_fails_loudly(tmp_path: Any) -> None:
    env = {**os.environ, "GATEHOUSE_DEBUG": "maybe", "GATEHOUSE_VAR_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "GATEHOUSE_DEBUG='maybe' is not a boolean" in result.stderr


@pytest.mark.django_db
def test_openapi_schema_is_served(api: Any) -> None:
    response = api.get("/api/v1/schema/")
    assert response.status_code == HTTPStatus.OK
    assert b"/api/v1/approvals/{approval_id}/approve/" in response.content


def test_openapi_schema_is_valid_and_documents_pagination_and_errors(tmp_path: Any) -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json",
         "--file", str(tmp_path / "schema.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "GATEHOUSE_VAR_DIR": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr
    import json

    schema = json.loads((tmp_path / "schema.json").read_text())
    runs = schema["paths"]["/api/v1/runs/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert runs["$ref"].endswith("PaginatedRunOutputList")
    approve = schema["paths"]["/api/v1/approvals/{approval_id}/approve/"]["post"]["responses"]
    assert {"400", "404", "409", "410"} <= set(approve)
