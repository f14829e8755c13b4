"""The timeline's vocabulary (issue 31): every event a writer names is an `Event` member, and
the events a run actually writes are too."""

from __future__ import annotations

import ast
import re
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from runs.events import Event
from runs.models import Run
from tests.flow import decide, events, finished, pending_approval, start_run

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("approvals", "runs", "drivers", "project", "integrations", "infra", "repos")
WRITERS = {"activity_record", "activities_record"}
VALUES = {e.value for e in Event}


def _sources() -> list[tuple[Path, ast.Module]]:
    return [
        (path, ast.parse(path.read_text(), str(path)))
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def _name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def test_every_event_the_code_names_is_a_member() -> None:
    named: list[str] = []  # (what the scan found, so that it cannot pass by finding nothing)
    problems: list[str] = []
    for path, tree in _sources():
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Event":
                named.append(node.attr)
                if node.attr not in Event.__members__:
                    problems.append(f"{where}:{node.lineno}: Event.{node.attr} is no member")
            if not isinstance(node, ast.Call):
                continue
            if _name(node.func) == "Event" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant):
                    named.append(arg.value)
                    if arg.value not in VALUES:
                        problems.append(f"{where}:{node.lineno}: Event({arg.value!r}) is no member")
                elif isinstance(arg, ast.JoinedStr):  # Event(f"run.{status}"): each finished status is one
                    prefix = "".join(str(v.value) for v in arg.values if isinstance(v, ast.Constant))
                    named.append(prefix)
                    problems += [
                        f"{where}:{node.lineno}: no Event {prefix}{status}"
                        for status in Run.FINISHED
                        if f"{prefix}{status}" not in VALUES
                    ]
            if _name(node.func) in WRITERS:
                for keyword in node.keywords:
                    if keyword.arg == "event" and isinstance(keyword.value, ast.Constant):
                        named.append(str(keyword.value.value))
                        problems.append(
                            f"{where}:{node.lineno}: a string literal event ({keyword.value.value!r}): pass an Event member"
                        )
    assert not problems, "\n".join(problems)
    # every writer's events were found: the lifecycle, the gate's, the approvals', the drivers'
    assert {
        "RUN_CREATED",
        "RUN_CANCEL_REQUESTED",
        "TOOL_REQUESTED",
        "TOOL_FINISHED",
        "APPROVAL_REQUESTED",
        "APPROVAL_RESOLVED",
        "GRANT_CREATED",
        "RUN_DELIVERED",
        "TURN_STARTED",
        "MESSAGE",
        "NOTICE",
        "run.",
    } <= set(named)


def test_every_event_a_template_compares_is_a_member() -> None:
    compared = {
        m.group(1) for path in (ROOT / "templates").rglob("*.html") for m in re.finditer(r'\bev == "([^"]+)"', path.read_text())
    }
    assert compared, "the run page compares events (templates/runs/run_detail.html)"
    assert compared <= VALUES, compared - VALUES


def test_each_finished_status_has_its_event() -> None:
    assert {Event(f"run.{status}") for status in Run.FINISHED} == {Event.RUN_COMPLETED, Event.RUN_FAILED, Event.RUN_CANCELLED}
    with pytest.raises(ValueError):
        Event("run.running")


HELLO = """awk 'BEGIN { print "hello" > "hello.txt" }'"""
ECHO = {"steps": [{"tool": "bash", "input": {"command": HELLO}}, {"message": "All done."}]}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("standard_review_default")
async def test_a_scripted_runs_activities_are_all_members(api: Any, worker: Any) -> None:
    approved = await start_run(api, ECHO)
    response = await decide(api, await pending_approval(api, approved["id"]), "approve")
    assert response.status_code == HTTPStatus.OK, response.content
    denied = await start_run(api, ECHO, run_policy={"approvals": {"on_reject": "abort"}})
    response = await decide(api, await pending_approval(api, denied["id"]), "deny", reason="Not today.")
    assert response.status_code == HTTPStatus.OK, response.content
    assert (await finished(approved["id"])).status == "completed"
    assert (await finished(denied["id"])).status == "failed"

    written = await sync_to_async(events)(approved["id"]) + await sync_to_async(events)(denied["id"])
    assert set(written) <= VALUES, set(written) - VALUES
    assert {
        Event.RUN_CREATED,
        Event.TURN_STARTED,
        Event.TOOL_REQUESTED,
        Event.APPROVAL_RESOLVED,
        Event.TOOL_FINISHED,
        Event.MESSAGE,
        Event.RUN_COMPLETED,
        Event.RUN_FAILED,
    } <= set(written)
