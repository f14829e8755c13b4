"""The escape suite for the scripted driver: every attempt of tests/sandbox/escapes.py as an
approved shell command, and the file tools aimed at the workspace's git hooks and config.
With the floor none succeeds; the control test turns the floor off and sees each succeed
(so the suite can fail)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.flow import finished, start_run
from tests.sandbox.conftest import AUTO_APPROVE
from tests.sandbox.escapes import Target, breaches, commands

pytestmark = [pytest.mark.django_db(transaction=True)]

TIMEOUT = 120
FILE_TOOLS = {
    "write tool on .git/hooks": {"tool": "write", "input": {"file_path": ".git/hooks/post-checkout", "content": "#!/bin/sh\necho pwned\n"}},
    "edit tool on .git/config": {"tool": "edit", "input": {"file_path": ".git/config", "old_string": "[core]",
                                                           "new_string": "[core]\n\tfsmonitor = echo pwned"}},
}


def scenario(t: Target) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"tool": "bash", "input": {"command": command}} for command in commands(t).values()]
    return {"steps": [*steps, *FILE_TOOLS.values(), {"message": "done"}]}


def file_tool_breaches(t: Target) -> list[str]:
    found = []
    if (t.workspace / ".git" / "hooks" / "post-checkout").exists():
        found.append("write tool on .git/hooks")
    if "fsmonitor" in (t.workspace / ".git" / "config").read_text():
        found.append("edit tool on .git/config")
    return found


async def run_attempts(api: Any, t: Target, policy: str) -> None:
    run = await start_run(api, scenario(t), policy=policy, workspace=str(t.workspace), run_policy=AUTO_APPROVE)
    done = await finished(run["id"], timeout=TIMEOUT)
    assert done.status == "completed", (done.failure_reason, done.failure_detail)


async def test_no_escape_succeeds_from_a_scripted_run(api: Any, worker: Any, escape: Target, allow_everything: str) -> None:
    await run_attempts(api, escape, allow_everything)
    assert breaches(escape) + file_tool_breaches(escape) == []


async def test_without_the_floor_every_attempt_succeeds(
    api: Any, worker: Any, escape: Target, allow_everything: str, settings: Any
) -> None:
    """The control: GATEHOUSE_SANDBOX=off, the same run, every attempt gets through."""
    settings.GATEHOUSE_SANDBOX = "off"
    await run_attempts(api, escape, allow_everything)
    expected = [name for name in commands(escape) if (name != "copy the database" or escape.database is not None)
                and (name != "read /etc/shadow" or os.getuid() == 0)]
    assert breaches(escape) == expected
    assert file_tool_breaches(escape) == list(FILE_TOOLS)
