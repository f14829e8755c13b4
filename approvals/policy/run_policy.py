"""The run policy: guardrails and approval routing for one run (issue 3, section 3).

The nearer policy (a run's) replaces the farther one (its session's, the server default)
whole, never field by field; "inherit" values are filled by `materialise`.

The administrator's run policy is a ceiling (issue 9): `loosened_fields` says where a
run's or session's policy would loosen it, which needs the override permission.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from .classnames import CLASSES
from .errors import PolicyError, json_type

INHERIT = "inherit"
SANDBOX = (INHERIT, "read-only", "workspace-write", "unrestricted")
FEATURE = (INHERIT, "allow", "deny")
ROUTING = (INHERIT, "ask", "auto-approve", "auto-deny")
QUESTION_ROUTING = (INHERIT, "ask", "auto-deny")  # a question is never auto-approved
FALLBACK = (INHERIT, "abort", "continue", "retry")
KINDS = ("permission", "plan_review", "question")
# What a person's approval takes, per side-effect class (issue 32.2), least friction first:
# nothing more than Approve; the word the card asks for, typed; two different people.
CONFIRM = ("none", "typed", "second-reviewer")
CONFIRM_ORDER = {name: i for i, name in enumerate(CONFIRM)}


class _Defaults(TypedDict):
    permission: str
    plan_review: str
    question: str
    timeout_s: float
    on_timeout: str
    on_reject: str
    max_retries: int


_RoutingKey = Literal["permission", "plan_review", "question", "on_timeout", "on_reject"]

# Humane defaults (issue 10): a reviewer gets an hour, questions reach a person, and a
# denial or an unanswered request is told to the agent, which goes on — a run ends on a
# refusal only when its policy says `abort`.
DEFAULTS: _Defaults = {
    "permission": "ask",
    "plan_review": "ask",
    "question": "ask",
    "timeout_s": 3600.0,
    "on_timeout": "continue",
    "on_reject": "continue",
    "max_retries": 3,
}

_TOP = ("preset", "sandbox", "web_search", "browser", "approvals")

# Named run policies (the adaptor design's presets). `{"preset": NAME}` stands for the whole
# document; fields given beside it replace the preset's (`approvals` field by field).
# * all-deny: nobody is asked and nothing the rule policy would ask runs (refused, told to
#   the agent), inside a read-only floor. For unattended runs that may only look.
# * sandbox-only: nobody is asked about tool requests: what the rule policy would ask is
#   approved, and the OS floor (workspace-write) is the boundary; its deny rules still deny,
#   and the egress proxy still refuses hosts the policy does not allow. Questions are refused.
PRESETS: dict[str, dict[str, Any]] = {
    "all-deny": {
        "sandbox": "read-only",
        "approvals": {"permission": "auto-deny", "plan_review": "auto-deny", "question": "auto-deny",
                      "on_reject": "continue"},
    },
    "sandbox-only": {
        "sandbox": "workspace-write",
        "approvals": {"permission": "auto-approve", "plan_review": "auto-approve", "question": "auto-deny",
                      "on_reject": "continue"},
    },
}


def expand_preset(document: Mapping[str, Any]) -> Mapping[str, Any]:
    """A document naming a preset, as the whole document it stands for."""
    if "preset" not in document:
        return document
    name = document["preset"]
    if name not in PRESETS:
        raise _invalid(f"preset must be one of {', '.join(PRESETS)}", "preset", name)
    base = PRESETS[name]
    rest = {k: v for k, v in document.items() if k != "preset"}
    approvals = rest.pop("approvals", None)
    if approvals is not None and not isinstance(approvals, Mapping):
        raise _invalid("approvals must be an object", "approvals", approvals)
    return {**base, **rest, "approvals": {**base["approvals"], **(approvals or {})}}
_APPROVALS = ("permission", "plan_review", "question", "timeout_s", "on_timeout", "on_reject", "max_retries", "confirm")


@dataclass(frozen=True)
class RunPolicy:
    sandbox: str = INHERIT
    web_search: str = INHERIT
    browser: str = INHERIT
    permission: str = INHERIT
    plan_review: str = INHERIT
    question: str = INHERIT
    timeout_s: float | None = None  # None: inherit; negative: no deadline
    on_timeout: str = INHERIT
    on_reject: str = INHERIT
    max_retries: int | None = None  # None: inherit
    # (class, requirement) pairs, sorted by class: only the classes the document names
    # ("none" included: it removes a farther policy's requirement). See `resolve_run_policy`.
    confirm: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape `parse_run_policy` reads (inherit values included)."""
        return {
            "sandbox": self.sandbox,
            "web_search": self.web_search,
            "browser": self.browser,
            "approvals": {
                "permission": self.permission,
                "plan_review": self.plan_review,
                "question": self.question,
                "timeout_s": self.timeout_s,
                "on_timeout": self.on_timeout,
                "on_reject": self.on_reject,
                "max_retries": self.max_retries,
                "confirm": dict(self.confirm),
            },
        }

    @property
    def confirm_only(self) -> bool:
        """A policy that sets nothing but `approvals.confirm` (the presets' own run policy)."""
        return bool(self.confirm) and dataclasses.replace(self, confirm=()) == RunPolicy()


