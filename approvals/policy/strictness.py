"""Is one rule policy at least as strict as another? (Who may name which policy, issue 34.)

A run may name a rule policy only if it decides every request at least as strictly as
the administrator's default would (or the policy is made available to the user, or the
user may override the policy). Deciding that for every possible request is not
feasible, so `loosenings` answers a sufficient, structural question instead: each
difference between the two documents that *could* let a request through more easily is
named, and a policy with none is at least as strict. It follows how `evaluate` decides
(`tools`, then the rule set of the tool with its most restrictive matching rule, else the
rule set's default, the classes or the policy default, each combined with the floors as
"most restrictive wins"):

1. limits: a candidate limit may only be lower (no limit counts as infinite);
2. rule sets (`commands`, `edits`, `reads`): every deny rule of the baseline is a deny rule
   of the candidate; every ask rule is an ask or deny rule; every allow rule of the
   candidate is an allow rule of the baseline, bounded (`up_to`) no higher. A *new* ask rule
   (one no ask, deny or unbounded allow command rule of the baseline covers: an edit or
   read allow glob holds inside the workspace only) is a loosening where the
   baseline could deny the same request by its fallback (a matching rule replaces the
   fallback: `ask rm` under a policy that denies destructive commands by class lets
   `rm -rf` be approved); a new deny rule never is;
3. fallbacks: for each rule set (and tools with none) and each side-effect class, what
   the candidate falls back to is at least what the baseline falls back to; so are the
   path floors (`outside-workspace`, `protected`);
4. tools: each tool the baseline decides outright is decided at least as strictly (or is
   an `allow` the candidate leaves to its rules); a tool only the candidate names must be
   at least what the baseline could decide for it (the shell, edit and read tools: only
   `deny`; other tools: at least the baseline's default);
5. `unverified` (what a program model does not recognise, inside the floor) is at least as
   strict;
6. `network`: every host the candidate allows the baseline allows (the same entry), every
   baseline deny is a candidate deny, and the candidate's default is at least the baseline's;
7. `in_floor`: the policy as it reads inside the floor (`floor_document`) is compared by
   1–6 and 8 again, and its `code` is at least as strict (ask is stricter than allow);
8. the external decision point (`external`, issue 30.9): the default policy's must be
   consulted, at the same url or command, with no less time to answer and not allowed to
   loosen where the default's is not; one only the candidate names may only tighten (no
   `may_loosen`). Its answers are not known here: a looser point is a loosening;
9. anything else in the documents (`programs`, a section this module does not know) must
   be equal.

Rules are compared by their patterns (reasons and examples aside), so an equivalent
pattern spelled differently is reported: the check is conservative, never the other way.
A property test (`tests/approvals/policy/test_strictness.py`) checks that no request is
decided more loosely by a candidate this reports nothing for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .classes import BOOKKEEPING_TOOLS, CLASS_SEVERITY, CLASSES, EDIT_TOOLS, OUTSIDE, PROTECTED, READ_TOOLS, classify_tool
from .decisions import class_floor, fallback
from .network import DEFAULT_NETWORK, HostRule, NetworkPolicy
from .rules import CompiledPolicy, RuleSet, compile_policy, floor_document
from .verdicts import ALLOW, ASK, DENY, Decision

# The document keys this module compares; any other key must be equal in both.
_COMPARED = frozenset({"commands", "edits", "reads", "tools", "classes", "limits", "default", "unverified", "examples",
                       "network", "in_floor", "external"})
_RULESETS = ("commands", "edits", "reads")
# Tools `evaluate` decides through its rule sets and floors: a candidate naming one outright
# could skip a baseline deny, so only an outright deny (or abort) is never looser.
_RULED_TOOLS = frozenset({"bash"}) | EDIT_TOOLS | READ_TOOLS


def _at_least(candidate: Decision, baseline: Decision) -> bool:
    return candidate.severity >= baseline.severity


def _patterns(ruleset: RuleSet | None, decision: Decision) -> set[str]:
    return {rule.pattern for rule in ruleset.rules.get(decision, ())} if ruleset is not None else set()


def _allow_bounds(ruleset: RuleSet | None) -> dict[str, float]:
    """Each allow rule's pattern -> the rank of the most severe class it allows (`up_to`;
    an unbounded rule allows every class)."""
    bounds: dict[str, float] = {}
    for rule in ruleset.rules.get(ALLOW, ()) if ruleset is not None else ():
        rank = float("inf") if rule.up_to is None else float(CLASS_SEVERITY[rule.up_to])
        bounds[rule.pattern] = max(rank, bounds.get(rule.pattern, rank))
    return bounds


def _fallbacks(policy: CompiledPolicy, ruleset: RuleSet | None) -> dict[str | None, Decision]:
    """What the policy falls back to for each side-effect class (None: no class known). A
    path outside the workspace or protected never gets less than its class floor, whatever
    the fallback says (`path_eval`: the floor and the fallback combine, most restrictive wins)."""
    found = {cls: fallback(policy, ruleset, cls, "")[0] for cls in (*CLASSES, None)}
    for cls in (OUTSIDE, PROTECTED):
        floor = class_floor(policy, cls)
        if floor.worse(found[cls]):
            found[cls] = floor
    return found


def _rule_could_lower(policy: CompiledPolicy, ruleset: RuleSet | None, decision: Decision) -> bool:
    """Whether a rule of `decision` matching a request could decide it more loosely than
    the policy's fallback would (a matching rule replaces the fallback; a path's class
    floor still holds under either)."""
    for cls, fell_back in _fallbacks(policy, ruleset).items():
        matched = decision
        if cls in (OUTSIDE, PROTECTED) and class_floor(policy, cls).worse(matched):
            matched = class_floor(policy, cls)
        if fell_back.worse(matched):
            return True
    return False


def _limit_text(value: int | None) -> str:
    return "no limit" if value is None else str(value)


def _limits(candidate: CompiledPolicy, baseline: CompiledPolicy) -> list[str]:
    found = []
    for name in ("max_tool_calls", "max_denials"):
        mine, theirs = getattr(candidate, name), getattr(baseline, name)
        if theirs is not None and (mine is None or mine > theirs):
            found.append(f"limits.{name}: {_limit_text(mine)} is more than the default policy's {theirs}")
    return found


def _ruleset(name: str, candidate: CompiledPolicy, baseline: CompiledPolicy) -> list[str]:
    mine: RuleSet | None = getattr(candidate, name)
    theirs: RuleSet | None = getattr(baseline, name)
    found = []
    deny, ask, allow = (_patterns(mine, d) for d in (DENY, ASK, ALLOW))
    base_deny, base_ask, base_allow = (_patterns(theirs, d) for d in (DENY, ASK, ALLOW))
    for pattern in sorted(base_deny - deny):
        found.append(f"{name}.deny: `{pattern}` is denied by the default policy but not by this one")
    for pattern in sorted(base_ask - ask - deny):
        found.append(f"{name}.ask: `{pattern}` is asked about by the default policy but not by this one")
    # A new allow rule lets through what the baseline leaves to a stricter fallback (and an
    # allow rule naming a command exactly lifts the interpreter floor: script_eval).
    # A bounded allow rule (`up_to`) is covered only by one of the baseline bounded no lower.
    bounds, base_bounds = _allow_bounds(mine), _allow_bounds(theirs)
    if name == "commands" or _rule_could_lower(baseline, theirs, ALLOW):
        for pattern in sorted(allow):
            if pattern not in base_allow:
                found.append(f"{name}.allow: `{pattern}` is not allowed by a rule of the default policy")
            elif bounds[pattern] > base_bounds[pattern]:
                found.append(f"{name}.allow: `{pattern}` allows more severe classes than the default policy's rule")
    # A new ask rule is covered by a baseline allow rule of the same pattern only where that
    # allow matches every request the ask does: an unbounded command rule. (An edit or read
    # allow glob matches inside the workspace only; an ask glob also outside it.)
    covering = {p for p, bound in base_bounds.items() if bound == float("inf")} if name == "commands" else set()
    if _rule_could_lower(baseline, theirs, ASK):
        for pattern in sorted(ask - base_ask - base_deny - covering):
            found.append(f"{name}.ask: `{pattern}` may ask about a request the default policy denies "
                         f"(by its {name} default or classes)")
    if mine is None and theirs is None:
        return found  # both fall back as the tools outside any rule set do (compared once there)
    return found + _looser_fallbacks(candidate, baseline, mine, theirs, name, "request", "no rule matches")


def _effective(policy: CompiledPolicy, tool: str) -> Decision:
    """What a policy decides for a tool outside the rule sets: its `tools` entry, the class
    it gives the tool, bookkeeping, or the fallback of the tool's own class."""
    if tool in policy.tools:
        return policy.tools[tool][0]
    if tool in policy.tool_classes:
        return fallback(policy, None, policy.tool_classes[tool], "")[0]
    if tool in BOOKKEEPING_TOOLS:
        return ALLOW
    return fallback(policy, None, classify_tool(tool), "")[0]


