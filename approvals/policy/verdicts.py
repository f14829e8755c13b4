"""What the policy answers: a Decision, a Verdict, per-command Segments and the paths they touch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .options import Invocation

_SEVERITY = {"allow": 0, "ask": 1, "deny": 2, "abort": 3}


class Decision(StrEnum):
    """What the policy decides, least to most severe. A member is its string ("allow"...),
    so stored verdicts, the API and comparisons with plain strings are unchanged."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"
    ABORT = "abort"  # the run stops (a limit reached); no rule decides it

    # a plain attribute, set once per member: the evaluation's hot path compares it
    severity: int

    def __init__(self, value: str) -> None:
        self.severity = _SEVERITY[value]

    def worse(self, other: Decision) -> bool:
        """Whether this decision is more severe than `other`."""
        return self.severity > other.severity


# The members by name, as the evaluation spells them: on Python 3.11 `Decision.ALLOW` is a
# lookup through the enum's metaclass (~0.2 µs, several per request), a module's name is not.
ALLOW, ASK, DENY, ABORT = Decision.ALLOW, Decision.ASK, Decision.DENY, Decision.ABORT


@dataclass(frozen=True)
class RunView:
    """What the run did so far, before this request (limits read it), and where it runs."""

    tool_calls: int = 0
    denials: int = 0
    # An OS sandbox floor holds the run (its processes cannot leave the workspace or reach
    # the network unasked): the rule policy's `unverified` setting decides what a program
    # model does not recognise. Without one (the hook gateway, `unrestricted`) it is asked.
    floor: bool = False


@dataclass(frozen=True)
class PathUse:
    """One path a request reads or writes, where it really is, and what the policy says."""

    path: str  # as the request wrote it
    access: str  # "read", "write" or "link" (the target of a new link)
    resolved: str | None  # absolute, `..` and symlinks resolved; None when only known at run time
    relative: str | None  # workspace-relative, when inside the workspace
    side_effect_class: str | None  # writes: local-mutation, outside-workspace or protected
    decision: Decision
    rule: str | None
    reason: str = ""
    protected: str | None = None  # what protects it (`~/.ssh`, `.git/hooks`, `/etc`...)
    sensitive: bool = False  # a read of a protected or secret-looking path

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "access": self.access,
            "resolved": self.resolved,
            "relative": self.relative,
            "side_effect_class": self.side_effect_class,
            "decision": self.decision,
            "rule": self.rule,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class Segment:
    """The verdict on one simple command of a script."""

    command: str
    words: tuple[str, ...]
    side_effect_class: str | None
    decision: Decision
    rule: str | None
    writes_file: bool = False
    reason: str = ""
    cwd: str | None = None  # the working directory after a `cd` earlier in the script (None: the request's)
    paths: tuple[PathUse, ...] = ()
    # What a session grant may lift when the decision is `ask`: "pattern" (a grant whose
    # pattern matches), "exact" (only a grant naming exactly this command: code on the
    # command line), None (nothing: a protected path, a computed name, nesting...).
    grantable: str | None = "pattern"
    floors: tuple[str, ...] = ()  # rules that made it at least `ask` beyond its own rule
    invocation: Invocation | None = field(default=None, repr=False, compare=False)

    @classmethod
    def _make(cls, command: str, words: tuple[str, ...], side_effect_class: str | None, decision: Decision,
              rule: str | None, writes_file: bool, reason: str, cwd: str | None, paths: tuple[PathUse, ...],
              grantable: str | None, floors: tuple[str, ...], invocation: Invocation | None) -> Segment:
        # The frozen dataclass __init__ sets fields one by one; evaluate's hot path fills
        # the instance dict at once (same fields, same immutability afterwards).
        obj = object.__new__(cls)
        obj.__dict__.update(command=command, words=words, side_effect_class=side_effect_class, decision=decision,
                            rule=rule, writes_file=writes_file, reason=reason, cwd=cwd, paths=paths,
                            grantable=grantable, floors=floors, invocation=invocation)
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
            "cwd": self.cwd,
            "paths": [p.to_dict() for p in self.paths],
        }


@dataclass(frozen=True, init=False)
class Verdict:
    decision: Decision
    reason: str
    rule: str
    segments: tuple[Segment, ...] = ()
    side_effect_class: str | None = None
    grant: Mapping[str, Any] | None = None  # the grant that turned ask into allow
    paths: tuple[PathUse, ...] = ()  # the paths an edit or read tool touches
    floors: tuple[str, ...] = ()  # every rule that made some part at least `ask` beyond its own rule

    def __init__(self, decision: Decision, reason: str, rule: str, segments: tuple[Segment, ...] = (),
                 side_effect_class: str | None = None, grant: Mapping[str, Any] | None = None,
                 paths: tuple[PathUse, ...] = (), floors: tuple[str, ...] = ()) -> None:
        self.__dict__.update(decision=decision, reason=reason, rule=rule, segments=segments,
                             side_effect_class=side_effect_class, grant=grant, paths=paths, floors=floors)

    @classmethod
    def _make(cls, decision: Decision, reason: str, rule: str, segments: tuple[Segment, ...] = (),
              side_effect_class: str | None = None, grant: Mapping[str, Any] | None = None,
              paths: tuple[PathUse, ...] = (), floors: tuple[str, ...] = ()) -> Verdict:
        obj = object.__new__(cls)
        obj.__dict__.update(decision=decision, reason=reason, rule=rule, segments=segments,
                            side_effect_class=side_effect_class, grant=grant, paths=paths, floors=floors)
        return obj

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "decision": self.decision,
            "reason": self.reason,
            "rule": self.rule,
            "segments": [s.to_dict() for s in self.segments],
        }
        if self.paths:
            out["paths"] = [p.to_dict() for p in self.paths]
        if self.grant is not None:
            out["grant"] = dict(self.grant)
        return out

    @property
    def all_paths(self) -> tuple[PathUse, ...]:
        return self.paths + tuple(p for s in self.segments for p in s.paths)

    @property
    def touches_protected(self) -> bool:
        return self.side_effect_class == "protected" or any(p.protected for p in self.all_paths)
