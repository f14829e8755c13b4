"""Deciding one tool request: tools, commands, edits, classes, default, limits, grants."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .classes import EDIT_TOOLS, LOCAL, READ_ONLY, classify_tool, classify_words, is_bookkeeping, most_severe
from .grants import covering_grant, validate_grant
from .patterns import path_candidates, words_subject
from .request import edit_path, validate_request
from .rules import SEVERITY, CompiledPolicy, RuleSet
from .shell import SimpleCommand, parse_script


@dataclass(frozen=True)
class RunView:
    """What the run did so far, before this request (limits read it)."""

    tool_calls: int = 0
    denials: int = 0


@dataclass(frozen=True)
class Segment:
    """The verdict on one simple command of a script."""

    command: str
    words: tuple[str, ...]
    side_effect_class: str | None
    decision: str
    rule: str | None
    writes_file: bool = False
    reason: str = ""

    @classmethod
    def _make(cls, command, words, side_effect_class, decision, rule, writes_file, reason) -> Segment:
        # The frozen dataclass __init__ sets fields one by one; evaluate's hot path fills
        # the instance dict at once (same fields, same immutability afterwards).
        obj = object.__new__(cls)
        obj.__dict__.update(command=command, words=words, side_effect_class=side_effect_class,
                            decision=decision, rule=rule, writes_file=writes_file, reason=reason)
        return obj

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "words": list(self.words),
            "side_effect_class": self.side_effect_class,
            "decision": self.decision,
            "rule": self.rule,
            "writes_file": self.writes_file,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Verdict:
    decision: str  # allow | ask | deny | abort
    reason: str
    rule: str
    segments: tuple[Segment, ...] = ()
    side_effect_class: str | None = None
    grant: Mapping | None = None  # the grant that turned ask into allow

    @classmethod
    def _make(cls, decision, reason, rule, segments=(), side_effect_class=None, grant=None) -> Verdict:
        obj = object.__new__(cls)
        obj.__dict__.update(decision=decision, reason=reason, rule=rule, segments=segments,
                            side_effect_class=side_effect_class, grant=grant)
        return obj

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "decision": self.decision,
            "reason": self.reason,
            "rule": self.rule,
            "segments": [s.to_dict() for s in self.segments],
        }
        if self.grant is not None:
            out["grant"] = dict(self.grant)
        return out


_NO_RUN = RunView()


def classify(request: Mapping) -> str | None:
    """The side-effect class of a request; for bash the most severe over its commands."""
    req = validate_request(request)
    if req["tool"] == "bash":
        script = parse_script(req["input"]["command"])
        return most_severe(classify_words(c.words) for c in script.commands)
    return classify_tool(req["tool"])


def _fallback(policy: CompiledPolicy, ruleset: RuleSet | None, cls: str | None, what: str) -> tuple[str, str, str]:
    """(decision, rule, reason) when no rule of the rule set matched."""
    if ruleset is not None and ruleset.default is not None:
        return ruleset.default, f"{ruleset.name}.default", (
            f"No {ruleset.name} rule matches {what}; the {ruleset.name} default is {ruleset.default}.")
    if policy.classes is not None and cls is not None:
        decision = policy.classes.get(cls)
        if decision is None:
            return "deny", f"classes.{cls}", (
                f"{what} is {cls}, and the policy does not map that class, so it is denied.")
        return decision, f"classes.{cls}", f"{what} is {cls}; the policy's classes say {decision}."
    if cls is None:
        return policy.default, "default", f"No rule decides {what}; the policy default is {policy.default}."
    return policy.default, "default", f"No rule decides {what}; the policy default is {policy.default}."


def _rule_reason(ruleset: RuleSet, decision: str, index: int, what: str) -> str:
    rule = ruleset.rules[decision][index]
    if rule.reason:
        return rule.reason
    kind = {"deny": "denied", "ask": "needs approval", "allow": "allowed"}[decision]
    return f"{what} {kind} by the {ruleset.name} rule `{rule.pattern}`."


def _segment(policy: CompiledPolicy, cmd: SimpleCommand) -> Segment:
    cls = classify_words(cmd.words)
    if cmd.writes_file and cls in (None, READ_ONLY):
        cls = LOCAL  # writing a file through a redirection changes the workspace
    what = f"`{cmd.text}`"
    ruleset = policy.commands
    hit = ruleset.match(words_subject(cmd.words)) if ruleset is not None else None
    if ruleset is not None and hit is not None:
        decision, index = hit
        rule = f"commands.{decision}[{index}]"
        reason = _rule_reason(ruleset, decision, index, what)
    else:
        decision, rule, reason = _fallback(policy, ruleset, cls, what)
    if decision == "allow" and cmd.writes_file:
        decision, rule = "ask", "commands.redirect"
        reason = f"{what} writes to a file through a redirection, so a person decides."
    elif decision == "allow" and cmd.dynamic_name:
        decision, rule = "ask", "commands.dynamic"
        reason = f"{what} runs a command whose name is computed at run time, so a person decides."
    return Segment._make(cmd.text, cmd.words, cls, decision, rule, cmd.writes_file, reason)


def _bash(policy: CompiledPolicy, command: str) -> tuple[Verdict, object]:
    script = parse_script(command)
    segments = tuple([_segment(policy, cmd) for cmd in script.commands])
    cls = segments[0].side_effect_class if len(segments) == 1 else most_severe(
        [s.side_effect_class for s in segments])
    if not segments:
        decision, rule, reason = _fallback(policy, policy.commands, None, "an empty script")
        if not script.parsed:
            decision, rule = ("ask", "commands.unparseable") if SEVERITY[decision] < 2 else (decision, rule)
            reason = "The script does not parse as shell, so it is never allowed automatically."
        return Verdict(decision, reason, rule, (), None), script
    worst = segments[0]
    for seg in segments:  # the first of the most severe
        if SEVERITY[seg.decision] > SEVERITY[worst.decision]:
            worst = seg
    if not script.parsed and SEVERITY[worst.decision] < SEVERITY["deny"]:
        return Verdict("ask", "The script does not parse as shell, so it is never allowed automatically.",
                       "commands.unparseable", segments, cls), script
    return Verdict._make(worst.decision, worst.reason, worst.rule or "default", segments, cls), script


def _edit(policy: CompiledPolicy, req: Mapping) -> Verdict:
    path = edit_path(req)
    what = f"{req['tool']} of `{path}`"
    ruleset = policy.edits
    hit = ruleset.match(path_candidates(path, req.get("cwd"))) if ruleset is not None else None
    cls = classify_tool(req["tool"])
    if ruleset is not None and hit is not None:
        decision, index = hit
        return Verdict(decision, _rule_reason(ruleset, decision, index, what), f"edits.{decision}[{index}]",
                       (), cls)
    decision, rule, reason = _fallback(policy, ruleset, cls, what)
    return Verdict(decision, reason, rule, (), cls)


def _limits(policy: CompiledPolicy, view: RunView) -> Verdict | None:
    if policy.max_tool_calls is not None and view.tool_calls + 1 > policy.max_tool_calls:
        return Verdict("abort", f"The run reached its limit of {policy.max_tool_calls} tool calls.",
                       "limits.max_tool_calls")
    if policy.max_denials is not None and view.denials >= policy.max_denials:
        return Verdict("abort", f"The run reached its limit of {policy.max_denials} denied requests.",
                       "limits.max_denials")
    return None


def evaluate(
    policy: CompiledPolicy,
    request: Mapping,
    *,
    run_view: RunView | None = None,
    grants: Sequence[Mapping] = (),
) -> Verdict:
    """Decide one canonical request. Order: limits, `tools`, bookkeeping, the rule set of
    the tool (commands for bash, edits for the edit tools), classes, default; then session
    grants may turn an `ask` (never a `deny` or `abort`) into `allow`."""
    req = validate_request(request)
    checked_grants = [validate_grant(g) for g in grants] if grants else ()
    limited = _limits(policy, run_view or _NO_RUN)
    if limited is not None:
        return limited
    tool = req["tool"]
    script = None
    if tool in policy.tools:
        decision, reason = policy.tools[tool]
        verdict = Verdict(decision, reason or f"The policy decides `{tool}` outright: {decision}.",
                          f"tools.{tool}", (), classify_tool(tool))
    elif is_bookkeeping(tool):
        verdict = Verdict("allow", f"`{tool}` is bookkeeping, allowed unless the policy's tools say otherwise.",
                          "bookkeeping", (), "read-only")
    elif tool == "bash":
        verdict, script = _bash(policy, req["input"]["command"])
    elif tool in EDIT_TOOLS:
        verdict = _edit(policy, req)
    else:
        cls = classify_tool(tool)
        decision, rule, reason = _fallback(policy, None, cls, f"`{tool}`")
        verdict = Verdict(decision, reason, rule, (), cls)
    if verdict.decision != "ask" or not checked_grants:
        return verdict
    grant = covering_grant(checked_grants, req, verdict.segments, script)
    if grant is None:
        return verdict
    segments = tuple(
        s if s.decision == "allow" else replace(s, decision="allow", rule="grant",
                                                reason="Allowed by a session grant.")
        for s in verdict.segments
    )
    match = f" `{grant['match']}`" if "match" in grant else ""
    return Verdict("allow", f"Allowed by the session grant for {grant['tool']}{match}.", "grant",
                   segments, verdict.side_effect_class, grant)