def _tools(candidate: CompiledPolicy, baseline: CompiledPolicy) -> list[str]:
    found = []
    for tool, (decision, _) in sorted(baseline.tools.items()):
        mine = candidate.tools.get(tool)
        if mine is None and tool in candidate.tool_classes:
            got = _effective(candidate, tool)
            if not _at_least(got, decision):
                found.append(f"tools.{tool}: its class decides {got} here; the default policy decides it outright "
                             f"({decision})")
        elif mine is None:
            if decision != ALLOW:
                found.append(f"tools.{tool}: the default policy decides it outright ({decision}); this one does not")
        elif not _at_least(mine[0], decision):
            found.append(f"tools.{tool}: {mine[0]} is looser than the default policy's {decision}")
    for tool, (decision, _) in sorted(candidate.tools.items()):
        if tool in baseline.tools or tool in BOOKKEEPING_TOOLS:
            continue
        least = DENY if tool in _RULED_TOOLS else _effective(baseline, tool)
        if not _at_least(decision, least):
            found.append(f"tools.{tool}: {decision} skips what the default policy decides for it (at least {least})")
    for tool in sorted((set(candidate.tool_classes) | set(baseline.tool_classes)) - set(candidate.tools)
                       - set(baseline.tools)):
        mine_d, theirs_d = _effective(candidate, tool), _effective(baseline, tool)
        if not _at_least(mine_d, theirs_d):
            found.append(f"tools.{tool}: {mine_d} here (by its class), {theirs_d} under the default policy")
    return found


