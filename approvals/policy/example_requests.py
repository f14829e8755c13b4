"""The shape of a policy's examples, and the fixed context they are evaluated in.

A command, edit or read rule may be written as an object with examples:

    {"match": "git push", "reason": "…",
     "examples": {"match": ["git push origin main"], "not_match": ["git status"]}}

and a policy may carry top-level examples:

    "examples": [{"request": "git push origin main", "expect": "deny", "why": "…", "rule": "commands.deny[0]"}]

An example entry is a string or a whole request (`{"tool", "input", "cwd"?}` as
`validate_request` accepts it). A string is a shell command for a command rule and for a
top-level example (a `bash` request), a path for an edit rule (a `write` of it) or a read
rule (a `read` of it). `why` (a note) and `rule` (the rule label that must decide) are
optional.

Every example is evaluated in one fixed context, whatever machine checks it
(`EXAMPLE_CONTEXT`): the workspace is `/workspace` (a request without `cwd` runs there, a
relative path is inside it), `~` is `/home/agent`, Gatehouse's own directory is
`/srv/gatehouse/var`, paths are resolved by their text alone (no symlink is read, a glob
expands to no file), the run has made no tool call yet and holds no session grant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .errors import PolicyError, json_type
from .paths import PathContext
from .request import validate_request

EXAMPLE_WORKSPACE = "/workspace"
EXAMPLE_HOME = "/home/agent"
EXAMPLE_VAR = "/srv/gatehouse/var"
EXAMPLE_CONTEXT = PathContext(workspace=EXAMPLE_WORKSPACE, homes=(EXAMPLE_HOME,), protected_dirs=(EXAMPLE_VAR,),
                              filesystem=False)

EXAMPLE_KINDS = ("match", "not_match")
POLICY_EXAMPLE_KEYS = ("request", "expect", "why", "rule")
# The tool a string example of each rule set stands for.
_STRING_TOOL = {"commands": ("bash", "command"), "edits": ("write", "file_path"), "reads": ("read", "file_path")}

# (field, message, value): how validation reports a problem and goes on
Report = Callable[[str, str, Any], None]


def example_request(entry: Any, section: str) -> dict[str, Any]:
    """The request an example entry stands for, with `cwd` filled in; PolicyError
    (`invalid_request`, its field relative to the entry) when it is not one."""
    if isinstance(entry, str):
        if not entry.strip():
            raise PolicyError("invalid_request", "an example must not be empty", field="", value=entry)
        if "\x00" in entry:
            raise PolicyError("invalid_request", "an example must not contain NUL characters", field="",
                              value=entry)
        tool, key = _STRING_TOOL[section]
        return {"tool": tool, "input": {key: entry}, "cwd": EXAMPLE_WORKSPACE}
    if not isinstance(entry, Mapping):
        what = "a shell command" if section == "commands" else "a path"
        raise PolicyError("invalid_request", f"an example must be {what} (a string) or a request object "
                                             f"(got {json_type(entry)})", field="", value=entry)
    request = validate_request(entry)
    request.setdefault("cwd", EXAMPLE_WORKSPACE)
    return request


def _entry(entry: Any, section: str, where: str, report: Report) -> None:
    try:
        example_request(entry, section)
    except PolicyError as exc:
        field = f"{where}.{exc.field}" if exc.field else where
        report(field, exc.message, exc.value)


def check_rule_examples(value: Any, where: str, section: str, report: Report) -> None:
    """Validate a rule's `examples` block: `{"match": [...], "not_match": [...]}`."""
    if not isinstance(value, Mapping):
        report(where, f"must be an object with `match` and/or `not_match` lists (got {json_type(value)})", value)
        return
    for key, entries in value.items():
        field = f"{where}.{key}"
        if key not in EXAMPLE_KINDS:
            report(field, f"unknown key {key!r} in examples (expected match or not_match)", entries)
            continue
        if not isinstance(entries, list):
            report(field, f"must be a list of examples (got {json_type(entries)})", entries)
            continue
        for i, entry in enumerate(entries):
            _entry(entry, section, f"{field}[{i}]", report)


def check_policy_examples(value: Any, report: Report, decisions: tuple[str, ...]) -> None:
    """Validate the top-level `examples` list."""
    if not isinstance(value, list):
        report("examples", f"must be a list of {{\"request\": …, \"expect\": …}} objects (got {json_type(value)})",
               value)
        return
    for i, example in enumerate(value):
        where = f"examples[{i}]"
        if not isinstance(example, Mapping):
            report(where, f"must be an object with `request` and `expect` (got {json_type(example)})", example)
            continue
        for key in example:
            if key not in POLICY_EXAMPLE_KEYS:
                report(f"{where}.{key}", f"unknown key {key!r} (expected one of {', '.join(POLICY_EXAMPLE_KEYS)})",
                       example[key])
        if "request" not in example:
            report(f"{where}.request", "is missing: a shell command or a request object", None)
        else:
            _entry(example["request"], "commands", f"{where}.request", report)
        expect = example.get("expect")
        if expect not in decisions:
            report(f"{where}.expect", f"unknown decision {expect!r} (expected one of {', '.join(decisions)})"
                   if expect is not None else f"is missing: one of {', '.join(decisions)}", expect)
        for key in ("why", "rule"):
            if key in example and (not isinstance(example[key], str) or not example[key].strip()):
                report(f"{where}.{key}", "must be a non-empty string", example[key])
