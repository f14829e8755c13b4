"""The rule policy document: validation, compilation (once per version), DefaultPolicy."""

from __future__ import annotations

import copy
import difflib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .canonical import canonical_json, policy_version
from .classes import CLASSES, EDIT_TOOLS, READ_TOOLS
from .errors import PolicyError, json_type
from .example_requests import check_policy_examples, check_rule_examples
from .external import ExternalPoint, read_external
from .network import NetworkPolicy, read_network
from .options import Invocation
from .pattern_checks import command_pattern_problem, glob_problem
from .patterns import CommandMatcher, PathMatcher, compile_command, glob_regex
from .programs.custom import read_programs
from .verdicts import ALLOW, ASK, DENY, Decision

DECISIONS = tuple(Decision)
RULE_DECISIONS = (DENY, ASK, ALLOW)  # most restrictive first

DEFAULT_POLICY: dict[str, Any] = {
    "classes": {"read-only": "allow", "local-mutation": "allow", "outside-workspace": "ask",
                "remote-mutation": "ask", "destructive": "deny", "protected": "deny"},
    "default": "ask",
}

_TOP_KEYS = ("commands", "edits", "reads", "tools", "classes", "limits", "network", "default", "unverified", "programs",
             "in_floor", "examples", "external")
# What a policy may decide differently when the OS sandbox floor holds the run: the classes
# (merged over the document's), the default, `unverified`, and `code` (code the policy cannot
# read: interpreters, the workspace's own programs, computed names, settings that load code).
_IN_FLOOR_KEYS = ("classes", "default", "unverified", "code")
CODE_DECISIONS = (ALLOW, ASK)
UNVERIFIED_DECISIONS = (ALLOW, ASK, DENY)
_RULE_KEYS = ("match", "reason", "examples", "up_to")
_RULESET_KEYS = ("allow", "ask", "deny", "default")
_LIMIT_KEYS = ("max_tool_calls", "max_denials")


@dataclass(frozen=True, slots=True)
class Rule:
    pattern: str
    reason: str | None
    # an allow command rule's bound: it allows no command of a more severe class (learned rules)
    up_to: str | None = None


@dataclass(frozen=True)
class RuleSet:
    name: str  # "commands", "edits" or "reads"
    rules: Mapping[Decision, tuple[Rule, ...]]  # decision -> rules, in document order
    default: Decision | None
    # every rule in one matcher, most restrictive first: one call answers a request
    combined: Any = None
    order: tuple[tuple[Decision, int], ...] = ()
    labels: Mapping[tuple[Decision, int], str] = field(default_factory=dict)  # (decision, index) -> "commands.deny[0]"

    def match_command(self, inv: Invocation, cls: str | None | bool = False
                      ) -> tuple[tuple[Decision, int] | None, tuple[Decision, int] | None]:
        """((decision, index) of the most restrictive certain match, (decision, index) of a
        more restrictive rule a run-time word could complete) for one command (`cls`: its
        side-effect class, when known)."""
        position, maybe = self.combined.first(inv, cls)
        order = self.order
        return (None if position is None else order[position]), (None if maybe is None else order[maybe])

    def exact_allow(self, inv: Invocation) -> tuple[Decision, int] | None:
        """An allow rule that names exactly this command (lifts the interpreter floor)."""
        allows = [pos for pos, (decision, _) in enumerate(self.order) if decision is ALLOW]
        pos = self.combined.exact(inv, allows)
        return None if pos is None else self.order[pos]

    def match_path(self, allow_candidates: tuple[str, ...], restrictive: tuple[str, ...]
                   ) -> tuple[Decision, int] | None:
        """(decision, index) of the most restrictive glob that matches a path."""
        hit = self.combined.first_path(allow_candidates, restrictive)
        return None if hit is None else self.order[hit]