def _floors(candidate: CompiledPolicy, baseline: CompiledPolicy) -> list[str]:
    found = []
    for cls in (OUTSIDE, PROTECTED):
        mine, theirs = class_floor(candidate, cls), class_floor(baseline, cls)
        if not _at_least(mine, theirs):
            found.append(f"classes.{cls}: a {cls} path is at least {mine} here, at least {theirs} under the default policy")
    return found


def _entry(rule: HostRule) -> tuple[str, int | None]:
    return rule.host, rule.port


def _network(candidate: NetworkPolicy | None, baseline: NetworkPolicy | None) -> list[str]:
    mine, theirs = candidate or DEFAULT_NETWORK, baseline or DEFAULT_NETWORK
    found = []
    allowed = {_entry(rule) for rule in theirs.allow}
    for rule in mine.allow:
        if _entry(rule) not in allowed:
            found.append(f"{rule.label}: `{rule.host}{'' if rule.port is None else f':{rule.port}'}` is allowed here, "
                         "not by the default policy")
    denied = {_entry(rule) for rule in mine.deny}
    for rule in theirs.deny:
        if _entry(rule) not in denied:
            found.append(f"network.deny: `{rule.host}` is denied by the default policy, not here")
    if not _at_least(mine.default, theirs.default):
        found.append(f"network.default: an unlisted host is {mine.default} here, {theirs.default} under the "
                     "default policy")
    return found


