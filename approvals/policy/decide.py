"""Deciding one tool request by the policy alone: tools, commands, edits, reads, classes,
default, with the floors. The run's limits and the session's grants come on top
(`evaluate.py`); a grant is checked against this decision under `default: ask` (`grants.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .classes import EDIT_TOOLS, READ_TOOLS, REMOTE, classify_tool, is_bookkeeping
from .command import Script
from .decisions import fallback
from .hosts import metadata_service
from .network import DEFAULT_NETWORK, network_decide
from .path_eval import decide_edit, decide_read, read_tool_path
from .paths import PathContext, Resolver, default_context
from .request import NETWORK_TOOL, edit_path, move_path, network_target
from .rules import CompiledPolicy
from .script_eval import decide_script
from .verdicts import ALLOW, ASK, DENY, Verdict

FETCH_TOOLS = frozenset({"webFetch", "WebFetch", "webfetch"})
# In a bash request's input: the agent asks to run the command outside its sandbox.
ESCAPE_FLAG = "outside_sandbox"


def context_of(req: Mapping[str, Any], paths: PathContext | None) -> PathContext:
    return paths if paths is not None else default_context(req.get("cwd"))


def decide_request(policy: CompiledPolicy, req: Mapping[str, Any], paths: PathContext | None, floor: bool = False
                   ) -> tuple[Verdict, Script | None]:
    """The policy's verdict on a validated request, and the script it read (bash), before the
    run's limits and the session's grants (`evaluate`)."""
    tool = req["tool"]
    cwd = req.get("cwd") or (paths.workspace if paths is not None else None) or context_of(req, None).workspace
    resolver: list[Resolver] = []

    def make_resolver() -> Resolver:
        # made on the first path a request names: most commands name none
        if not resolver:
            resolver.append(Resolver(context_of(req, paths)))
        return resolver[0]

    if tool in FETCH_TOOLS and metadata_service(str(req["input"].get("url") or "")) and \
            policy.tools.get(tool, (ASK,))[0].severity < DENY.severity:
        # a floor, as for `curl` (hosts.py): a GET there returns this machine's credentials
        url = str(req["input"].get("url"))
        return Verdict(ASK, f"`{tool}` of `{url[:200]}` reaches the cloud's metadata service, which hands out "
                            "this machine's credentials, so a person decides.", "commands.network", (),
                       classify_tool(tool), floors=("commands.network",)), None
    if tool == "bash" and req["input"].get(ESCAPE_FLAG) not in (None, False):
        # (any value but absent or false: `"true"` or 1 must not slip through as "no escape")
        # an agent's own request to run a command outside its sandbox (Claude Code's
        # `dangerouslyDisableSandbox`): refused with the reason, never asked (issue 28)
        return Verdict(DENY, f"`{str(req['input'].get('command'))[:200]}` asks to run outside the sandbox, which "
                             "Gatehouse never grants: run it inside (without asking to leave the sandbox).",
                       "sandbox.escape", (), classify_tool(tool)), None
    if tool == NETWORK_TOOL:
        # a connection through the egress proxy: the `network` section alone decides it
        # (its deny, the floor of non-public addresses, its allow, its default)
        host, port, addresses = network_target(req)
        found = network_decide(policy.network or DEFAULT_NETWORK, host, port, addresses)
        return Verdict(found.decision, found.reason, found.rule or "network.floor", (), REMOTE), None
    if tool in policy.tools:
        decision, reason = policy.tools[tool]
        return Verdict(decision, reason or f"The policy decides `{tool}` outright: {decision}.",
                       f"tools.{tool}", (), classify_tool(tool)), None
    named = policy.tool_classes.get(tool)
    if named is not None:
        # the administrator's class for a tool the rule sets do not read (an MCP tool)
        decision, rule, reason = fallback(policy, None, named, f"`{tool}`")
        return Verdict(decision, reason, rule, (), named), None
    if is_bookkeeping(tool):
        return Verdict(ALLOW, f"`{tool}` is bookkeeping, allowed unless the policy's tools say otherwise.",
                       "bookkeeping", (), "read-only"), None
    if tool == "bash":
        return decide_script(policy, req["input"]["command"], cwd, make_resolver, floor)
    if tool in EDIT_TOOLS:
        return decide_edit(policy, make_resolver(), tool, edit_path(req), cwd, move_path(req)), None
    cls = classify_tool(tool)
    path = read_tool_path(req["input"], tool) if tool in READ_TOOLS else None
    if path is not None:
        return decide_read(policy, make_resolver(), tool, path, cwd, cls), None
    decision, rule, reason = fallback(policy, None, cls, f"`{tool}`")
    return Verdict(decision, reason, rule, (), cls), None
