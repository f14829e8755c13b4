"""Rules learned from approvals (issue 32, item 1): what people keep approving, as allow rules.

Each asked request has a *shape*: the narrowest safe grant the policy itself offers for it
(`grants.suggest_grant`: a command prefix read by meaning such as `pytest -q`, a
workspace-relative glob such as `src/**` for an edit tool or `read`, a host, a tool). A
shape approved at least `threshold` times (default 10), by at least one reviewer and never
denied, is suggested as an allow rule of the rule policy — never for what the policy
classes destructive, protected, remote-mutation or outside-workspace, for an escape from
the sandbox, for a command given exactly (code the policy cannot read), nor as a
program alone whose model runs the code it is given (`node`, which would allow any script).

An allow rule cannot loosen what is denied: most restrictive wins, so a deny rule, a
protected path, a secret read or the floor decides as before (a property test holds this).
Pure: no Django; the records come from approvals.selectors.
"""

from __future__ import annotations

import copy
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .classes import CLASS_SEVERITY, DESTRUCTIVE, EDIT_TOOLS, LOCAL, OUTSIDE, PROTECTED, REMOTE
from .programs.registry import model_of, program_name
from .request import NETWORK_TOOL

DEFAULT_THRESHOLD = 10
# What is never suggested, whatever its record.
NEVER = frozenset({DESTRUCTIVE, PROTECTED, REMOTE, OUTSIDE, "escape"})
# An approval decided this fast (seconds) is a rubber-stamp candidate.
RUBBER_STAMP_S = 3.0


@dataclass(frozen=True)
class Record:
    """One asked request and how it was settled."""

    shape: Mapping[str, Any] | None  # the suggested grant: {"tool", "match"?}
    side_effect_class: str
    outcome: str  # "approved", "denied", or anything else (expired, cancelled, pending…)
    reviewer: Any = None
    seconds: float | None = None  # from asked to decided
    exact: bool = False  # the shape names one exact command (code given on the command line)


