"""The base of the apps' refusals, so the API maps them without knowing the apps."""

from __future__ import annotations

from typing import Any, ClassVar


class DomainError(Exception):
    """A refused write: `code` is stable for API clients, `status` the HTTP status the API
    answers (from the subclass's `STATUS` table, else 400), `fields` go into the error body
    (`field`, `files`...). project/api.py's exception handler maps every subclass alike."""

    STATUS: ClassVar[dict[str, int]] = {}

    def __init__(self, code: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.fields = fields
        self.status = self.STATUS.get(code, 400)
