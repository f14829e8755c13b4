"""A tiny ACP agent that asks the client to fill in a form (`elicitation/create`, unstable in
ACP), for the ACP driver's elicitation path: no installed agent sends one offline.

    python tests/fakes/acp_form_agent.py FORM_JSON

At each prompt it sends the form (FORM_JSON: `{"message", "requestedSchema"}`, or `{"url"}`
for a URL-mode elicitation) and says the client's reply back as an agent message
(`ELICITATION-REPLY {json}`), then ends the turn. Built on the `acp` SDK's agent side, the
same package the driver's client side uses.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from acp import run_agent, text_block, update_agent_message
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ElicitationFormSessionMode,
    ElicitationSchema,
    ElicitationUrlSessionMode,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
)


class FormAgent:
    def __init__(self, form: dict[str, Any]) -> None:
        self.form = form
        self.conn: Client | None = None

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version, agent_capabilities=AgentCapabilities())

    async def new_session(self, cwd: str, mcp_servers: Any = None, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="form-session")

    async def prompt(self, prompt: Any, session_id: str, **kwargs: Any) -> PromptResponse:
        assert self.conn is not None
        mode: Any
        if self.form.get("url"):
            mode = ElicitationUrlSessionMode(session_id=session_id, elicitation_id="e-1", url=self.form["url"], mode="url")
        else:
            schema = ElicitationSchema.model_validate(self.form["requestedSchema"])
            mode = ElicitationFormSessionMode(session_id=session_id, requested_schema=schema, mode="form")
        try:
            reply = await self.conn.create_elicitation(message=self.form.get("message") or "Fill this in", mode=mode)
            said = reply.model_dump(mode="json", by_alias=True, exclude_none=True)
        except Exception as exc:  # the client's error, said back
            said = {"error": str(exc)}
        await self.conn.session_update(session_id, update_agent_message(text_block("ELICITATION-REPLY " + json.dumps(said, sort_keys=True))))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(run_agent(FormAgent(json.loads(sys.argv[1])), use_unstable_protocol=True))
