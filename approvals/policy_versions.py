"""Saving policies: validated whole, every change a new immutable PolicyVersion.

`policy_save` is the one write of a policy's content (the admin, the import command and
the presets' successors all call it): it refuses a policy with any problem — each named
by section and rule — or a failing example, and appends a version when the content (rule
document or run policy) changed. `policy_restore` writes an old version's content as a
new version; `policy_import` / `policy_export_json` move a policy through a JSON file
that round-trips byte for byte.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max

from approvals import policy as core
from approvals.models import Policy, PolicyVersion
from infra.prepared import Prepared

EXPORT_FORMAT = "gatehouse-policy"
_WRAPPER_KEYS = ("format", "name", "description", "document", "run_policy", "version")


@dataclass(frozen=True)
class Problem:
    """One reason a policy cannot be saved. `field` is the part of the policy it concerns
    (`document`, `run_policy`, `shadow_policy`), `where` the path inside it
    (`commands.deny[1]`, `approvals.timeout_s`, `examples[0]`)."""

    field: str
    where: str
    message: str

    def __str__(self) -> str:
        return self.message


class PolicyInvalid(core.PolicyError):
    """A save refused: `problems` lists every one (the message joins them)."""

    def __init__(self, problems: list[Problem]) -> None:
        first = problems[0]
        super().__init__(
            "invalid_policy", "; ".join(p.message for p in problems), field=first.where or first.field,
            problems=[{"field": p.field, "where": p.where, "message": p.message} for p in problems],
        )
        self.problems = problems


# --- Validation ------------------------------------------------------------------------------------

_RULE = re.compile(r"^(commands|edits|reads)\.(allow|ask|deny)\[(\d+)\]")


def _rule_pattern(document: Any, where: str) -> str | None:
    """The pattern of the rule a field path points into (`commands.deny[1].match`)."""
    match = _RULE.match(where or "")
    if not match or not isinstance(document, Mapping):
        return None
    section, decision, index = match.group(1), match.group(2), int(match.group(3))
    rules = (document.get(section) or {}).get(decision) if isinstance(document.get(section), Mapping) else None
    if not isinstance(rules, list) or index >= len(rules):
        return None
    entry = rules[index]
    pattern = entry.get("match") if isinstance(entry, Mapping) else entry
    return pattern if isinstance(pattern, str) else None


def _with_rule(message: str, document: Any, where: str) -> str:
    """The core's message (it starts with the path: section and rule), with the rule's
    pattern when the path points into a rule, so the administrator sees which one."""
    pattern = _rule_pattern(document, where)
    return f"{message} (the rule “{pattern}”)" if pattern and pattern not in message else message


def document_problems(document: Any) -> list[Problem]:
    """Every problem of a rule document (`core.policy_problems`), each naming its section
    and rule and what is wrong."""
    if not isinstance(document, Mapping):
        return [Problem("document", "", "The rule policy must be a JSON object.")]
    return [
        Problem("document", e.field or "", _with_rule(e.message, document, e.field or ""))
        for e in core.policy_problems(document)
    ]


def _shown_request(request: Any) -> str:
    if isinstance(request, Mapping) and request.get("tool") == "bash" and isinstance(request.get("input"), Mapping):
        return f"`{request['input'].get('command')}`"
    try:
        return core.canonical_json(request)
    except core.PolicyError:
        return repr(request)


def example_failures(document: Mapping[str, Any]) -> list[Problem]:
    """Each example of the document (rule-level and policy-level) that does not hold."""
    return [
        Problem(
            "document", f.where,
            f"Example {f.where} fails: {f.message} (request {_shown_request(f.request)}: got {f.got}, expected {f.expected})",
        )
        for f in core.check_examples(document)
    ]


def run_policy_problems(run_policy: Any) -> list[Problem]:
    if run_policy is None:
        return []
    try:
        core.parse_run_policy(run_policy)
    except core.PolicyError as exc:
        return [Problem("run_policy", exc.field or "", f"Run policy: {exc.message}")]
    return []


def policy_problems(*, document: Any, run_policy: Any) -> list[Problem]:
    """Everything that keeps this content from being saved: the document's problems, else
    its failing examples; and the run policy's."""
    problems = document_problems(document)
    if not problems:
        problems = example_failures(document)
    return problems + run_policy_problems(run_policy)


def _normalised(value: Any) -> Any:
    """What the database will hand back (numbers as Python reads them), so the version
    hash is the hash of what is stored."""
    return None if value is None else json.loads(json.dumps(value))


# --- Saving --------------------------------------------------------------------------------------


# Read by every run's creation (compiled once: `infra.prepared`).
_LATEST: Prepared[PolicyVersion] = Prepared(
    lambda policy_id: PolicyVersion.objects.filter(policy_id=policy_id).order_by("-number")[:1], int
)


def policy_latest_version(policy: Policy) -> PolicyVersion | None:
    return _LATEST.first(policy.pk) if policy.pk is not None else None


def _same_content(version: PolicyVersion | None, document: Any, run_policy: Any) -> bool:
    if version is None:
        return False
    return core.canonical_json(version.document) == core.canonical_json(document) and core.canonical_json(
        version.run_policy
    ) == core.canonical_json(run_policy)


