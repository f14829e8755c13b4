"""Canonical JSON, the strict input boundary, and the hashes built on them.

Canonical form: keys sorted, no insignificant whitespace, numbers exactly as written, no
HTML escaping, non-ASCII kept as UTF-8. Numbers parsed by `parse_json_strict` keep their
literal text (`JSONInt` / `JSONFloat`), so `1.0`, `1e3` and `-0` survive a round trip.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from .errors import PolicyError

MAX_DEPTH = 256


class JSONInt(int):
    """An integer that remembers the literal it was parsed from."""

    literal: str

    def __new__(cls, literal: str) -> JSONInt:
        obj = super().__new__(cls, int(literal))
        obj.literal = literal
        return obj

    def __reduce__(self) -> tuple[type[JSONInt], tuple[str]]:
        return (JSONInt, (self.literal,))

    def __deepcopy__(self, memo: dict[int, object]) -> JSONInt:
        return self

    def __copy__(self) -> JSONInt:
        return self


class JSONFloat(float):
    """A non-integer number that remembers the literal it was parsed from."""

    literal: str

    def __new__(cls, literal: str) -> JSONFloat:
        obj = super().__new__(cls, float(literal))
        obj.literal = literal
        return obj

    def __reduce__(self) -> tuple[type[JSONFloat], tuple[str]]:
        return (JSONFloat, (self.literal,))

    def __deepcopy__(self, memo: dict[int, object]) -> JSONFloat:
        return self

    def __copy__(self) -> JSONFloat:
        return self


def _dump_str(s: str) -> str:
    return json.dumps(s, ensure_ascii=False)


def _dump(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_dump_str(value))
    elif isinstance(value, (JSONInt, JSONFloat)):
        out.append(value.literal)
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise PolicyError("invalid_json", f"{value!r} is not a JSON number", value=repr(value))
        out.append(float.__repr__(value))
    elif isinstance(value, Mapping):
        items = []
        for k in value:
            if not isinstance(k, str):
                raise PolicyError("invalid_json", f"object key {k!r} is not a string", value=repr(k))
            items.append(k)
        items.sort()
        out.append("{")
        for i, k in enumerate(items):
            if i:
                out.append(",")
            out.append(_dump_str(k))
            out.append(":")
            _dump(value[k], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _dump(item, out)
        out.append("]")
    else:
        raise PolicyError(
            "invalid_json", f"{type(value).__name__} is not a JSON value", value=repr(value)
        )


def canonical_json(value: Any) -> str:
    """The canonical text of a JSON value (see the module docstring)."""
    out: list[str] = []
    _dump(value, out)
    return "".join(out)


def _refuse(message: str, **kw: Any) -> PolicyError:
    return PolicyError("invalid_json", message, **kw)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, val in pairs:
        if key in obj:
            raise _refuse(f"object key {key!r} appears more than once", value=key)
        obj[key] = val
    return obj


def _bad_constant(name: str) -> Any:
    raise _refuse(f"{name} is not valid JSON", value=name)


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_depth(text: str) -> None:
    brackets = _NOT_BRACKET.sub("", _STRINGS.sub("", text))
    depth = 0
    for ch in brackets:
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise _refuse(f"nested deeper than {MAX_DEPTH} levels")
        else:
            depth -= 1


def _check_surrogates(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                raise _refuse("a string contains a lone surrogate escape (such as \\ud800)")
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def parse_json_strict(data: bytes | bytearray | str) -> Any:
    """Parse exactly one JSON value at the input boundary, or refuse with `invalid_json`.

    Refused: invalid UTF-8, a byte-order mark, anything but one well-formed value, nesting
    deeper than 256, a repeated object key, a lone surrogate escape, NaN/Infinity.
    """
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _refuse(f"not valid UTF-8 (byte {exc.start})") from None
    elif isinstance(data, str):
        text = data
        if _SURROGATE.search(text):
            raise _refuse("the text contains a lone surrogate, which is not valid UTF-8")
    else:
        raise _refuse(f"expected bytes or str, got {type(data).__name__}")
    if text.startswith("\ufeff"):
        raise _refuse("a byte-order mark is not allowed")
    if not text.strip():
        raise _refuse("empty input: expected one JSON value")
    _check_depth(text)
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_int=JSONInt,
            parse_float=JSONFloat,
            parse_constant=_bad_constant,
        )
    except PolicyError:
        raise
    except json.JSONDecodeError as exc:
        raise _refuse(f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:
        raise _refuse(f"malformed JSON: {exc}") from None
    _check_surrogates(value)
    return value


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def approval_hash(*, kind: str, capability: Mapping[str, Any], presentation: Mapping[str, Any], request: Mapping[str, Any]) -> str:
    """The identity of what a reviewer saw: kind, capability, presentation, exact request."""
    return sha256_hex(
        canonical_json(
            {"kind": kind, "capability": capability, "presentation": presentation, "request": request}
        )
    )


def policy_version(document: Mapping[str, Any]) -> str:
    """A policy's identity: the sha256 of its canonical document (64 hex characters)."""
    return sha256_hex(canonical_json(document))