def _invalid(message: str, field: str, value: Any) -> PolicyError:
    return PolicyError("invalid_policy", message, field=field, value=value)


def _choice(section: Mapping[str, Any], key: str, allowed: tuple[str, ...], field: str) -> str:
    value = section.get(key, INHERIT)
    if value is None:
        return INHERIT
    if value not in allowed:
        raise _invalid(f"{field} must be one of {', '.join(allowed)}", field, value)
    return str(value)


def _unknown(section: Mapping[str, Any], allowed: tuple[str, ...], prefix: str) -> None:
    for key in section:
        if key not in allowed:
            field = f"{prefix}{key}"
            raise _invalid(f"unknown field {field!r} (expected one of {', '.join(allowed)})", field, section[key])


def _confirm(approvals: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    confirm = approvals.get("confirm")
    if confirm is None:
        return ()
    if not isinstance(confirm, Mapping):
        raise _invalid("approvals.confirm must be an object: a side-effect class -> none, typed or second-reviewer",
                       "approvals.confirm", json_type(confirm))
    pairs = []
    for name, value in confirm.items():
        field = f"approvals.confirm.{name}"
        if name not in CLASSES:
            raise _invalid(f"unknown field {field!r}: approvals.confirm names side-effect classes "
                           f"({', '.join(CLASSES)})", field, value)
        if value not in CONFIRM:
            raise _invalid(f"{field} must be one of {', '.join(CONFIRM)}", field, value)
        pairs.append((str(name), str(value)))
    return tuple(sorted(pairs))


MAX_TIMEOUT_S = 10 * 365 * 24 * 3600  # ten years
MAX_RETRIES = 100


def parse_run_policy(document: Mapping[str, Any] | None) -> RunPolicy:
    """Validate the JSON shape; errors name the field (`approvals.question`) and value."""
    if document is None:
        return RunPolicy()
    if not isinstance(document, Mapping):
        raise _invalid("a run policy must be an object", "", json_type(document))
    _unknown(document, _TOP, "")
    document = expand_preset(document)
    approvals = document.get("approvals", {})
    if approvals is None:
        approvals = {}
    if not isinstance(approvals, Mapping):
        raise _invalid("approvals must be an object", "approvals", approvals)
    _unknown(approvals, _APPROVALS, "approvals.")
    timeout = approvals.get("timeout_s")
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or (
            isinstance(timeout, float) and (math.isnan(timeout) or math.isinf(timeout))
        ):
            raise _invalid("approvals.timeout_s must be a number of seconds", "approvals.timeout_s", timeout)
        if timeout == 0:
            # Zero means zero: a request that expires the moment it is asked helps no one.
            raise _invalid("approvals.timeout_s must not be 0 (it would expire at once); "
                           "give a number of seconds, or a negative value for no deadline",
                           "approvals.timeout_s", timeout)
        if timeout < 0:
            timeout = -1.0  # any negative value: no deadline
        elif timeout > MAX_TIMEOUT_S:
            # A deadline must be a date the database can store.
            raise _invalid(f"approvals.timeout_s must be at most {MAX_TIMEOUT_S} s (a negative value means no deadline)",
                           "approvals.timeout_s", timeout)
        timeout = float(timeout)
    retries = approvals.get("max_retries")
    if retries is not None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0 or retries > MAX_RETRIES:
            raise _invalid(f"approvals.max_retries must be a whole number from 0 to {MAX_RETRIES}",
                           "approvals.max_retries", retries)
        retries = int(retries)
    return RunPolicy(
        sandbox=_choice(document, "sandbox", SANDBOX, "sandbox"),
        web_search=_choice(document, "web_search", FEATURE, "web_search"),
        browser=_choice(document, "browser", FEATURE, "browser"),
        permission=_choice(approvals, "permission", ROUTING, "approvals.permission"),
        plan_review=_choice(approvals, "plan_review", ROUTING, "approvals.plan_review"),
        question=_choice(approvals, "question", QUESTION_ROUTING, "approvals.question"),
        timeout_s=timeout,
        on_timeout=_choice(approvals, "on_timeout", FALLBACK, "approvals.on_timeout"),
        on_reject=_choice(approvals, "on_reject", FALLBACK, "approvals.on_reject"),
        max_retries=retries,
        confirm=_confirm(approvals),
    )


def resolve_run_policy(*layers: RunPolicy | None) -> RunPolicy:
    """Nearest first: the first layer given wins whole (never merged field by field) —
    except `approvals.confirm`, which is friction an administrator adds: it is inherited
    class by class (a class the nearer layer does not name keeps the farther one's
    requirement; naming it, `none` included, replaces it), and a layer that sets nothing
    but `confirm` leaves the other fields to the farther layers."""
    given = [layer for layer in layers if layer is not None]
    base = next((layer for layer in given if not layer.confirm_only), RunPolicy())
    confirm: dict[str, str] = {}
    for layer in reversed(given):
        confirm.update(layer.confirm)
    merged = tuple(sorted(confirm.items()))
    return base if merged == base.confirm else dataclasses.replace(base, confirm=merged)


def confirm_layer(policy: RunPolicy) -> RunPolicy:
    """Only the `confirm` of a policy, as a layer for `resolve_run_policy` (the default
    policy's friction under every other policy's ceiling)."""
    return RunPolicy(confirm=policy.confirm)


def confirm_requirements(materialised: Mapping[str, Any]) -> dict[str, str]:
    """class -> typed | second-reviewer from a materialised run policy (stored runs' too:
    `approvals.confirm`, or the flat `confirm`; absent in runs older than issue 32)."""
    value = materialised.get("confirm")
    if value is None:
        value = (materialised.get("approvals") or {}).get("confirm")
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items() if v in CONFIRM and v != "none"}


