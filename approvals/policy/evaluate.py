"""Deciding one tool request: tools, commands, edits, reads, classes, default, limits, grants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from .classes import EDIT_TOOLS, READ_TOOLS, REMOTE, classify_tool, classify_words, is_bookkeeping, most_severe
from .decisions import fallback
from .grants import covering_grant, validate_grant
from .hosts import metadata_service
from .network import DEFAULT_NETWORK, network_decide
from .path_eval import decide_edit, decide_read, read_tool_path
from .paths import PathContext, Resolver, default_context
from .request import NETWORK_TOOL, edit_path, move_path, network_target, validate_request
from .rules import CompiledPolicy
from .script_eval import decide_script
from .shell import parse_script
from .verdicts import PathUse, RunView, Segment, Verdict

FETCH_TOOLS = frozenset({"webFetch", "WebFetch", "webfetch"})
# In a bash request's input: the agent asks to run the command outside its sandbox.
ESCAPE_FLAG = "outside_sandbox"

__all__ = ["PathContext", "PathUse", "RunView", "Segment", "Verdict", "classify", "evaluate"]

_NO_RUN = RunView()


def classify(request: Mapping) -> str | None:
    """The side-effect class of a request's commands or tool (paths aside); for bash the
    most severe over its commands."""
    req = validate_request(request)
    if req["tool"] == "bash":
        script = parse_script(req["input"]["command"])
        return most_severe(classify_words(c.words) for c in script.commands)
    return classify_tool(req["tool"])


def _limits(policy: CompiledPolicy, view: RunView) -> Verdict | None:
    if policy.max_tool_calls is not None and view.tool_calls + 1 > policy.max_tool_calls:
        return Verdict("abort", f"The run reached its limit of {policy.max_tool_calls} tool calls.",
                       "limits.max_tool_calls")
    if policy.max_denials is not None and view.denials >= policy.max_denials:
        return Verdict("abort", f"The run reached its limit of {policy.max_denials} denied requests.",
                       "limits.max_denials")
    return None


def context_of(req: Mapping, paths: PathContext | None) -> PathContext:
    return paths if paths is not None else default_context(req.get("cwd"))


def _decide(policy: CompiledPolicy, req: Mapping, paths: PathContext | None, floor: bool = False
            ) -> tuple[Verdict, object]:
    tool = req["tool"]
    cwd = req.get("cwd") or (paths.workspace if paths is not None else None) or context_of(req, None).workspace
    resolver: list[Resolver] = []

    def make_resolver() -> Resolver:
        # made on the first path a request names: most commands name none
        if not resolver:
            resolver.append(Resolver(context_of(req, paths)))
        return resolver[0]

    if tool in FETCH_TOOLS and metadata_service(str(req["input"].get("url") or "")) and \
            policy.tools.get(tool, ("ask",))[0] not in ("deny", "abort"):
        # a floor, as for `curl` (hosts.py): a GET there returns this machine's credentials
        url = str(req["input"].get("url"))
        return Verdict("ask", f"`{tool}` of `{url[:200]}` reaches the cloud's metadata service, which hands out "
                              "this machine's credentials, so a person decides.", "commands.network", (),
                       classify_tool(tool), floors=("commands.network",)), None
    if tool == "bash" and req["input"].get(ESCAPE_FLAG) not in (None, False):
        # (any value but absent or false: `"true"` or 1 must not slip through as "no escape")
        # an agent's own request to run a command outside its sandbox (Claude Code's
        # `dangerouslyDisableSandbox`): refused with the reason, never asked (issue 28)
        return Verdict("deny", f"`{str(req['input'].get('command'))[:200]}` asks to run outside the sandbox, which "
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
        return Verdict("allow", f"`{tool}` is bookkeeping, allowed unless the policy's tools say otherwise.",
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


def evaluate(
    policy: CompiledPolicy,
    request: Mapping,
    *,
    run_view: RunView | None = None,
    grants: Sequence[Mapping] = (),
    paths: PathContext | None = None,
) -> Verdict:
    """Decide one canonical request. Order: limits, `tools`, bookkeeping, the rule set of
    the tool (commands for bash, edits for the edit tools, reads for the read tools),
    classes, default, with the floors of paths, interpreters and expansions; then session
    grants may turn an `ask` (never a `deny` or `abort`, never a protected path) into
    `allow`.

    `run_view.floor`: an OS sandbox floor holds the run, so the policy's `in_floor` section
    applies (its classes, default, `unverified`, and `code`: whether code the policy cannot
    read runs unasked), and what a program model does not recognise is decided by the
    `unverified` setting (`unverified.py`); without a floor it is asked about. `paths` says where the run works (its workspace, homes, protected directories); by
    default the request's `cwd` is the workspace and the process's HOME the home.
    """
    req = validate_request(request)
    checked_grants = [validate_grant(g) for g in grants] if grants else ()
    view = run_view or _NO_RUN
    if view.floor and policy.in_floor is not None:
        policy = policy.in_floor  # the policy's `in_floor` section applies
    limited = _limits(policy, view)
    if limited is not None:
        return limited
    verdict, script = _decide(policy, req, paths, view.floor)
    if verdict.decision != "ask" or not checked_grants:
        return verdict
    grant = covering_grant(checked_grants, req, verdict, script)
    if grant is None:
        return verdict
    segments = tuple(
        s if s.decision == "allow" else replace(s, decision="allow", rule="grant", reason="Allowed by a session grant.")
        for s in verdict.segments
    )
    match = f" `{grant['match']}`" if "match" in grant else ""
    return Verdict("allow", f"Allowed by the session grant for {grant['tool']}{match}.", "grant",
                   segments, verdict.side_effect_class, grant, verdict.paths, verdict.floors)
