"""A session's next run continues the agent's own conversation (a follow-up turn).

The agent homes belong to the session, so the second run's CLI finds the first run's
conversation and resumes it with the new prompt: the model receives the earlier turn.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.drivers.e2e import finished, start
from tests.drivers.test_agents_e2e import Agent, agent  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.agents]


async def test_a_follow_up_run_continues_the_agents_conversation(api: Any, worker: Any, agent: Agent, workspace: Path) -> None:  # noqa: F811
    agent.script(agent.say("I will remember the word banana."))
    first = await start(api, agent, workspace, prompt="Remember the secret word: banana.")
    done = await finished(first["id"])
    assert done.status == "completed", done.failure_reason

    agent.script(agent.say("The word was banana."))
    second = await start(api, agent, workspace, prompt="What was the secret word?", session=first["session"])
    assert second["session"] == first["session"]
    done = await finished(second["id"])
    assert done.status == "completed", done.failure_reason

    bodies = agent.server.message_requests if agent.driver == "claude-code" else list(agent.server.requests)
    last = json.dumps(bodies[-1])
    # The request that answered the follow-up carried the first run's prompt and reply.
    assert "Remember the secret word: banana." in last
    assert "What was the secret word?" in last
    assert "I will remember the word banana." in last
