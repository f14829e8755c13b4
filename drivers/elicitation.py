"""MCP elicitation: an MCP server's request for structured input, shown as questions.

An MCP server may ask the person behind the agent to fill in a form (`elicitation/create`,
MCP 2025-06-18 and later): a message and a `requestedSchema`, a flat JSON-schema object
whose properties are primitives. Codex forwards it as `mcpServer/elicitation/request`, an
ACP agent as `elicitation/create`. Gatehouse shows it as a question approval of subtype
`mcp-elicitation`, one question per property, and sends back the answer as the MCP
result: `{"action": "accept", "content": {...}}`, `decline` (the person declined) or
`cancel` (nobody answered: the run stops or the request was withdrawn).

Each property becomes (approvals/policy/questions.py holds the question shape):

* `string` with `enum` (and `enumNames`), or `oneOf` / `anyOf` of `{const, title}`: options;
  the answer is the chosen value, not its title;
* `array` whose `items` are such an enum: options, several may be chosen;
* `boolean`: the options "Yes" and "No";
* `number` / `integer`: free text that must be one, within `minimum` / `maximum`;
* `string`: free text, within `minLength` / `maxLength`, of `format` email, uri, date or
  date-time where the schema says so.

`required` properties must be answered; the others may be left empty (left out of the
content). Anything else (a nested object, an array of free values, a URL-mode
elicitation, a schema that is not an object) cannot be shown as this form: `Unsupported`
says why, and the driver declines it with that reason. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drivers.base import ToolRequest

SUBTYPE = "mcp-elicitation"
YES, NO = "Yes", "No"
_FORMATS = ("email", "uri", "date", "date-time")
# MCP limits a form to primitives; a form this long is not something a person fills in.
MAX_FIELDS = 50


class Unsupported(ValueError):
    """The form cannot be shown as questions; the message says why."""


def _enum_options(spec: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """(value, label) pairs of an enum schema, or None when it is not one."""
    if isinstance(spec.get("enum"), list):
        values = spec["enum"]
        names = spec.get("enumNames") if isinstance(spec.get("enumNames"), list) else None
        if not all(isinstance(v, str) for v in values):
            raise Unsupported("only text choices can be shown")
        labels = [str(n) for n in names] if names and len(names) == len(values) else [str(v) for v in values]
        return list(zip(values, labels, strict=True))
    for key in ("oneOf", "anyOf"):
        if isinstance(spec.get(key), list):
            pairs = []
            for option in spec[key]:
                if not isinstance(option, Mapping) or not isinstance(option.get("const"), str):
                    raise Unsupported(f"a {key} choice without a text `const`")
                pairs.append((option["const"], str(option.get("title") or option["const"])))
            return pairs
    return None


def _options(pairs: list[tuple[str, str]], field: str) -> list[dict[str, str]]:
    if not pairs:
        raise Unsupported(f"field {field!r} offers no choice")
    labels = [label.strip() or value for value, label in pairs]
    if len(set(labels)) != len(labels):  # two titles alike: show the values instead
        labels = [value for value, _ in pairs]
    if len(set(labels)) != len(labels) or not all(label.strip() for label in labels):
        raise Unsupported(f"field {field!r} has choices that cannot be told apart")
    return [{"label": label, "description": value if value != label else ""} for (value, _), label in zip(pairs, labels, strict=True)]


def _question(name: str, spec: Any, required: bool) -> dict[str, Any]:
    if not isinstance(spec, Mapping):
        raise Unsupported(f"field {name!r} has no schema")
    title = str(spec.get("title") or "").strip()
    description = str(spec.get("description") or "").strip()
    q: dict[str, Any] = {
        "id": name,
        "header": title or name,
        "question": description or title or name,
        "options": [],
        "multi_select": False,
        "allow_other": False,
    }
    if required:
        q["required"] = True
    kind = spec.get("type")
    pairs = _enum_options(spec) if kind in ("string", None) else None
    if pairs is not None:
        q["options"] = _options(pairs, name)
        return q
    if kind == "array":
        items = spec.get("items")
        pairs = _enum_options(items) if isinstance(items, Mapping) else None
        if pairs is None:
            raise Unsupported(f"field {name!r} is a list of free values, which the form cannot ask for")
        q["options"], q["multi_select"] = _options(pairs, name), True
        return q
    if kind == "boolean":
        q["options"] = [{"label": YES, "description": ""}, {"label": NO, "description": ""}]
        return q
    if kind in ("number", "integer"):
        q["allow_other"], q["value_type"] = True, kind
        for key in ("minimum", "maximum"):
            if isinstance(spec.get(key), (int, float)) and not isinstance(spec.get(key), bool):
                q[key] = spec[key]
        return q
    if kind == "string":
        q["allow_other"] = True
        for key, ours in (("minLength", "min_length"), ("maxLength", "max_length")):
            if isinstance(spec.get(key), int) and not isinstance(spec.get(key), bool) and spec[key] >= 0:
                q[ours] = spec[key]
        if spec.get("format") in _FORMATS:
            q["format"] = spec["format"]
        return q
    raise Unsupported(f"field {name!r} is of type {kind!r}, which the form cannot ask for")


def questions_of(schema: Any) -> list[dict[str, Any]]:
    """The form's questions (`Unsupported` when it cannot be shown as one)."""
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise Unsupported("the requested schema is not an object of fields")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        raise Unsupported("the form has no fields")
    if len(properties) > MAX_FIELDS:
        raise Unsupported(f"the form has {len(properties)} fields (at most {MAX_FIELDS} are shown)")
    given = schema.get("required")
    required: list[Any] = given if isinstance(given, list) else []
    return [_question(str(name), spec, name in required) for name, spec in properties.items()]


