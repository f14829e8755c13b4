"""The one error type the policy core raises: a refusal that names what was wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ERROR_CODES = frozenset(
    {
        "invalid_policy",
        "invalid_request",
        "invalid_json",
        "invalid_grant",
        "invalid_answer",
        "invalid_questions",
        "policy_capability_unsupported",
        "human_decision_mode_unsupported",
    }
)


def json_type(value: Any) -> str:
    """The JSON name of a value's type, for messages (never a Python class name)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


class PolicyError(ValueError):
    """A refused input. `code` is stable (the API answers 400 with it), `field` is a path
    such as ``commands.deny[1]`` or ``approvals.question``, `value` the offending value,
    and `extra` holds code-specific fields (driver, dimension, kind, mode...)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str | None = None,
        value: Any = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.value = value
        self.extra = dict(extra)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "field": self.field,
            "value": self.value,
        }
        out.update(self.extra)
        return out

    def __repr__(self) -> str:
        return f"PolicyError({self.code!r}, {self.message!r}, field={self.field!r})"