def materialise(policy: RunPolicy) -> dict[str, Any]:
    """Concrete values: inherit -> the defaults; a negative timeout -> None (no deadline).

    `max_retries: 0` means no retry (zero is a value, not "inherit").

    sandbox, web_search and browser stay "inherit" (the driver's own default applies).
    """
    timeout = policy.timeout_s
    if timeout is None:
        timeout = DEFAULTS["timeout_s"]
    elif timeout < 0:
        timeout = None
    retries = policy.max_retries
    if retries is None:
        retries = DEFAULTS["max_retries"]

    def pick(value: str, key: _RoutingKey) -> str:
        return DEFAULTS[key] if value in (INHERIT, "", None) else value

    materialised: dict[str, Any] = {
        "sandbox": policy.sandbox or INHERIT,
        "web_search": policy.web_search or INHERIT,
        "browser": policy.browser or INHERIT,
        "permission": pick(policy.permission, "permission"),
        "plan_review": pick(policy.plan_review, "plan_review"),
        "question": pick(policy.question, "question"),
        "timeout_s": timeout,
        "on_timeout": pick(policy.on_timeout, "on_timeout"),
        "on_reject": pick(policy.on_reject, "on_reject"),
        "max_retries": retries,
    }
    # What an approval takes per class, present only when some class takes more than
    # Approve ("none" and an unnamed class take nothing more).
    confirm = {name: value for name, value in policy.confirm if value != "none"}
    if confirm:
        materialised["confirm"] = confirm
    return materialised