def request_of(params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(message, presentation) of an elicitation in MCP's shape: `{"mode": "form",
    "message", "requestedSchema"}` (mode absent = form). `Unsupported` otherwise."""
    mode = params.get("mode") or "form"
    if mode != "form":
        raise Unsupported(f"a {mode!r} elicitation (only forms are shown)")
    message = str(params.get("message") or "").strip() or "The MCP server asks for input."
    return message, {"title": "An MCP server asks", "message": message, "questions": questions_of(params.get("requestedSchema"))}


def content_of(schema: Mapping[str, Any], answers: Mapping[str, Any]) -> dict[str, Any]:
    """The answers (question id -> chosen labels or free text, as a decision carries them)
    as the MCP `content`: each field's value in its schema's type; unanswered ones left out."""
    content: dict[str, Any] = {}
    properties = schema.get("properties") or {}
    for q in questions_of(schema):
        given = answers.get(q["id"])
        if given is None or given == [] or given == "":
            continue
        values = [given] if isinstance(given, str) else [str(v) for v in given]
        spec = properties[q["id"]]
        if q["options"]:
            by_label = {o["label"]: (o["description"] or o["label"]) for o in q["options"]}
            chosen = [by_label[v] for v in values if v in by_label]
            if spec.get("type") == "boolean":
                content[q["id"]] = chosen[0] == YES if chosen else None
            elif q["multi_select"]:
                content[q["id"]] = chosen
            elif chosen:
                content[q["id"]] = chosen[0]
        elif q.get("value_type") == "integer":
            content[q["id"]] = int(values[-1].strip())
        elif q.get("value_type") == "number":
            number = float(values[-1].strip())
            content[q["id"]] = int(number) if number.is_integer() and "." not in values[-1] else number
        else:
            content[q["id"]] = values[-1]
    return {k: v for k, v in content.items() if v is not None}


def tool_request(server: str, params: Mapping[str, Any], cwd: str) -> ToolRequest:
    """An elicitation (MCP's params) from `server` ("" when the agent asks itself, as over
    ACP) -> a question approval of subtype
    `mcp-elicitation` (`Unsupported` when it cannot be shown)."""
    message, presentation = request_of(params)
    presentation["server"] = server  # "": the agent itself asks (ACP)
    return ToolRequest(
        tool=f"mcp__{server}__elicitation" if server else "elicitation",
        input={"server": server, "message": message, "questions": presentation["questions"]},
        cwd=cwd,
        kind="question",
        subtype=SUBTYPE,
        presentation=presentation,
    )


def reply_of(schema: Mapping[str, Any], outcome: str, answers: Mapping[str, Any] | None) -> dict[str, Any]:
    """A decision (its outcome and answers) -> the MCP elicitation result."""
    if outcome == "answer":
        return {"action": "accept", "content": content_of(schema, answers or {})}
    return {"action": "cancel" if outcome == "abort" else "decline"}
