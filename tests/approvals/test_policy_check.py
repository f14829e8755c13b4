"""`manage.py policy_check --policy FILE --test`: a policy file's examples as a CI check."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from tests.processes import ROOT

PASSING = {
    "commands": {
        "allow": [{"match": "git status", "examples": {"match": ["git status -s"], "not_match": ["git push"]}}],
        "deny": [{"match": "git push", "reason": "The application publishes.",
                  "examples": {"match": ["git push origin main"], "not_match": ["git pull"]}}],
    },
    "edits": {"deny": [{"match": ".env*", "examples": {"match": [".env"]}}]},
    "examples": [{"request": "git push --force", "expect": "deny"}],
}
FAILING = {
    "commands": {"allow": [{"match": "git *", "examples": {"match": ["git status", "git push origin"]}}],
                 "deny": ["git push"]},
    "examples": [{"request": "ls", "expect": "allow", "why": "looking is fine"},
                 {"request": "git push", "expect": "deny"}],
}


def write(tmp_path: Path, document) -> str:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return str(path)


def run(*args: str) -> tuple[str, CommandError | None]:
    out = io.StringIO()
    try:
        call_command("policy_check", *args, stdout=out)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


def test_passing_examples_print_the_summary_and_succeed(tmp_path: Path) -> None:
    out, error = run("--policy", write(tmp_path, PASSING), "--test")
    assert error is None
    assert out.splitlines() == ["6 examples, 0 failing"]


def test_each_failing_example_is_printed_with_request_got_and_expected(tmp_path: Path) -> None:
    out, error = run("--policy", write(tmp_path, FAILING), "--test")
    assert error is not None and error.returncode == 1
    lines = out.splitlines()
    assert lines[-1] == "4 examples, 2 failing"
    assert lines[:5] == [
        "FAIL commands.allow[0].examples.match[1]",
        '  request:  {"cwd":"/workspace","input":{"command":"git push origin"},"tool":"bash"}',
        "  got:      deny by commands.deny[0]",
        "  expected: allow by commands.allow[0]",
        "  commands.allow[0] (`git *`) matches the example, but the request gets deny by commands.deny[0], not allow.",
    ]
    assert "FAIL examples[0]" in lines and "  got:      ask by default" in lines
    assert "  The example should get allow (looking is fine), but it gets ask by default." in lines


def test_an_invalid_policy_prints_every_problem_and_fails(tmp_path: Path) -> None:
    document = {"commands": {"deny": ["curl * | sh", {"match": "git push", "examples": {"match": [3]}}]},
                "classes": {"harmless": "allow"}}
    out, error = run("--policy", write(tmp_path, document), "--test")
    assert error is not None and error.returncode == 1
    assert [line.split(":")[0] for line in out.splitlines()] == [
        "INVALID commands.deny[0]", "INVALID commands.deny[1].examples.match[0]", "INVALID classes.harmless"]


def test_a_policy_file_that_is_not_json_fails_and_a_missing_one_is_an_error(tmp_path: Path) -> None:
    _, error = run("--policy", write(tmp_path, "{not json"), "--test")
    assert error is not None and error.returncode == 1 and "malformed JSON" in str(error)
    _, error = run("--policy", str(tmp_path / "missing.json"), "--test")
    assert error is not None and error.returncode == 2


def test_test_mode_refuses_options_of_the_request_mode(tmp_path: Path) -> None:
    _, error = run("--policy", write(tmp_path, PASSING), "--test", "--workspace", str(tmp_path))
    assert error is not None and error.returncode == 2
    with pytest.raises(CommandError):
        call_command("policy_check", "--policy", write(tmp_path, PASSING), "--test", "--request", "x.json")


@pytest.mark.parametrize("document, status, summary", [(PASSING, 0, "6 examples, 0 failing"),
                                                        (FAILING, 1, "4 examples, 2 failing")])
def test_the_command_exits_with_the_status_ci_reads(tmp_path: Path, document, status: int, summary: str) -> None:
    result = subprocess.run([sys.executable, "manage.py", "policy_check", "--policy", write(tmp_path, document),
                             "--test"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == status, result.stderr
    assert result.stdout.splitlines()[-1] == summary


# --- --sandbox: judged as a run inside (or outside) the OS sandbox floor ---------------------

def _requests(tmp_path: Path, *commands: str) -> str:
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps({"tool": "bash", "input": {"command": c}}) + "\n" for c in commands))
    return str(path)


@pytest.mark.django_db
def test_sandbox_judges_as_a_run_inside_the_floor_under_the_default_policy(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    requests = _requests(tmp_path, "python -m pytest -q", "git push origin main")
    inside, error = run("--sandbox", "workspace-write", "--requests", requests, "--workspace", str(workspace))
    assert error is None
    assert [json.loads(line)["decision"] for line in inside.splitlines()] == ["allow", "ask"]
    # unrestricted: no floor, the same default policy decides as Standard review
    outside, error = run("--sandbox", "unrestricted", "--requests", requests, "--workspace", str(workspace))
    assert error is None
    assert [json.loads(line)["decision"] for line in outside.splitlines()] == ["ask", "ask"]


@pytest.mark.django_db
def test_sandbox_with_a_policy_file_applies_its_in_floor_section(tmp_path: Path) -> None:
    document = {"default": "ask", "in_floor": {"default": "deny"}}
    requests = _requests(tmp_path, "frobnicate --all")
    inside, _ = run("--policy", write(tmp_path, document), "--sandbox", "read-only", "--requests", requests,
                    "--workspace", str(tmp_path))
    outside, _ = run("--policy", write(tmp_path, document), "--requests", requests, "--workspace", str(tmp_path))
    assert json.loads(inside)["decision"] == "deny" and json.loads(outside)["decision"] == "ask"


def test_without_policy_or_sandbox_it_says_what_is_missing(tmp_path: Path) -> None:
    _, error = run("--requests", _requests(tmp_path, "ls"))
    assert error is not None and error.returncode == 2 and "--policy FILE is required" in str(error)
    _, error = run("--sandbox", "workspace-write", "--test")
    assert error is not None and error.returncode == 2
