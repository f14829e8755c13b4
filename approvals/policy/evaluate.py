"""Deciding one tool request: the run's limits, then the policy's decision (`decide.py`: tools, commands, edits,
reads, classes, default), then the session's grants, which may turn an `ask` into `allow`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from .classes import classify_tool, classify_words, most_severe
from .decide import decide_request
from .grants import covering_grant, validate_grant
from .paths import PathContext
from .request import validate_request
from .rules import CompiledPolicy
from .shell import parse_script
from .verdicts import ABORT, ALLOW, ASK, PathUse, RunView, Segment, Verdict

__all__ = ["PathContext", "PathUse", "RunView", "Segment", "Verdict", "classify", "evaluate"]

_NO_RUN = RunView()


def classify(request: Mapping[str, Any]) -> str | None:
    """The side-effect class of a request's commands or tool (paths aside); for bash the
    most severe over its commands."""
    req = validate_request(request)
    if req["tool"] == "bash":
        script = parse_script(req["input"]["command"])
        return most_severe(classify_words(c.words) for c in script.commands)
    return classify_tool(req["tool"])


def _limits(policy: CompiledPolicy, view: RunView) -> Verdict | None:
    if policy.max_tool_calls is not None and view.tool_calls + 1 > policy.max_tool_calls:
        return Verdict(ABORT, f"The run reached its limit of {policy.max_tool_calls} tool calls.",
                       "limits.max_tool_calls")
    if policy.max_denials is not None and view.denials >= policy.max_denials:
        return Verdict(ABORT, f"The run reached its limit of {policy.max_denials} denied requests.",
                       "limits.max_denials")
    return None


def evaluate(
    policy: CompiledPolicy,
    request: Mapping[str, Any],
    *,
    run_view: RunView | None = None,
    grants: Sequence[Mapping[str, Any]] = (),
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
    verdict, script = decide_request(policy, req, paths, view.floor)
    if verdict.decision != ASK or not checked_grants:
        return verdict
    grant = covering_grant(checked_grants, req, verdict, script)
    if grant is None:
        return verdict
    segments = tuple(
        s if s.decision == ALLOW else replace(s, decision=ALLOW, rule="grant", reason="Allowed by a session grant.")
        for s in verdict.segments
    )
    match = f" `{grant['match']}`" if "match" in grant else ""
    return Verdict(ALLOW, f"Allowed by the session grant for {grant['tool']}{match}.", "grant",
                   segments, verdict.side_effect_class, grant, verdict.paths, verdict.floors)
