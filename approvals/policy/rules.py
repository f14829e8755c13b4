"""The rule policy document: validation, compilation (once per version), DefaultPolicy."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .canonical import canonical_json, policy_version
from .classes import CLASSES
from .errors import PolicyError, json_type
from .options import Invocation
from .patterns import CommandMatcher, PathMatcher, compile_command, glob_regex

DECISIONS = ("allow", "ask", "deny", "abort")
RULE_DECISIONS = ("deny", "ask", "allow")  # most restrictive first
SEVERITY = {"allow": 0, "ask": 1, "deny": 2, "abort": 3}

DEFAULT_POLICY: dict = {
    "classes": {"read-only": "allow", "local-mutation": "allow", "outside-workspace": "ask",
                "remote-mutation": "ask", "destructive": "deny", "protected": "deny"},
    "default": "ask",
}

_TOP_KEYS = ("commands", "edits", "reads", "tools", "classes", "limits", "default")
_RULESET_KEYS = ("allow", "ask", "deny", "default")
_LIMIT_KEYS = ("max_tool_calls", "max_denials")


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: str
    reason: str | None


@dataclass(frozen=True)
class RuleSet:
    name: str  # "commands", "edits" or "reads"
    rules: Mapping[str, tuple[Rule, ...]]  # decision -> rules, in document order
    default: str | None
    # every rule in one matcher, most restrictive first: one call answers a request
    combined: Any = None
    order: tuple[tuple[str, int], ...] = ()
    labels: Mapping[tuple[str, int], str] = field(default_factory=dict)  # (decision, index) -> "commands.deny[0]"

    def match_command(self, inv: Invocation, cls: str | None | bool = False
                      ) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
        """((decision, index) of the most restrictive certain match, (decision, index) of a
        more restrictive rule a run-time word could complete) for one command (`cls`: its
        side-effect class, when known)."""
        position, maybe = self.combined.first(inv, cls)
        order = self.order
        return (None if position is None else order[position]), (None if maybe is None else order[maybe])

    def exact_allow(self, inv: Invocation) -> tuple[str, int] | None:
        """An allow rule that names exactly this command (lifts the interpreter floor)."""
        allows = [pos for pos, (decision, _) in enumerate(self.order) if decision == "allow"]
        pos = self.combined.exact(inv, allows)
        return None if pos is None else self.order[pos]

    def match_path(self, allow_candidates: tuple[str, ...], restrictive: tuple[str, ...]) -> tuple[str, int] | None:
        """(decision, index) of the most restrictive glob that matches a path."""
        hit = self.combined.first_path(allow_candidates, restrictive)
        return None if hit is None else self.order[hit]


@dataclass(frozen=True)
class CompiledPolicy:
    version: str
    document: Mapping
    commands: RuleSet | None = field(default=None, repr=False)
    edits: RuleSet | None = field(default=None, repr=False)
    reads: RuleSet | None = field(default=None, repr=False)
    tools: Mapping[str, tuple[str, str | None]] = field(default_factory=dict, repr=False)
    classes: Mapping[str, str] | None = field(default=None, repr=False)
    max_tool_calls: int | None = None
    max_denials: int | None = None
    default: str = "ask"


def _invalid(message: str, field: str, value: Any) -> PolicyError:
    return PolicyError("invalid_policy", message, field=field, value=value)


def _decision(value: Any, field: str) -> str:
    if value not in DECISIONS:
        raise _invalid(f"{field} must be one of {', '.join(DECISIONS)}", field, value)
    return value


def _mapping(value: Any, field: str, allowed: tuple[str, ...] | None) -> Mapping:
    if not isinstance(value, Mapping):
        raise _invalid(f"{field or 'the policy'} must be an object", field, value)
    if allowed is not None:
        for key in value:
            if key not in allowed:
                where = f"{field}.{key}" if field else key
                raise _invalid(f"unknown field {where!r} (expected one of {', '.join(allowed)})", where, value[key])
    return value


def _rules(entries: Any, field: str, check) -> tuple[Rule, ...]:
    if not isinstance(entries, list):
        raise _invalid(f"{field} must be a list of patterns", field, entries)
    out = []
    for i, entry in enumerate(entries):
        where = f"{field}[{i}]"
        if isinstance(entry, Mapping):
            _mapping(entry, where, ("match", "reason"))
            pattern = entry.get("match")
            reason = entry.get("reason")
            if reason is not None and (not isinstance(reason, str) or not reason.strip()):
                raise _invalid(f"{where}.reason must be a non-empty string", f"{where}.reason", reason)
            pfield = f"{where}.match"
        else:
            pattern, reason, pfield = entry, None, where
        if not isinstance(pattern, str) or not pattern.strip():
            raise _invalid(f"{pfield} must be a non-empty pattern string", pfield, pattern)
        try:
            check(pattern)
        except ValueError as exc:
            raise _invalid(f"{pfield}: {exc}", pfield, pattern) from None
        out.append(Rule(pattern, reason))
    return tuple(out)


def _ruleset(name: str, value: Any, check, matcher_type) -> RuleSet:
    section = _mapping(value, name, _RULESET_KEYS)
    rules = {}
    for decision in RULE_DECISIONS:
        rules[decision] = _rules(section.get(decision, []), f"{name}.{decision}", check)
    default = section.get("default")
    if default is not None:
        _decision(default, f"{name}.default")
    order = tuple((decision, i) for decision in RULE_DECISIONS for i in range(len(rules[decision])))
    combined = matcher_type([rules[d][i].pattern for d, i in order], [d == "allow" for d, _ in order])
    labels = {(d, i): f"{name}.{d}[{i}]" for d, i in order}
    return RuleSet(name, rules, default, combined, order, labels)


def _limit(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _invalid(f"{field} must be a whole number, 0 or more", field, value)
    return int(value)


def _build(document: Mapping, version: str) -> CompiledPolicy:
    doc = _mapping(document, "", _TOP_KEYS)
    commands = edits = reads = None
    if "commands" in doc:
        commands = _ruleset("commands", doc["commands"], compile_command, CommandMatcher)
    if "edits" in doc:
        edits = _ruleset("edits", doc["edits"], glob_regex, PathMatcher)
    if "reads" in doc:
        reads = _ruleset("reads", doc["reads"], glob_regex, PathMatcher)
    tools: dict[str, tuple[str, str | None]] = {}
    for name, entry in _mapping(doc.get("tools", {}), "tools", None).items():
        where = f"tools.{name}"
        if not isinstance(name, str) or not name.strip():
            raise _invalid("tool names must be non-empty strings", where, name)
        if isinstance(entry, Mapping):
            _mapping(entry, where, ("decision", "reason"))
            reason = entry.get("reason")
            if reason is not None and (not isinstance(reason, str) or not reason.strip()):
                raise _invalid(f"{where}.reason must be a non-empty string", f"{where}.reason", reason)
            tools[name] = (_decision(entry.get("decision"), f"{where}.decision"), reason)
        else:
            tools[name] = (_decision(entry, where), None)
    classes = None
    if "classes" in doc:
        section = _mapping(doc["classes"], "classes", CLASSES)
        classes = {name: _decision(d, f"classes.{name}") for name, d in section.items()}
    limits = _mapping(doc.get("limits", {}), "limits", _LIMIT_KEYS)
    max_calls = _limit(limits["max_tool_calls"], "limits.max_tool_calls") if "max_tool_calls" in limits else None
    max_denials = _limit(limits["max_denials"], "limits.max_denials") if "max_denials" in limits else None
    default = _decision(doc.get("default", "ask"), "default")
    return CompiledPolicy(
        version=version,
        document=copy.deepcopy(dict(doc)),
        commands=commands,
        edits=edits,
        reads=reads,
        tools=tools,
        classes=classes,
        max_tool_calls=max_calls,
        max_denials=max_denials,
        default=default,
    )


_CACHE: OrderedDict[str, CompiledPolicy] = OrderedDict()
_CACHE_SIZE = 256
_LOCK = threading.Lock()


def compile_policy(document: Mapping, *, version: str | None = None) -> CompiledPolicy:
    """Validate and compile a rule policy; compiled once per version (an LRU of 256).

    `version`, when the caller holds the document's `policy_version` as recorded with it
    (a run's snapshot, written from `compiled.version` in the same transaction), finds a
    compiled hit without hashing the document again; a miss hashes and compiles as usual.
    The caller vouches for the pair: pass only a version computed from this document.
    Refuses with `invalid_policy` naming the field path (`commands.deny[1]`) and value.
    """
    if version:
        with _LOCK:
            hit = _CACHE.get(version)
            if hit is not None:
                _CACHE.move_to_end(version)
                return hit
    if not isinstance(document, Mapping):
        raise _invalid("the policy must be a JSON object", "", json_type(document))
    try:
        version = policy_version(document)
    except PolicyError as exc:
        raise _invalid(f"the policy is not JSON: {exc.message}", "", exc.value) from None
    with _LOCK:
        hit = _CACHE.get(version)
        if hit is not None:
            _CACHE.move_to_end(version)
            return hit
    compiled = _build(document, version)
    with _LOCK:
        _CACHE[version] = compiled
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled


def compile_cache_info() -> dict:
    with _LOCK:
        return {"size": len(_CACHE), "max": _CACHE_SIZE}


def clear_compile_cache() -> None:
    with _LOCK:
        _CACHE.clear()


__all__ = ["DEFAULT_POLICY", "CompiledPolicy", "compile_policy", "canonical_json"]