@dataclass(frozen=True)
class CompiledPolicy:
    version: str
    document: Mapping[str, Any]
    commands: RuleSet | None = field(default=None, repr=False)
    edits: RuleSet | None = field(default=None, repr=False)
    reads: RuleSet | None = field(default=None, repr=False)
    tools: Mapping[str, tuple[Decision, str | None]] = field(default_factory=dict, repr=False)
    # tools the administrator gave a side-effect class (`{"tools": {"mcp__x__y": {"class": …}}}`):
    # decided by the class rules like a command of that class
    tool_classes: Mapping[str, str] = field(default_factory=dict, repr=False)
    classes: Mapping[str, Decision] | None = field(default=None, repr=False)
    max_tool_calls: int | None = None
    max_denials: int | None = None
    network: NetworkPolicy | None = field(default=None, repr=False)  # None: the section is absent
    default: Decision = ASK
    # what a program model does not recognise gets inside the sandbox floor (without one: ask)
    unverified: Decision = ALLOW
    # program models the policy adds or overrides (`programs/custom.py`)
    programs: Mapping[str, Any] = field(default_factory=dict, repr=False)
    # code the policy cannot read ("allow" only inside the floor, from `in_floor.code`)
    code: Decision = ASK
    # the policy as it decides when the OS sandbox floor holds the run (None: the same)
    in_floor: CompiledPolicy | None = field(default=None, repr=False)
    # the administrator's external decision point, consulted by the gate (`external.py`)
    external: ExternalPoint | None = field(default=None, repr=False)


def _invalid(message: str, field: str, value: Any) -> PolicyError:
    return PolicyError("invalid_policy", message, field=field, value=value)


class _Problems:
    """Collects every problem of a document, each named `<field>: <what is wrong>`."""

    __slots__ = ("found",)

    def __init__(self) -> None:
        self.found: list[PolicyError] = []

    def __call__(self, field: str, message: str, value: Any) -> None:
        self.found.append(_invalid(f"{field}: {message}" if field else message, field, value))


def _suggest(key: Any, allowed: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1) if isinstance(key, str) else []
    return f"; did you mean {close[0]!r}?" if close else ""


def _decision(value: Any, field: str, problems: _Problems) -> Decision | None:
    if value in DECISIONS:
        return Decision(value)
    if isinstance(value, str):
        problems(field, f"unknown decision {value!r} (expected one of {', '.join(DECISIONS)})", value)
    else:
        problems(field, f"must be a decision, one of {', '.join(DECISIONS)} (got {json_type(value)})", value)
    return None


def _unknown(key: Any, field: str, allowed: tuple[str, ...], problems: _Problems, value: Any,
             what: str = "key") -> None:
    where = f"{field}.{key}" if field else str(key)
    place = f" in {field}" if field else ""
    known = "known classes:" if what == "class" else "expected one of"
    problems(where, f"unknown {what} {key!r}{place} ({known} {', '.join(allowed)}){_suggest(key, allowed)}", value)


def _mapping(value: Any, field: str, allowed: tuple[str, ...] | None, problems: _Problems) -> Mapping[str, Any] | None:
    """The object at `field` (None when it is not one); unknown keys are reported."""
    if not isinstance(value, Mapping):
        problems(field, f"must be an object (got {json_type(value)})", value)
        return None
    if allowed is not None:
        for key in value:
            if key not in allowed:
                _unknown(key, field, allowed, problems, value[key])
    return value


def _reason(entry: Mapping[str, Any], where: str, problems: _Problems) -> str | None:
    reason = entry.get("reason")
    if reason is not None and (not isinstance(reason, str) or not reason.strip()):
        problems(f"{where}.reason", "must be a non-empty string", reason)
        return None
    return reason


