"""Structured questions (issue 4): validate them, normalise answers, describe answers.

A question: `{"id", "header", "question", "options": [{"label", "description"}],
"multi_select": bool, "allow_other": bool, "secret": bool}`; one with no options is
answered in free text. A form field (an MCP server's elicitation, drivers/elicitation.py)
may add `"required": true` (the answer cannot leave it out), `"value_type"` (`text`,
`number` or `integer`: the free text must be one) with `"minimum"` / `"maximum"`, and for
text `"min_length"` / `"max_length"` and `"format"` (`email`, `uri`, `date`, `date-time`). An answer record is keyed by question id: a list of chosen labels
(`{"color": ["Red"]}`), the free text of "Other" (`{"name": "free text"}`), or both — the
labels with the free text after them (`{"color": ["Red", "a darker red"]}`). A question
may stay unanswered (a partial answer); the agent is told so (`answers_for_agent`). A
secret question's answer is never recorded: the record holds `[secret]` (`mask_secrets`).
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import PolicyError

_QUESTION_KEYS = ("id", "header", "question", "options", "multi_select", "allow_other", "secret",
                  "required", "value_type", "minimum", "maximum", "min_length", "max_length", "format")
VALUE_TYPES = ("text", "number", "integer")
FORMATS = ("email", "uri", "date", "date-time")
SECRET_MARK = "[secret]"
NOT_ANSWERED = "(no answer: the reviewer left this question unanswered)"
SECRET_NOT_KEPT = "(the secret answer is not kept by Gatehouse; ask again if you still need it)"


def _bad_questions(message: str, field: str, value: Any) -> PolicyError:
    return PolicyError("invalid_questions", message, field=field, value=value)


def _text(value: Any, field: str, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise _bad_questions(f"{field} must be a non-empty string", field, value)
    return value


def validate_questions(questions: Any) -> list[dict[str, Any]]:
    if not isinstance(questions, Sequence) or isinstance(questions, (str, bytes)) or not questions:
        raise _bad_questions("questions must be a non-empty list", "questions", questions)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, q in enumerate(questions):
        where = f"questions[{i}]"
        if not isinstance(q, Mapping):
            raise _bad_questions(f"{where} must be an object", where, q)
        for key in q:
            if key not in _QUESTION_KEYS:
                raise _bad_questions(f"unknown field {where}.{key}", f"{where}.{key}", q[key])
        qid = _text(q.get("id"), f"{where}.id")
        if qid in seen:
            raise _bad_questions(f"question id {qid!r} appears more than once", f"{where}.id", qid)
        seen.add(qid)
        options = q.get("options", [])
        if not isinstance(options, list):
            raise _bad_questions(f"{where}.options must be a list", f"{where}.options", options)
        clean_options = []
        labels: set[str] = set()
        for j, opt in enumerate(options):
            owhere = f"{where}.options[{j}]"
            if not isinstance(opt, Mapping) or set(opt) - {"label", "description"}:
                raise _bad_questions(f"{owhere} must be {{label, description}}", owhere, opt)
            label = _text(opt.get("label"), f"{owhere}.label")
            if label in labels:
                raise _bad_questions(f"option label {label!r} appears twice", f"{owhere}.label", label)
            labels.add(label)
            clean_options.append({"label": label, "description": _text(opt.get("description"),
                                                                          f"{owhere}.description", required=False)})
        for flag in ("multi_select", "allow_other", "secret"):
            if not isinstance(q.get(flag, False), bool):
                raise _bad_questions(f"{where}.{flag} must be true or false", f"{where}.{flag}", q.get(flag))
        # a question with no options is answered in free text (Codex's plain questions)
        allow_other = q.get("allow_other", False) or not clean_options
        out.append({**_constraints(q, where),
            "id": qid,
            "header": _text(q.get("header"), f"{where}.header", required=False) or qid,
            "question": _text(q.get("question"), f"{where}.question"),
            "options": clean_options,
            "multi_select": q.get("multi_select", False),
            "allow_other": allow_other,
            "secret": q.get("secret", False),
        })
    return out


def _constraints(q: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A form field's constraints, checked (only those given are kept)."""
    out: dict[str, Any] = {}
    if "required" in q:
        if not isinstance(q["required"], bool):
            raise _bad_questions(f"{where}.required must be true or false", f"{where}.required", q["required"])
        if q["required"]:
            out["required"] = True
    value_type = q.get("value_type", "text")
    if value_type not in VALUE_TYPES:
        raise _bad_questions(f"{where}.value_type must be one of {', '.join(VALUE_TYPES)}", f"{where}.value_type", value_type)
    if value_type != "text":
        out["value_type"] = value_type
    for key in ("minimum", "maximum"):
        if key in q:
            if value_type == "text" or isinstance(q[key], bool) or not isinstance(q[key], (int, float)):
                raise _bad_questions(f"{where}.{key} must be a number, on a number question", f"{where}.{key}", q[key])
            out[key] = q[key]
    for key in ("min_length", "max_length"):
        if key in q:
            if value_type != "text" or isinstance(q[key], bool) or not isinstance(q[key], int) or q[key] < 0:
                raise _bad_questions(f"{where}.{key} must be a whole number, on a text question", f"{where}.{key}", q[key])
            out[key] = q[key]
    if "format" in q:
        if value_type != "text" or q["format"] not in FORMATS:
            raise _bad_questions(f"{where}.format must be one of {', '.join(FORMATS)}, on a text question",
                                 f"{where}.format", q["format"])
        out["format"] = q["format"]
    return out


