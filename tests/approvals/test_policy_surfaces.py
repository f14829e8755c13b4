"""The policy engine's surfaces: `policy_check`, the evaluate endpoint, the admin, the gate."""

from __future__ import annotations

import json
import subprocess
import sys
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest

from approvals.models import Policy
from approvals.services import policy_save
from tests.approvals.policy.policytest import ISSUE_POLICY as POLICY
from tests.processes import ROOT


def policy_check(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "policy_check", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_policy_check_prints_one_verdict(tmp_path: Path) -> None:
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    (tmp_path / "request.json").write_text(json.dumps({"tool": "bash", "input": {"command": "ls && git push origin main"}, "cwd": "/w"}))
    result = policy_check(tmp_path, "--policy", str(tmp_path / "policy.json"), "--request", str(tmp_path / "request.json"))
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert (verdict["decision"], verdict["rule"]) == ("deny", "commands.deny[0]")
    assert verdict["reason"] == "The application publishes the changes."
    assert [s["command"] for s in verdict["segments"]] == ["ls", "git push origin main"]


def test_policy_check_reads_jsonl_in_order_with_grants(tmp_path: Path) -> None:
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    (tmp_path / "grants.json").write_text(json.dumps([{"tool": "bash", "match": "git commit"}]))
    lines = [
        {"tool": "bash", "input": {"command": "git commit -m x"}, "cwd": "/w"},
        {"tool": "write", "input": {"file_path": "src/a.py", "content": ""}, "cwd": "/w"},
        {"tool": "dropDatabase", "input": {}, "cwd": "/w"},
    ]
    (tmp_path / "requests.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    result = policy_check(
        tmp_path, "--policy", str(tmp_path / "policy.json"), "--requests", str(tmp_path / "requests.jsonl"),
        "--grants", str(tmp_path / "grants.json"),
    )
    assert result.returncode == 0, result.stderr
    verdicts = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(v["decision"], v["rule"]) for v in verdicts] == [
        ("allow", "grant"), ("allow", "edits.allow[0]"), ("deny", "tools.dropDatabase"),
    ]


def test_policy_check_refuses_an_invalid_policy_naming_the_field(tmp_path: Path) -> None:
    (tmp_path / "policy.json").write_text(json.dumps({"commands": {"deny": [{"match": 3}]}}))
    (tmp_path / "request.json").write_text(json.dumps({"tool": "bash", "input": {"command": "ls"}}))
    result = policy_check(tmp_path, "--policy", str(tmp_path / "policy.json"), "--request", str(tmp_path / "request.json"))
    assert result.returncode == 2
    assert "commands.deny[0]" in result.stderr


def test_policy_check_refuses_an_invalid_request(tmp_path: Path) -> None:
    (tmp_path / "policy.json").write_text(json.dumps(POLICY))
    (tmp_path / "request.json").write_text(json.dumps({"tool": "bash", "input": "ls"}))
    result = policy_check(tmp_path, "--policy", str(tmp_path / "policy.json"), "--request", str(tmp_path / "request.json"))
    assert result.returncode == 2
    assert "input" in result.stderr


@pytest.mark.django_db
def test_evaluate_endpoint_answers_like_policy_check(api: Any) -> None:
    policy = policy_save(policy=Policy(name="strict", document=POLICY))
    response = api.post(
        f"/api/v1/policies/{policy.pk}/evaluate/",
        {"request": {"tool": "bash", "input": {"command": "echo \"$(rm -rf /)\""}, "cwd": "/w"}, "grants": []},
        format="json",
    )
    assert response.status_code == HTTPStatus.OK, response.content
    body = response.json()
    assert (body["decision"], body["rule"]) == ("deny", "commands.deny[1]")
    assert set(body) >= {"decision", "reason", "rule", "segments"}


@pytest.mark.django_db
def test_evaluate_endpoint_refuses_a_bad_request_naming_the_field(api: Any) -> None:
    policy = policy_save(policy=Policy(name="strict", document=POLICY))
    response = api.post(f"/api/v1/policies/{policy.pk}/evaluate/", {"request": {"tool": 5, "input": {}}}, format="json")
    assert response.status_code == HTTPStatus.BAD_REQUEST
    assert response.json()["code"] == "invalid_request"
    assert response.json()["field"] == "tool"


@pytest.mark.django_db
def test_admin_refuses_an_invalid_policy_document(client: Any, reviewer: Any) -> None:
    client.force_login(reviewer)
    response = client.post(
        "/admin/approvals/policy/add/",
        {"name": "broken", "description": "", "document": json.dumps({"default": "maybe"}), "run_policy": "null"},
    )
    assert response.status_code == HTTPStatus.OK  # the form comes back with the error
    assert b"default" in response.content and not Policy.objects.filter(name="broken").exists()


@pytest.mark.django_db
def test_admin_saves_a_valid_policy_with_its_version(client: Any, reviewer: Any) -> None:
    client.force_login(reviewer)
    response = client.post(
        "/admin/approvals/policy/add/",
        {"name": "strict", "description": "", "document": json.dumps(POLICY), "run_policy": "null", "is_default": "on"},
    )
    assert response.status_code == HTTPStatus.FOUND, response.content[:2000]
    policy = Policy.objects.get(name="strict")
    assert len(policy.version) == 64 and policy.is_default


def test_policy_check_anchors_paths_to_the_workspace_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "policy.json").write_text(json.dumps({"edits": {"allow": ["src/**"], "default": "ask"}}))
    request = {"tool": "write", "input": {"file_path": str(tmp_path / "ws" / "src" / "a.py")}, "cwd": str(tmp_path / "ws")}
    (tmp_path / "request.json").write_text(json.dumps(request))
    args = ("--policy", str(tmp_path / "policy.json"), "--request", str(tmp_path / "request.json"))
    inside = json.loads(policy_check(tmp_path, *args).stdout)  # default: the request's cwd
    outside = json.loads(policy_check(tmp_path, *args, "--workspace", str(tmp_path / "elsewhere")).stdout)
    assert (inside["decision"], inside["rule"]) == ("allow", "edits.allow[0]")
    assert (outside["decision"], outside["rule"]) == ("ask", "edits.default")
    assert outside["paths"][0]["relative"] is None


@pytest.mark.django_db
def test_evaluate_endpoint_takes_the_workspace_to_anchor_paths(api: Any, tmp_path: Path) -> None:
    policy = policy_save(policy=Policy(name="edits", document={"edits": {"allow": ["src/**"], "default": "ask"}}))
    request = {"tool": "write", "input": {"file_path": str(tmp_path / "src" / "a.py")}, "cwd": str(tmp_path)}
    url = f"/api/v1/policies/{policy.pk}/evaluate/"
    inside = api.post(url, {"request": request}, format="json").json()
    outside = api.post(url, {"request": request, "workspace": str(tmp_path / "other")}, format="json").json()
    assert (inside["decision"], outside["decision"]) == ("allow", "ask")
    refused = api.post(url, {"request": request, "workspace": "relative/dir"}, format="json")
    assert refused.status_code == HTTPStatus.BAD_REQUEST
    assert (refused.json()["code"], refused.json()["field"]) == ("invalid_request", "workspace")