def _rules(entries: Any, field: str, section: str, problems: _Problems) -> tuple[Rule, ...] | None:
    what = "command patterns" if section == "commands" else "path globs"
    if not isinstance(entries, list):
        problems(field, f"must be a list of {what} (got {json_type(entries)})", entries)
        return None
    check = command_pattern_problem if section == "commands" else glob_problem
    out = []
    for i, entry in enumerate(entries):
        where = f"{field}[{i}]"
        if isinstance(entry, Mapping):
            _mapping(entry, where, _RULE_KEYS, problems)
            pattern = entry.get("match")
            reason = _reason(entry, where, problems)
            if "examples" in entry:
                check_rule_examples(entry["examples"], f"{where}.examples", section, problems)
            pfield = f"{where}.match"
            if pattern is None:
                problems(pfield, f"is missing: the rule's {what[:-1]}", None)
                continue
        else:
            pattern, reason, pfield = entry, None, where
        if not isinstance(pattern, str):
            problems(pfield, f"a rule must be a {what[:-1]} (a string) or an object with \"match\" "
                             f"(got {json_type(pattern)})", pattern)
            continue
        problem = check(pattern)
        if problem is None:
            try:
                (compile_command if section == "commands" else glob_regex)(pattern)
            except ValueError as exc:
                problem = str(exc)
        if problem is not None:
            problems(pfield, problem, pattern)
            continue
        out.append(Rule(pattern, reason, _up_to(entry, where, section, problems) if isinstance(entry, Mapping) else None))
    return tuple(out)


def _ruleset(name: str, value: Any, problems: _Problems) -> RuleSet | None:
    before = len(problems.found)
    if not isinstance(value, Mapping):
        problems(name, f"must be an object with allow, ask, deny and default (got {json_type(value)})", value)
        return None
    rules: dict[Decision, tuple[Rule, ...]] = dict.fromkeys(RULE_DECISIONS, ())
    default = None
    for key, entries in value.items():  # in document order, so problems are listed as written
        if key in RULE_DECISIONS:
            rules[Decision(key)] = _rules(entries, f"{name}.{key}", name, problems) or ()
        elif key == "default":
            default = _decision(entries, f"{name}.default", problems)
        else:
            _unknown(key, name, _RULESET_KEYS, problems, entries)
    if len(problems.found) > before:
        return None  # matchers are made of valid patterns only
    order = tuple((decision, i) for decision in RULE_DECISIONS for i in range(len(rules[decision])))
    combined: CommandMatcher | PathMatcher
    if name == "commands":
        combined = CommandMatcher([rules[d][i].pattern for d, i in order], [d is ALLOW for d, _ in order],
                                  [rules[d][i].up_to for d, i in order])
    else:
        combined = PathMatcher([rules[d][i].pattern for d, i in order], [d is ALLOW for d, _ in order])
    labels = {(d, i): f"{name}.{d}[{i}]" for d, i in order}
    return RuleSet(name, rules, default, combined, order, labels)


def _up_to(entry: Mapping[str, Any], where: str, section: str, problems: _Problems) -> str | None:
    """An allow command rule's `up_to`: the most severe side-effect class it allows."""
    if "up_to" not in entry:
        return None
    value = entry["up_to"]
    if section != "commands" or not where.split(".")[-1].startswith("allow["):
        problems(f"{where}.up_to", "only an allow rule of `commands` takes up_to", value)
        return None
    if value not in CLASSES:
        problems(f"{where}.up_to", f"must be a side-effect class (known classes: {', '.join(CLASSES)})", value)
        return None
    return str(value)


def _unverified(value: Any, problems: _Problems) -> Decision:
    """What a command its program's model does not recognise gets inside the floor."""
    if value in UNVERIFIED_DECISIONS:
        return Decision(value)
    what = repr(value) if isinstance(value, str) else json_type(value)
    problems("unverified", f"must be one of {', '.join(UNVERIFIED_DECISIONS)} (got {what}): what a command whose "
                           "program model does not recognise an option, subcommand or operand gets inside the "
                           "sandbox floor (without a floor it is asked about)", value)
    return ALLOW


def _limit(value: Any, field: str, problems: _Problems) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        problems(field, f"must be a whole number, 0 or more (got {value!r})"
                 if isinstance(value, (int, float)) and not isinstance(value, bool)
                 else f"must be a whole number, 0 or more (got {json_type(value)})", value)
        return None
    return int(value)


# Tools the rule sets decide (their class comes from what they do): no class of their own.
_RULED_TOOLS = frozenset({"bash", "network"})