def _check_value(q: Mapping[str, Any], text: str, field: str) -> None:
    """Free text against the question's constraints (`invalid_answer` says what is wrong)."""
    value_type = q.get("value_type", "text")
    name = q.get("header") or q["id"]
    if value_type != "text":
        try:
            number = int(text.strip()) if value_type == "integer" else float(text.strip())
        except ValueError:
            raise _bad_answer(f"{name}: {text!r} is not {'a whole number' if value_type == 'integer' else 'a number'}",
                              field, text) from None
        if number != number or number in (float("inf"), float("-inf")):
            raise _bad_answer(f"{name}: {text!r} is not a number", field, text)
        if "minimum" in q and number < q["minimum"]:
            raise _bad_answer(f"{name}: {text.strip()} is below the minimum {q['minimum']}", field, text)
        if "maximum" in q and number > q["maximum"]:
            raise _bad_answer(f"{name}: {text.strip()} is above the maximum {q['maximum']}", field, text)
        return
    if "min_length" in q and len(text) < q["min_length"]:
        raise _bad_answer(f"{name}: at least {q['min_length']} characters", field, text)
    if "max_length" in q and len(text) > q["max_length"]:
        raise _bad_answer(f"{name}: at most {q['max_length']} characters", field, text)
    fmt = q.get("format")
    if fmt and not _FORMAT_CHECKS[fmt](text.strip()):
        raise _bad_answer(f"{name}: {text!r} is not {_FORMAT_NAMES[fmt]}", field, text)


def _is_email(text: str) -> bool:
    local, at, domain = text.partition("@")
    return bool(at and local and "." in domain and not any(c.isspace() for c in text))


def _is_uri(text: str) -> bool:
    scheme, colon, rest = text.partition(":")
    return bool(colon and rest and scheme[:1].isalpha() and all(c.isalnum() or c in "+-." for c in scheme)
                and not any(c.isspace() for c in text))


def _is_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_datetime(text: str) -> bool:
    try:
        datetime.datetime.fromisoformat(text)
    except ValueError:
        return False
    return "T" in text or " " in text


_FORMAT_CHECKS = {"email": _is_email, "uri": _is_uri, "date": _is_date, "date-time": _is_datetime}
_FORMAT_NAMES = {"email": "an e-mail address", "uri": "a URI (scheme:…)", "date": "a date (YYYY-MM-DD)",
                 "date-time": "a date and time (YYYY-MM-DDTHH:MM)"}


def _bad_answer(message: str, field: str, value: Any) -> PolicyError:
    return PolicyError("invalid_answer", message, field=field, value=value)