@dataclass
class Suggestion:
    section: str
    rule: str
    shape: Mapping[str, Any]
    approved: int = 0
    denied: int = 0
    reviewers: set[object] = field(default_factory=set)  # (`Record.reviewer`: whoever the caller counts)
    seconds: list[float] = field(default_factory=list)
    never: bool = False  # some request of this shape was of a class never suggested
    classes: set[str] = field(default_factory=set)  # the side-effect classes of what a person approved

    @property
    def up_to(self) -> str | None:
        """A learned command rule's bound: the most severe class a person approved (local-mutation
        when none was known), so `rm` learned from `rm notes.txt` never allows `rm -r src`."""
        if self.section != "commands":
            return None
        known = [c for c in self.classes if c in CLASS_SEVERITY]
        return max(known, key=lambda c: CLASS_SEVERITY[c]) if known else LOCAL

    @property
    def median_seconds(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    def as_json(self) -> dict[str, Any]:
        return {"section": self.section, "rule": self.rule, "up_to": self.up_to, "approved": self.approved,
                "denied": self.denied, "reviewers": len(self.reviewers), "median_seconds": self.median_seconds}


def rule_of(shape: Mapping[str, Any]) -> tuple[str, str] | None:
    """A grant shape as (section, rule) of the rule policy, or None."""
    tool = str(shape.get("tool") or "")
    match = shape.get("match")
    if tool == "bash":
        return ("commands", str(match)) if match else None
    if tool in EDIT_TOOLS:
        return ("edits", str(match)) if match else None
    if tool == "read":
        return ("reads", str(match)) if match else None
    if tool == NETWORK_TOOL:
        return ("network", str(match)) if match else None
    if tool and not match:
        return ("tools", tool)
    return None


def _key(shape: Mapping[str, Any]) -> tuple[str, str]:
    return str(shape.get("tool") or ""), str(shape.get("match") or "")


def tally(records: Iterable[Record]) -> list[Suggestion]:
    """Every shape's record (approved, denied, reviewers, decision times), most approved first."""
    found: dict[tuple[str, str], Suggestion] = {}
    for record in records:
        if not record.shape:
            continue
        rule = rule_of(record.shape)
        if rule is None:
            continue
        entry = found.get(_key(record.shape))
        if entry is None:
            entry = found[_key(record.shape)] = Suggestion(rule[0], rule[1], dict(record.shape))
        if record.side_effect_class in NEVER or record.exact:
            entry.never = True
        if record.outcome == "approved":
            entry.approved += 1
            if record.side_effect_class:
                entry.classes.add(record.side_effect_class)
            if record.reviewer is not None:
                entry.reviewers.add(record.reviewer)
            if record.seconds is not None:
                entry.seconds.append(record.seconds)
        elif record.outcome == "denied":
            entry.denied += 1
    return sorted(found.values(), key=lambda s: (-s.approved, s.section, s.rule))


def suggest(records: Iterable[Record], threshold: int = DEFAULT_THRESHOLD) -> list[Suggestion]:
    """The shapes to offer as allow rules: approved at least `threshold` times by at least one
    reviewer, never denied, and of none of the classes never suggested."""
    return [entry for entry in tally(records)
            if not entry.never and not entry.denied and entry.approved >= threshold and entry.reviewers
            and not _runs_any_code(entry)]


def _runs_any_code(entry: Suggestion) -> bool:
    """A command rule that names only a program whose model runs code it is given (an
    interpreter, a shell, a launcher or wrapper, a program that runs scripts): `node scripts/gen.js`
    approved forty times must not become `node`, which allows any script."""
    words = entry.rule.split()
    if entry.section != "commands" or len(words) != 1:
        return False
    name, extra = program_name(words[0])
    model = model_of(name)
    return bool(extra) or (model is not None and (model.inner is not None or model.code is not None
                                                   or model.runs_scripts is not None))


def rubber_stamps(records: Iterable[Record], limit: int = 20) -> list[Suggestion]:
    """Shapes approved fastest (median under RUBBER_STAMP_S): prompts nobody reads any more."""
    fast = [s for s in tally(records) if s.median_seconds is not None and s.median_seconds < RUBBER_STAMP_S]
    return sorted(fast, key=lambda s: (s.median_seconds or 0.0, -s.approved))[:limit]


def with_rule(document: Mapping[str, Any], section: str, rule: str, up_to: str | None = None) -> dict[str, Any]:
    """The rule policy document with one more allow rule (a copy; unchanged if it is there).
    A command rule learned from approvals carries `up_to`: it allows nothing more severe
    than what was approved (an allow rule is otherwise stronger than a class's deny)."""
    doc = copy.deepcopy(dict(document))
    if section == "tools":
        tools = doc.setdefault("tools", {})
        if tools.get(rule) is None:
            tools[rule] = "allow"
        return doc
    entries = doc.setdefault(section, {})
    allow = entries.setdefault("allow", [])
    if rule not in [a if isinstance(a, str) else a.get("match") for a in allow]:
        allow.append({"match": rule, "up_to": up_to} if section == "commands" and up_to else rule)
    return doc


def prompts_per_run(asks_by_run: Mapping[Any, int], runs: int) -> float:
    return sum(asks_by_run.values()) / runs if runs else 0.0


def rates_by(records: Sequence[Record], key: str) -> list[dict[str, Any]]:
    """Approval rate by `class` or by `shape` (rule): asked, approved, denied, rate."""
    groups: dict[str, list[Record]] = {}
    for record in records:
        if key == "class":
            name = record.side_effect_class or "(none)"
        else:
            rule = rule_of(record.shape) if record.shape else None
            name = f"{rule[0]}: {rule[1]}" if rule else "(no shape)"
        groups.setdefault(name, []).append(record)
    out = []
    for name, group in groups.items():
        approved = sum(1 for r in group if r.outcome == "approved")
        denied = sum(1 for r in group if r.outcome == "denied")
        decided = approved + denied
        out.append({"name": name, "asked": len(group), "approved": approved, "denied": denied,
                    "rate": (approved / decided) if decided else None})
    return sorted(out, key=lambda g: (-g["asked"], g["name"]))