def _tools(value: Any, problems: _Problems) -> dict[str, Any]:
    tools: dict[str, tuple[Decision, str | None]] = {}
    tool_classes: dict[str, str] = {}
    section = _mapping(value, "tools", None, problems)
    for name, entry in (section or {}).items():
        where = f"tools.{name}"
        if not isinstance(name, str) or not name.strip():
            problems(where, "a tool name must not be empty", name)
            continue
        if isinstance(entry, Mapping):
            _mapping(entry, where, ("decision", "class", "reason"), problems)
            reason = _reason(entry, where, problems)
            if "class" in entry:
                if "decision" in entry:
                    problems(where, "give a decision or a class, not both", entry)
                elif entry["class"] not in CLASSES:
                    _unknown(entry["class"], f"{where}.class", CLASSES, problems, entry["class"], what="class")
                elif name in _RULED_TOOLS or name in EDIT_TOOLS or name in READ_TOOLS:
                    problems(f"{where}.class", f"`{name}` is decided by the policy's rule sets, which know its class; "
                                               "a class is for tools they do not read (MCP tools, an agent's own)",
                             entry["class"])
                else:
                    tool_classes[name] = entry["class"]
                continue
            if "decision" not in entry:
                problems(f"{where}.decision", f"is missing: one of {', '.join(DECISIONS)} (or a \"class\")", None)
                continue
            decision = _decision(entry.get("decision"), f"{where}.decision", problems)
        else:
            decision, reason = _decision(entry, where, problems), None
        if decision is not None:
            tools[name] = (decision, reason)
    return {"tools": tools, "tool_classes": tool_classes}


def _classes(value: Any, problems: _Problems, where: str = "classes") -> dict[str, Decision]:
    classes: dict[str, Decision] = {}
    if not isinstance(value, Mapping):
        problems(where, f"must be an object mapping side-effect classes to decisions (got {json_type(value)})",
                 value)
        return classes
    for name, d in value.items():
        if name not in CLASSES:
            _unknown(name, where, CLASSES, problems, d, what="class")
            continue
        decision = _decision(d, f"{where}.{name}", problems)
        if decision is not None:
            classes[name] = decision
    return classes


def _in_floor(value: Any, problems: _Problems) -> Mapping[str, Any] | None:
    """The `in_floor` section: what changes when the OS sandbox floor holds the run."""
    section = _mapping(value, "in_floor", _IN_FLOOR_KEYS, problems)
    if section is None:
        return None
    if "classes" in section:
        _classes(section["classes"], problems, "in_floor.classes")
    if "default" in section:
        _decision(section["default"], "in_floor.default", problems)
    if "unverified" in section and section["unverified"] not in UNVERIFIED_DECISIONS:
        problems("in_floor.unverified", f"must be one of {', '.join(UNVERIFIED_DECISIONS)}", section["unverified"])
    if "code" in section and section["code"] not in CODE_DECISIONS:
        problems("in_floor.code", f"must be one of {', '.join(CODE_DECISIONS)}: whether code the policy cannot read "
                                  "(interpreters, the workspace's programs, computed names) runs unasked inside the "
                                  "floor", section["code"])
    return section


def floor_document(document: Mapping[str, Any]) -> dict[str, Any]:
    """The rule policy as it reads when the floor holds: `in_floor` applied over the rest
    (its classes merged over the document's; `code` stays in the section)."""
    section = document.get("in_floor") or {}
    merged = {key: value for key, value in document.items() if key != "in_floor"}
    if "classes" in section:
        merged["classes"] = {**(document.get("classes") or {}), **section["classes"]}
    for key in ("default", "unverified"):
        if key in section:
            merged[key] = section[key]
    return merged


def _limits(value: Any, problems: _Problems) -> dict[str, int | None]:
    out: dict[str, int | None] = {"max_tool_calls": None, "max_denials": None}
    for key, limit in (_mapping(value, "limits", _LIMIT_KEYS, problems) or {}).items():
        if key in _LIMIT_KEYS:
            out[key] = _limit(limit, f"limits.{key}", problems)
    return out