def answers_of(questions: Any, raw: Mapping[str, Any], other: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Normalise raw answers: `{"id": [labels...]}` or `{"id": "free text"}` (Other), and
    `other` (`{"id": "free text"}`) given beside chosen labels where the question allows it.

    A single label may be given as a string; an unknown id or label, several labels for a
    single-select question, or free text where Other is not allowed are refused
    (`invalid_answer`). Empty answers are dropped (the question stays unanswered).
    """
    qs = {q["id"]: q for q in validate_questions(questions)}
    if not isinstance(raw, Mapping):
        raise _bad_answer("answers must be an object keyed by question id", "answers", raw)
    out: dict[str, Any] = {}
    for qid, value in raw.items():
        field = f"answers.{qid}"
        q = qs.get(qid)
        if q is None:
            raise _bad_answer(f"no question has the id {qid!r}", field, qid)
        labels = {o["label"] for o in q["options"]}
        if isinstance(value, str):
            if value in labels:
                out[qid] = [value]
            elif not value.strip():
                continue
            elif q["allow_other"]:
                _check_value(q, value, field)
                out[qid] = value
            else:
                raise _bad_answer(f"{value!r} is not an option of {qid!r}", field, value)
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _bad_answer(f"{field} must be a list of option labels or a string", field, value)
        chosen: list[str] = []
        for label in value:
            if label not in labels:
                raise _bad_answer(f"{label!r} is not an option of {qid!r}", field, label)
            if label not in chosen:
                chosen.append(label)
        if len(chosen) > 1 and not q["multi_select"]:
            raise _bad_answer(f"{qid!r} takes one answer", field, value)
        if chosen:
            out[qid] = chosen
    for qid, text in (other or {}).items():
        field = f"other.{qid}"
        q = qs.get(qid)
        if q is None:
            raise _bad_answer(f"no question has the id {qid!r}", field, qid)
        if not isinstance(text, str):
            raise _bad_answer(f"{field} must be a string", field, text)
        if not text.strip():
            continue
        if not q["allow_other"]:
            raise _bad_answer(f"{qid!r} takes no answer of your own", field, text)
        _check_value(q, text, field)
        given = out.get(qid)
        # the options chosen, and the reviewer's own words after them
        out[qid] = [*given, text] if isinstance(given, list) else text
    for q in qs.values():
        if q.get("required") and q["id"] not in out:
            raise _bad_answer(f"{q['header']} needs an answer", f"answers.{q['id']}", None)
    return out


def mask_secrets(questions: Any, answers: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The record as stored and shown: each secret question's answer replaced by `[secret]`."""
    if answers is None:
        return None
    secret = {q["id"] for q in validate_questions(questions) if q["secret"]}
    return {qid: (SECRET_MARK if qid in secret else value) for qid, value in answers.items()}


def secrets_of(questions: Any, answers: Mapping[str, Any] | None) -> dict[str, Any]:
    """The answers of the secret questions (passed to the agent, never recorded)."""
    secret = {q["id"] for q in validate_questions(questions) if q["secret"]}
    return {qid: value for qid, value in (answers or {}).items() if qid in secret}


def answers_for_agent(questions: Any, answers: Mapping[str, Any] | None) -> dict[str, Any]:
    """What the agent is told: every question's answer, an unanswered one said in words, a
    secret one whose answer is no longer known (a resumed run) said so too."""
    told: dict[str, Any] = {}
    for q in validate_questions(questions):
        value = (answers or {}).get(q["id"])
        if value == SECRET_MARK:
            told[q["id"]] = SECRET_NOT_KEPT
        elif not value or (isinstance(value, str) and not value.strip()):
            told[q["id"]] = NOT_ANSWERED
        else:
            told[q["id"]] = value
    return told


def is_complete(questions: Any, answers: Mapping[str, Any] | None) -> bool:
    """Every question has a non-empty answer."""
    if not answers:
        return False
    for q in validate_questions(questions):
        value = answers.get(q["id"])
        if not value or (isinstance(value, str) and not value.strip()):
            return False
    return True


def describe_answers(questions: Any, answers: Mapping[str, Any] | None) -> str:
    """`Answered: Color = Red; Scope = Auth, Export`, `Partially answered: ...`, or
    `Declined: no human answer`."""
    qs = validate_questions(questions)
    parts = []
    for q in qs:
        value = (answers or {}).get(q["id"])
        if not value:
            continue
        text = value if isinstance(value, str) else ", ".join(value)
        parts.append(f"{q['header']} = {text}")
    if not parts:
        return "Declined: no human answer"
    head = "Answered" if is_complete(qs, answers) else "Partially answered"
    return f"{head}: " + "; ".join(parts)