# --- The ceiling: who may loosen ---------------------------------------------------------------
#
# The administrator's run policy (the run's Policy row's, else the server default, else the
# built-ins) is a ceiling: a run or session policy may only tighten it. Both sides are
# compared *materialised*, so a field the requested policy leaves out is its built-in
# default (the nearer policy replaces the farther whole), never the ceiling's value.
#
# Each field has an order from tightest (0) upward: a requested value loosens when it may
# let more through than the ceiling's value can.

SANDBOX_ORDER = {"read-only": 0, "workspace-write": 1, "unrestricted": 2}
FEATURE_ORDER = {"deny": 0, "allow": 1}
# auto-deny < ask: asking lets a person approve what the ceiling refuses outright.
ROUTING_ORDER = {"auto-deny": 0, "ask": 1, "auto-approve": 2}
# A question's answer authorises no tool, and both values keep a person in charge (one
# declines, one asks): neither loosens.
QUESTION_ORDER = {"auto-deny": 0, "ask": 0}
# abort < retry < continue: retrying asks a person again and aborts when retries run out
# (or the driver cannot re-ask); continue lets the agent go on after a refusal.
FALLBACK_ORDER = {"abort": 0, "retry": 1, "continue": 2}

_ORDERS: tuple[tuple[str, Mapping[str, int]], ...] = (
    ("sandbox", SANDBOX_ORDER),
    ("web_search", FEATURE_ORDER),
    ("browser", FEATURE_ORDER),
    ("permission", ROUTING_ORDER),
    ("plan_review", ROUTING_ORDER),
    ("question", QUESTION_ORDER),
    ("on_timeout", FALLBACK_ORDER),
    ("on_reject", FALLBACK_ORDER),
)
_GUARDRAILS = ("sandbox", "web_search", "browser")
# Runtime modes that approve asks on their own (see modes.py): starting a run in one, or
# switching a session to one, loosens every policy.
LOOSE_RUNTIME_MODES = frozenset({"auto", "full-access"})
CEILING_FIELDS = tuple(
    name if name in _GUARDRAILS else f"approvals.{name}"
    for name in ("sandbox", "web_search", "browser", "permission", "plan_review", "question",
                 "timeout_s", "on_timeout", "on_reject", "max_retries", "confirm")
)


def _span(order: Mapping[str, int], value: Any) -> tuple[int, int]:
    """The ranks a value may stand for. "inherit" is the driver's own default, unknown
    here: it may be anything from the tightest to the loosest (so may any unknown value)."""
    if value in order:
        return order[value], order[value]
    return min(order.values()), max(order.values())


def _looser(order: Mapping[str, int], requested: Any, ceiling: Any) -> bool:
    if requested == ceiling:
        return False  # the same value, even "inherit": the same driver decides both
    return _span(order, requested)[1] > _span(order, ceiling)[0]


def _no_deadline_as_inf(value: Any) -> float:
    return math.inf if value is None else float(value)


def loosened_fields(requested: Mapping[str, Any], ceiling: Mapping[str, Any]) -> list[str]:
    """The fields in which `requested` lets more through than `ceiling`, in document order
    (`sandbox`, ..., `approvals.max_retries`). Both are `materialise` results.

    Per field, tightest first: sandbox read-only < workspace-write < unrestricted; web
    search and browser deny < allow (for both, "inherit" may be anything, so it loosens an
    explicit value unless that is the loosest, and only the tightest value tightens it);
    permission and plan review auto-deny < ask < auto-approve; question never loosens;
    timeout shorter < longer < no deadline; fallbacks abort < retry < continue; max
    retries fewer < more, counted only when both policies retry (a ceiling that never
    retries is bounded by its fallbacks: a count it never uses is no limit).
    """
    loose: set[str] = set()
    for name, order in _ORDERS:
        if _looser(order, requested.get(name), ceiling.get(name)):
            loose.add(name)
    if _no_deadline_as_inf(requested.get("timeout_s")) > _no_deadline_as_inf(ceiling.get("timeout_s")):
        loose.add("timeout_s")
    # A ceiling that never retries bounds retrying by its fallbacks (`retry` is tighter than
    # `continue`, looser than `abort`: the orders above), not by a count it never uses.
    retries = all("retry" in (side.get("on_timeout"), side.get("on_reject")) for side in (requested, ceiling))
    if retries and int(requested.get("max_retries") or 0) > int(ceiling.get("max_retries") or 0):
        loose.add("max_retries")
    if weakened_confirm(requested, ceiling):
        loose.add("confirm")
    return [field for field in CEILING_FIELDS if field.removeprefix("approvals.") in loose]


