"""The clock approval deadlines are read from.

It is an outer edge, like the model behind an agent: tests move it forward instead of
sleeping through a five-minute deadline. Production code reads `now()`; only tests call
`advance()`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

_offset = timedelta(0)


def now() -> datetime:
    return timezone.now() + _offset


def advance(seconds: float) -> None:
    global _offset
    _offset += timedelta(seconds=seconds)


def reset() -> None:
    global _offset
    _offset = timedelta(0)