def policy_save(*, policy: Policy, user: Any = None, comment: str = "") -> Policy:
    """Validate and store a policy; a new PolicyVersion when its content changed.

    1. Refuse (`PolicyInvalid`, every problem listed) an invalid rule document, a failing
       example, an invalid run policy, or a policy that shadows itself.
    2. Store it with its version hash; marking it default unmarks the previous default.
    3. Append version N+1 (author, comment) unless the latest version has this content.
    """
    document, run_policy = _normalised(policy.document or {}), _normalised(policy.run_policy)
    problems = policy_problems(document=document, run_policy=run_policy)
    if policy.pk is not None and policy.shadow_policy_id == policy.pk:
        problems.append(Problem("shadow_policy", "shadow_policy", "A policy cannot be its own shadow."))
    if problems:
        raise PolicyInvalid(problems)
    policy.document, policy.run_policy = document, run_policy
    policy.version = core.policy_version(document)
    with transaction.atomic():
        if policy.pk is not None:
            # Two saves of one policy queue here, so each gets its own version number.
            list(Policy.objects.select_for_update().filter(pk=policy.pk).values_list("id", flat=True))
        if policy.is_default:
            Policy.objects.exclude(pk=policy.pk).filter(is_default=True).update(is_default=False)
        policy.save()
        if not _same_content(policy_latest_version(policy), document, run_policy):
            number = (PolicyVersion.objects.filter(policy=policy).aggregate(n=Max("number"))["n"] or 0) + 1
            PolicyVersion.objects.create(
                policy=policy, number=number, document=document, run_policy=run_policy, version=policy.version,
                author=user if getattr(user, "pk", None) else None, comment=comment[:500],
            )
    return policy


def policy_restore(*, policy: Policy, number: int, user: Any = None) -> PolicyVersion:
    """Write version `number`'s content as a new version (history is only appended to)."""
    old = PolicyVersion.objects.filter(policy=policy, number=number).first()
    if old is None:
        raise core.PolicyError("invalid_policy", f"{policy.name} has no version {number}.", field="version")
    if _same_content(policy_latest_version(policy), old.document, old.run_policy):
        raise core.PolicyError(
            "invalid_policy", f"Version {number} is the current content of {policy.name}: nothing to restore.",
            field="version",
        )
    policy.document, policy.run_policy = old.document, old.run_policy
    policy_save(policy=policy, user=user, comment=f"Restored version {number}.")
    latest = policy_latest_version(policy)
    assert latest is not None  # policy_save just wrote it
    return latest


def version_diff(older: PolicyVersion, newer: PolicyVersion) -> list[str]:
    """A unified diff of two versions' content, as indented JSON (sorted keys)."""

    def lines(version: PolicyVersion) -> list[str]:
        content = {"document": version.document, "run_policy": version.run_policy}
        return json.dumps(content, indent=2, sort_keys=True, ensure_ascii=False).splitlines()

    return list(
        difflib.unified_diff(
            lines(older), lines(newer), f"version {older.number}", f"version {newer.number}", lineterm="", n=4
        )
    )


# --- Import and export -------------------------------------------------------------------------


def policy_export_json(policy: Policy) -> str:
    """The policy as a file (`policy_import` reads it back): indented, keys sorted, one
    trailing newline, so export → import → export is byte-identical."""
    body = {
        "format": EXPORT_FORMAT,
        "name": policy.name,
        "description": policy.description,
        "document": policy.document,
        "run_policy": policy.run_policy,
        "version": policy.version,
    }
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class PolicyFile:
    """What an import file says: a bare rule document, or an export (`wrapped`)."""

    document: Any
    run_policy: Any = None
    name: str = ""
    description: str | None = None
    wrapped: bool = False


def parse_policy_file(data: bytes | str) -> PolicyFile:
    """Read a policy file at the boundary (strict JSON): an export
    `{"name", "document", "run_policy", ...}` or a bare rule document."""
    raw = core.parse_json_strict(data.encode() if isinstance(data, str) else data)
    if not isinstance(raw, Mapping):
        raise core.PolicyError("invalid_policy", "A policy file holds a JSON object.", field="")
    if "document" not in raw:
        return PolicyFile(document=raw)
    for key in raw:
        if key not in _WRAPPER_KEYS:
            raise core.PolicyError(
                "invalid_policy", f"unknown field {key!r} in the policy file (expected {', '.join(_WRAPPER_KEYS)})", field=key
            )
    name, description = raw.get("name", ""), raw.get("description")
    if not isinstance(name, str) or (description is not None and not isinstance(description, str)):
        raise core.PolicyError("invalid_policy", "name and description must be strings", field="name")
    return PolicyFile(
        document=raw["document"], run_policy=raw.get("run_policy"), name=name, description=description, wrapped=True
    )


def policy_import(*, data: bytes | str, name: str = "", user: Any = None, comment: str = "") -> Policy:
    """Create or update the named policy from a file (`name` overrides the file's). An
    export replaces the run policy too; a bare document keeps the policy's run policy."""
    parsed = parse_policy_file(data)
    name = (name or parsed.name).strip()
    if not name:
        raise core.PolicyError("invalid_policy", "Name the policy (--name): the file does not.", field="name")
    if len(name) > 100:
        raise core.PolicyError("invalid_policy", "A policy name has at most 100 characters.", field="name")
    with transaction.atomic():
        policy = Policy.objects.select_for_update().filter(name=name).first() or Policy(name=name)
        policy.document = parsed.document
        if parsed.wrapped:
            policy.run_policy = parsed.run_policy
        if parsed.description is not None:
            policy.description = parsed.description
        return policy_save(policy=policy, user=user, comment=comment or "Imported.")