def weakened_confirm(requested: Mapping[str, Any], ceiling: Mapping[str, Any]) -> list[str]:
    """The classes whose confirm requirement `requested` removes or weakens (none < typed <
    second-reviewer); adding or strengthening one tightens."""
    mine, theirs = confirm_requirements(requested), confirm_requirements(ceiling)
    return [name for name in CLASSES
            if CONFIRM_ORDER[mine.get(name, "none")] < CONFIRM_ORDER[theirs.get(name, "none")]]


def _shown(name: str, value: Any) -> str:
    if name == "timeout_s":
        return "no deadline" if value is None else f"{value:g} s"
    if name == "max_retries":
        return str(value)
    return "the driver's default" if value == INHERIT else str(value)


def describe_loosening(field: str, requested: Mapping[str, Any], ceiling: Mapping[str, Any], *, given: bool) -> str:
    """One sentence for a refused field: what the run would get and what the ceiling has."""
    name = field.removeprefix("approvals.")
    if name == "confirm":
        mine, theirs = confirm_requirements(requested), confirm_requirements(ceiling)
        weaker = "; ".join(f"{c}: {mine.get(c, 'none')} instead of {theirs[c]}" for c in weakened_confirm(requested, ceiling))
        return f"approvals.confirm asks less of a reviewer than the administrator's policy ({weaker})"
    wanted, limit = _shown(name, requested.get(name)), _shown(name, ceiling.get(name))
    if given:
        return f"{field} {wanted} is looser than the administrator's policy ({limit})"
    return (f"{field} is not given, so it is the built-in default ({wanted}: a run policy replaces the "
            f"administrator's whole), which is looser than the administrator's policy ({limit})")


def given_fields(policy: RunPolicy) -> set[str]:
    """The fields a parsed run policy sets explicitly (the rest inherit)."""
    values = {
        "sandbox": policy.sandbox, "web_search": policy.web_search, "browser": policy.browser,
        "approvals.permission": policy.permission, "approvals.plan_review": policy.plan_review,
        "approvals.question": policy.question, "approvals.timeout_s": policy.timeout_s,
        "approvals.on_timeout": policy.on_timeout, "approvals.on_reject": policy.on_reject,
        "approvals.max_retries": policy.max_retries, "approvals.confirm": policy.confirm or None,
    }
    return {field for field, value in values.items() if value not in (None, INHERIT, "")}


def check_capabilities(policy: RunPolicy, descriptor: object) -> None:
    # (`descriptor`: a driver's `drivers.registry.Descriptor`, read by name: the core imports no driver)
    """Refuse explicit values the driver does not model (inherit is always accepted)."""
    driver = getattr(descriptor, "name", "")
    for dimension in ("sandbox", "web_search", "browser"):
        value = getattr(policy, dimension)
        if value != INHERIT and value not in getattr(descriptor, dimension, frozenset()):
            raise PolicyError(
                "policy_capability_unsupported",
                f"driver {driver} cannot honour {dimension}={value}",
                field=dimension, value=value, driver=driver, dimension=dimension,
            )
    modes = getattr(descriptor, "approval_modes", {}) or {}
    for kind in KINDS:
        mode = getattr(policy, kind)
        if mode != INHERIT and mode not in modes.get(kind, frozenset()):
            raise PolicyError(
                "human_decision_mode_unsupported",
                f"driver {driver} cannot route {kind} approvals as {mode}",
                field=f"approvals.{kind}", value=mode, driver=driver, kind=kind, mode=mode,
            )
    # `retry` on a driver without retry support is not refused here: issue 4 makes it a
    # notice (human_decision_retry_unsupported) and a safe abort at run time.


__all__ = [
    "RunPolicy", "parse_run_policy", "resolve_run_policy", "materialise", "check_capabilities",
    "loosened_fields", "describe_loosening", "given_fields", "CEILING_FIELDS", "LOOSE_RUNTIME_MODES",
    "confirm_layer", "confirm_requirements", "weakened_confirm", "CONFIRM",
]