def _read(document: Any, problems: _Problems) -> dict[str, Any]:
    """Validate a rule policy document, reporting every problem in document order; the
    compiled parts (meaningful only when nothing was reported)."""
    if not isinstance(document, Mapping):
        problems("", f"the policy must be a JSON object (got {json_type(document)})", document)
        return {}
    parts: dict[str, Any] = {"tools": {}, "default": ASK}
    for key, value in document.items():
        if key in ("commands", "edits", "reads"):
            parts[key] = _ruleset(key, value, problems)
        elif key == "tools":
            parts.update(_tools(value, problems))
        elif key == "classes":
            parts["classes"] = _classes(value, problems)
        elif key == "limits":
            parts.update(_limits(value, problems))
        elif key == "network":
            parts["network"] = read_network(value, problems)
        elif key == "default":
            parts["default"] = _decision(value, "default", problems)
        elif key == "unverified":
            parts["unverified"] = _unverified(value, problems)
        elif key == "programs":
            parts["programs"] = read_programs(value, problems)
        elif key == "in_floor":
            parts["in_floor"] = _in_floor(value, problems)
        elif key == "examples":
            check_policy_examples(value, problems, DECISIONS)
        elif key == "external":
            parts["external"] = read_external(value, problems)
        else:
            _unknown(key, "", _TOP_KEYS, problems, value)
    return parts


def _build(document: Mapping[str, Any], version: str) -> CompiledPolicy:
    problems = _Problems()
    parts = _read(document, problems)
    if problems.found:
        raise problems.found[0]
    section = parts.pop("in_floor", None)
    if section:
        floored = _read(floor_document(document), problems)
        floored.pop("in_floor", None)
        # the same version: a decision records the policy it was made under, and whether
        # the floor held is recorded with the run
        parts["in_floor"] = CompiledPolicy(version=version, document=copy.deepcopy(dict(document)),
                                           code=Decision(section.get("code", ASK)), **floored)
    return CompiledPolicy(version=version, document=copy.deepcopy(dict(document)), **parts)


def _not_json(document: Any) -> PolicyError | None:
    if not isinstance(document, Mapping):
        return _invalid("the policy must be a JSON object", "", json_type(document))
    try:
        policy_version(document)
    except PolicyError as exc:
        return _invalid(f"the policy is not JSON: {exc.message}", "", exc.value)
    return None


def policy_problems(document: Any) -> list[PolicyError]:
    """Every problem of a rule policy document, in document order (empty: it is valid).

    Each is an `invalid_policy` PolicyError whose `field` is the path of what is wrong
    (`commands.deny[2]`, `edits.allow[0].examples.match[1]`, `classes.harmless`) and whose
    message starts with that path and says what is wrong: a pattern that does not parse or
    can never match (see `pattern_checks`), an unknown decision, class or key (listing the
    known ones), a malformed examples block. `compile_policy` refuses with the first one.
    Examples are not run here: `check_examples` does that.
    """
    refused = _not_json(document)
    if refused is not None:
        return [refused]
    problems = _Problems()
    _read(document, problems)
    return problems.found


_CACHE: OrderedDict[str, CompiledPolicy] = OrderedDict()
_CACHE_SIZE = 256
_LOCK = threading.Lock()


def compile_policy(document: Mapping[str, Any], *, version: str | None = None) -> CompiledPolicy:
    """Validate and compile a rule policy; compiled once per version (an LRU of 256).

    `version`, when the caller holds the document's `policy_version` as recorded with it
    (a run's snapshot, written from `compiled.version` in the same transaction), finds a
    compiled hit without hashing the document again; a miss hashes and compiles as usual.
    The caller vouches for the pair: pass only a version computed from this document.
    Refuses with the first of `policy_problems(document)`: `invalid_policy` naming the field
    path (`commands.deny[1]`) and value. A rule's examples and the top-level examples are
    validated, never stored in the compiled policy nor run here.
    """
    if version:
        with _LOCK:
            hit = _CACHE.get(version)
            if hit is not None:
                _CACHE.move_to_end(version)
                return hit
    refused = _not_json(document)
    if refused is not None:
        raise refused
    version = policy_version(document)
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


def compile_cache_info() -> dict[str, Any]:
    with _LOCK:
        return {"size": len(_CACHE), "max": _CACHE_SIZE}


def clear_compile_cache() -> None:
    with _LOCK:
        _CACHE.clear()


__all__ = ["DEFAULT_POLICY", "CompiledPolicy", "compile_policy", "canonical_json", "floor_document", "policy_problems"]