def _compared(candidate: Mapping[str, Any], baseline: Mapping[str, Any], where: str) -> list[str]:
    """Points 1–6 and 8 for two documents read the same way (`where`: "" or "in_floor: ")."""
    mine, theirs = compile_policy(candidate), compile_policy(baseline)
    if mine.version == theirs.version:
        return []
    found = _limits(mine, theirs)
    for name in _RULESETS:
        found += _ruleset(name, mine, theirs)
    found += _fallbacks_without_ruleset(mine, theirs)
    found += _tools(mine, theirs) + _floors(mine, theirs) + _external(mine, theirs)
    if not _at_least(mine.unverified, theirs.unverified):
        found.append(f"unverified: {mine.unverified} is looser than the default policy's {theirs.unverified} "
                     "(what a program's model does not recognise, inside the sandbox floor)")
    found += _network(mine.network, theirs.network)
    for key in sorted((set(candidate) | set(baseline)) - _COMPARED):
        if candidate.get(key) != baseline.get(key):
            found.append(f"{key}: differs from the default policy's")
    return [f"{where}{sentence}" for sentence in found]


def loosenings(candidate: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[str]:
    """Each way `candidate` could decide a request more loosely than `baseline`, one
    sentence each (empty: `candidate` is at least as strict). Both documents must be valid
    (`compile_policy` raises a PolicyError otherwise)."""
    found = _compared({k: v for k, v in candidate.items() if k != "in_floor"},
                      {k: v for k, v in baseline.items() if k != "in_floor"}, "")
    if "in_floor" in candidate or "in_floor" in baseline:
        # (the decision point is the gate's, the same in the floor: compared once, above)
        found += _compared({k: v for k, v in floor_document(candidate).items() if k != "external"},
                           {k: v for k, v in floor_document(baseline).items() if k != "external"}, "in_floor: ")
        mine = (candidate.get("in_floor") or {}).get("code", ASK)
        theirs = (baseline.get("in_floor") or {}).get("code", ASK)
        if mine == ALLOW and theirs != ALLOW:
            found.append("in_floor.code: code the policy cannot read runs unasked inside the floor here, "
                         "not under the default policy")
    return list(dict.fromkeys(found))


def _external(candidate: CompiledPolicy, baseline: CompiledPolicy) -> list[str]:
    """The default policy's decision point still has its say, no less (issue 30.9)."""
    mine, theirs = candidate.external, baseline.external
    if theirs is None:
        if mine is not None and mine.may_loosen:
            return [f"external: its decision point ({mine.target}) may turn an ask into an allow (may_loosen); "
                    "the default policy consults none"]
        return []
    if mine is None:
        return [f"external: the default policy's decision point ({theirs.target}) is not consulted by this one"]
    if (mine.url, mine.command) != (theirs.url, theirs.command):
        return [f"external: consults {mine.target}, not the default policy's decision point ({theirs.target})"]
    found = []
    if mine.may_loosen and not theirs.may_loosen:
        found.append("external.may_loosen: its decision point may turn an ask into an allow; the default policy's may not")
    if mine.timeout_ms < theirs.timeout_ms:
        found.append(f"external.timeout_ms: {mine.timeout_ms} ms is less time than the default policy's "
                     f"{theirs.timeout_ms} ms (an answer too late asks a person where it could deny)")
    elif mine.timeout_ms > theirs.timeout_ms and mine.may_loosen:
        found.append(f"external.timeout_ms: {mine.timeout_ms} ms is more time than the default policy's "
                     f"{theirs.timeout_ms} ms for a decision point that may loosen (an answer the default's would "
                     "not wait for may allow)")
    return found


def _fallbacks_without_ruleset(candidate: CompiledPolicy, baseline: CompiledPolicy) -> list[str]:
    """Tools outside the three rule sets (web, MCP, an agent's own) fall back like these."""
    return _looser_fallbacks(candidate, baseline, None, None, "default", "tool", "no rule decides")


def _looser_fallbacks(candidate: CompiledPolicy, baseline: CompiledPolicy, mine: RuleSet | None,
                      theirs: RuleSet | None, label: str, noun: str, unmatched: str) -> list[str]:
    """Each side-effect class whose fallback (with the path floors) is looser in `candidate`."""
    found = []
    base_fb, fb = _fallbacks(baseline, theirs), _fallbacks(candidate, mine)
    for cls, decision in fb.items():
        if not _at_least(decision, base_fb[cls]):
            what = f"a {cls} {noun}" if cls else f"a {noun} of no known class"
            found.append(f"{label}: {what} {unmatched} is {decision} here, {base_fb[cls]} under the default policy")
    return found


__all__ = ["loosenings"]
