"""What each driver cannot enforce of a policy, read from the drivers' descriptors.

A policy is only as strong as what the agent reports: a `reads` section means nothing for
an agent that reads files without asking, and a sandbox value a driver does not model
makes every run of that driver refused. The policy page and the API show these warnings
so an administrator knows, per agent, where the policy stops.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from approvals import policy as core
from approvals.policy.run_policy import INHERIT, KINDS
from drivers import registry

# Policy sections, and the kind of request a driver must gate for the section to hold.
_SECTIONS = (
    ("reads", "reads", "does not report the agent's own file reads and searches: the reads rules hold only for "
                       "files its shell commands name (cat .env), not for what it reads by itself"),
    ("edits", "edits", "does not report file changes as edits: the edits rules hold only for files its shell "
                       "commands write (a redirection, tee, cp), not for its own edits"),
    ("tools", "tools", "does not ask before tools other than shell commands and edits (web search, MCP, "
                       "sub-agents): the tools rules are not enforced for it"),
)


@dataclass(frozen=True)
class DriverWarning:
    """One thing of this policy a driver cannot enforce. `field` is the policy part
    (`reads`, `run_policy.sandbox`, ...), or `cannot_see` for what the agent never shows."""

    driver: str
    field: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def _run_policy(run_policy: Any) -> core.RunPolicy | None:
    try:
        return core.parse_run_policy(run_policy) if run_policy is not None else None
    except core.PolicyError:
        return None  # an invalid run policy is refused at save; nothing to warn about


def _capabilities(name: str, descriptor: Any, policy: core.RunPolicy) -> list[DriverWarning]:
    out = []
    for dimension in ("sandbox", "web_search", "browser"):
        value = getattr(policy, dimension)
        if value != INHERIT and value not in getattr(descriptor, dimension):
            modelled = ", ".join(sorted(getattr(descriptor, dimension))) or "none"
            out.append(DriverWarning(
                name, f"run_policy.{dimension}",
                f"cannot honour {dimension} {value} (it models: {modelled}): its runs under this policy are "
                "refused (policy_capability_unsupported)",
            ))
    for kind in KINDS:
        mode = getattr(policy, kind)
        if mode != INHERIT and mode not in descriptor.approval_modes.get(kind, frozenset()):
            out.append(DriverWarning(
                name, f"run_policy.approvals.{kind}",
                f"cannot route {kind.replace('_', ' ')} requests as {mode}: its runs under this policy are refused "
                "(human_decision_mode_unsupported)",
            ))
    if not descriptor.retry:
        for fallback in ("on_reject", "on_timeout"):
            if getattr(policy, fallback) == "retry":
                out.append(DriverWarning(
                    name, f"run_policy.approvals.{fallback}",
                    f"cannot ask again: {fallback} retry ends its runs (abort) instead",
                ))
    return out


def policy_warnings(*, document: Mapping[str, Any] | None, run_policy: Any) -> list[DriverWarning]:
    """For each registered driver, in name order: run-policy values it cannot honour,
    policy sections for requests it does not gate, and what it cannot see at all."""
    document = document if isinstance(document, Mapping) else {}
    parsed = _run_policy(run_policy)
    warnings: list[DriverWarning] = []
    for name in registry.names():
        descriptor = registry.descriptor(name)
        if parsed is not None:
            warnings.extend(_capabilities(name, descriptor, parsed))
        for section, kind, text in _SECTIONS:
            if document.get(section) and kind not in descriptor.gates:
                warnings.append(DriverWarning(name, section, text))
        warnings.extend(DriverWarning(name, "cannot_see", f"cannot see: {line}") for line in descriptor.cannot_see)
    return warnings
