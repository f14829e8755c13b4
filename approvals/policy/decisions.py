"""Small pieces every evaluation shares: fallbacks, class floors, rule reasons."""

from __future__ import annotations

from .classes import CLASS_DEFAULTS, PROTECTED
from .rules import CompiledPolicy, RuleSet
from .verdicts import ALLOW, ASK, DENY, Decision


def fallback(policy: CompiledPolicy, ruleset: RuleSet | None, cls: str | None, what: str
             ) -> tuple[Decision, str, str]:
    """(decision, rule, reason) when no rule of the rule set matched."""
    if ruleset is not None and ruleset.default is not None:
        return ruleset.default, f"{ruleset.name}.default", (
            f"No {ruleset.name} rule matches {what}; the {ruleset.name} default is {ruleset.default}.")
    if policy.classes is not None and cls is not None:
        decision = policy.classes.get(cls)
        if decision is None:
            decision = CLASS_DEFAULTS.get(cls)
            if decision is None:
                return DENY, f"classes.{cls}", (
                    f"{what} is {cls}, and the policy does not map that class, so it is denied.")
            return decision, f"classes.{cls}", f"{what} is {cls}; by default that is {decision}."
        if cls == PROTECTED and decision == ALLOW:
            decision = ASK
        return decision, f"classes.{cls}", f"{what} is {cls}; the policy's classes say {decision}."
    return policy.default, "default", f"No rule decides {what}; the policy default is {policy.default}."


def class_floor(policy: CompiledPolicy, cls: str) -> Decision:
    """The least decision a path of class `outside-workspace` or `protected` gets, whatever
    the rules say: the policy's mapping for it, else ask (outside) / deny (protected);
    protected is never less than ask."""
    mapped = policy.classes.get(cls) if policy.classes is not None else None
    decision = mapped or CLASS_DEFAULTS[cls]
    if cls == PROTECTED and decision == ALLOW:
        return ASK
    return decision


def rule_reason(ruleset: RuleSet, decision: Decision, index: int, what: str) -> str:
    rule = ruleset.rules[decision][index]
    if rule.reason:
        return rule.reason
    kind = {DENY: "denied", ASK: "needs approval", ALLOW: "allowed"}[decision]
    return f"{what} {kind} by the {ruleset.name} rule `{rule.pattern}`."
