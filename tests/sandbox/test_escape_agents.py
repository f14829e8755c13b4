"""The escape suite for the real CLIs that run commands: Claude Code, Codex, OpenCode and
claude-code-acp, each driven by its fake model server (tests/fakes/) to run a
representative subset of tests/sandbox/escapes.py as approved commands. With the floor
none succeeds.

The subsets are attempts each CLI does not stop by itself, so that without the floor
they succeed (Codex's own sandbox, on by default, keeps its commands from writing outside
the workspace, from the network and from other processes: its subset is what it lets
through, reading the server's secrets). `GATEHOUSE_ESCAPE_CONTROL=1` runs the same tests
with the floor off and asserts every attempt of the subset succeeds: the check that each
test can fail (docs/sandbox.md gives the last result).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from tests.drivers import acp_agents
from tests.drivers.e2e import finished
from tests.drivers.test_agents_e2e import claude_agent, codex_agent
from tests.sandbox.conftest import AUTO_APPROVE
from tests.sandbox.escapes import Target, breaches, commands

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agents]

CONTROL = os.environ.get("GATEHOUSE_ESCAPE_CONTROL") == "1"
TIMEOUT = 240

SUBSETS = {
    "claude-code": ["write through a symlink", "write Gatehouse's checkout", "read the worker's environment", "read the secret key",
                    "connect with curl", "signal a process outside", "leave a process running", "write .git/hooks"],
    "codex": ["read the secret key", "copy the database", "write another run's workspace", "connect to a host Unix socket"],
    # (OpenCode's bash tool asks its own `external_directory` permission for paths outside
    # the project, which it then refuses: writes and reads outside are not in its subset.)
    "opencode": ["connect with bash /dev/tcp", "connect with curl", "signal a process outside", "write .git/config",
                 "write .git/hooks", "leave a process running"],
    "claude-code-acp": ["write through a symlink", "read the worker's environment", "connect with a Python socket",
                        "signal a process outside", "write .git/hooks"],
}


@dataclass
class Driven:
    """A real CLI, its driver and options, and how its fake model asks for a command."""

    driver: str
    options: dict[str, Any]
    command: Callable[[str], Any]
    say: Callable[[str], Any]
    script: Callable[..., None]


def _driven(name: str, settings: Any) -> Iterator[Driven]:
    if name in ("claude-code", "codex"):
        for agent in (claude_agent if name == "claude-code" else codex_agent)(settings):
            yield Driven(agent.driver, {}, agent.command, agent.say, agent.script)
        return
    driver, acp = ("acp", "claude-code-acp") if name == "claude-code-acp" else ("opencode", "")
    with acp_agents.agent_under_test(driver, acp) as agent:
        values = agent.settings()
        settings.GATEHOUSE_AGENT_ENV_VALUES = values["env_values"]
        if not agent.claude:
            settings.GATEHOUSE_OPENCODE_BIN = values["opencode_bin"]
            settings.GATEHOUSE_OPENCODE_BASE_URL = values["opencode_base_url"]
            settings.GATEHOUSE_OPENCODE_MODEL = values["opencode_model"]
            settings.GATEHOUSE_OPENCODE_ENV_KEY = values["opencode_env_key"]
        yield Driven(agent.driver, agent.options, agent.command, agent.say, agent.script)


@pytest.fixture(params=sorted(SUBSETS))
def driven(request: Any, settings: Any) -> Iterator[tuple[str, Driven]]:
    for found in _driven(request.param, settings):
        yield request.param, found


async def test_no_escape_succeeds_from_a_real_cli(
    api: Any, worker: Any, escape: Target, allow_everything: str, driven: tuple[str, Driven], settings: Any
) -> None:
    name, agent = driven
    subset = [a for a in SUBSETS[name] if a != "copy the database" or escape.database is not None]
    if CONTROL:
        settings.GATEHOUSE_SANDBOX = "off"
    attempts = commands(escape)
    agent.script(*[agent.command(f"{attempts[a]} ; touch ran-{i}") for i, a in enumerate(subset)], agent.say("All done."))
    body = {"driver": agent.driver, "prompt": "Run the scripted commands.", "workspace": str(escape.workspace),
            "policy": allow_everything, "run_policy": AUTO_APPROVE, **({"options": agent.options} if agent.options else {})}
    response = await sync_to_async(api.post)("/api/v1/runs/", body, format="json")
    assert response.status_code == 201, response.content
    done = await finished(response.json()["id"], timeout=TIMEOUT)
    assert done.status == "completed", (done.failure_reason, done.failure_detail)
    found = [b for b in breaches(escape) if b in subset]
    # Every attempt ran (an attempt that never ran would look blocked).
    assert sorted(p.name for p in escape.workspace.glob("ran-*")) == [f"ran-{i}" for i in range(len(subset))]
    if CONTROL:
        assert sorted(found) == sorted(subset), f"without the floor these did not succeed: {sorted(set(subset) - set(found))}"
    else:
        assert found == []
        assert breaches(escape) == []


def test_every_subset_names_known_attempts(tmp_path: Path) -> None:
    from tests.sandbox.escapes import Listener

    listener = Listener()
    try:
        t = Target(workspace=tmp_path, outside=tmp_path, other_workspace=tmp_path, checkout_file=tmp_path / "x",
                   secret_key=tmp_path / "k", database=None, canary="", listener=listener, unix_service=listener,
                   unix_path=tmp_path / "s", victim=SimpleNamespace(pid=1))  # type: ignore[arg-type]
        names = set(commands(t))
    finally:
        listener.close()
    for subset in SUBSETS.values():
        assert set(subset) <= names
