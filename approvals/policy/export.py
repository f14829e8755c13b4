"""Exporting a rule policy to an agent's own permission format, honest about what is lost.

`export_policy(document, fmt)` returns the text and, one readable line each, every rule or
part of the policy the format cannot express (`unexpressed`). The agent then enforces only
what the text says: Gatehouse's gate, when it sits in front of the agent, still enforces all.

``claude``: Claude Code settings JSON, `{"permissions": {"allow": [...], "ask": [...],
"deny": [...]}}`, in the rule syntax Claude Code 2.1.x documents (code.claude.com/docs/en/
permissions): `Tool` or `Tool(specifier)`; `Bash(git push *)` matches the command with any
words after it (and the bare `git push`: a single trailing ` *` is optional), `*` matching
any characters, spaces included, and the space before it a word boundary. The legacy
`Bash(prefix:*)` form is never written (a pattern word such as `test:*` is written `test:**`
so that it keeps Gatehouse's meaning). `Edit(glob)` covers every file-editing tool,
`Read(glob)` the reading ones, gitignore style: `/path` from the project root (the
workspace), `//path` absolute, so an allow glob becomes `/glob` (`/**/glob` when it has no
`/`: it matches at any depth) and a deny/ask glob, which Gatehouse also holds for the
absolute path of a file outside the workspace, becomes both `/glob` and `//glob`. Claude Code
decides deny, then ask, then allow, as Gatehouse's most restrictive rule wins.

``codex``: Codex execpolicy rules (Starlark, the `prefix_rule` of codex-rs/execpolicy), one
per line: `prefix_rule(pattern=["git", "push"], decision="forbidden", justification="…",
match=[[…]], not_match=[[…]])`, decisions `allow`, `prompt` (Gatehouse's ask) and
`forbidden` (deny). A pattern is a prefix of literal tokens; a list in a position lists
alternatives (used for the orders of a short option cluster in a deny/ask rule: `-rf`, `-fr`).
A trailing `*` word is the prefix itself; any other `*` cannot be written, so that rule is
not exported. Codex checks `match`/`not_match` when it loads the file and refuses a file
whose example fails, so a rule's examples are exported only where Codex's prefix reading
agrees (the others are listed as unexpressed). Edit, read and tool rules, classes, limits
and defaults have no execpolicy form.

`json` (the document itself) is not this module's business: it is the stored document's
canonical JSON.
"""

from __future__ import annotations

import itertools
import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .example_requests import example_request
from .options import read_words
from .patterns import compile_command
from .rules import RULE_DECISIONS, CompiledPolicy, compile_policy
from .verdicts import ABORT, ALLOW, ASK, DENY, Decision

__all__ = ["EXPORT_FORMATS", "PolicyExport", "export_policy"]

EXPORT_FORMATS = ("claude", "codex")

# Gatehouse's canonical tool names -> Claude Code's (drivers/claude_code/mapping.py, reversed);
# any other name is already the agent's own (an MCP tool keeps its name).
_CLAUDE_TOOLS = {"bash": "Bash", "write": "Write", "edit": "Edit", "read": "Read", "webSearch": "WebSearch",
                 "webFetch": "WebFetch"}
_CODEX_DECISIONS = {ALLOW: "allow", ASK: "prompt", DENY: "forbidden"}
_MAX_SPELLINGS = 6


@dataclass(frozen=True)
class PolicyExport:
    format: str
    text: str
    unexpressed: list[str] = field(default_factory=list)  # one readable line per rule or part left out


@dataclass(frozen=True)
class _Rule:
    label: str  # "commands.deny[0]"
    section: str
    decision: Decision
    pattern: str
    reason: str | None
    examples: Mapping[str, Any]
    up_to: str | None = None


def _rules(document: Mapping[str, Any], section: str) -> list[_Rule]:
    rules = document.get(section)
    out: list[_Rule] = []
    if not isinstance(rules, Mapping):
        return out
    for decision, entries in rules.items():
        if decision not in RULE_DECISIONS:
            continue
        for i, entry in enumerate(entries):
            if isinstance(entry, Mapping):
                out.append(_Rule(f"{section}.{decision}[{i}]", section, Decision(decision), entry["match"], entry.get("reason"),
                                 entry.get("examples") or {}, entry.get("up_to")))
            else:
                out.append(_Rule(f"{section}.{decision}[{i}]", section, Decision(decision), entry, None, {}))
    return out


def _spellings(words: list[str], restrictive: bool) -> list[list[str]]:
    """Each word's spellings: a short cluster of single-letter options (`-rf`) of a deny or
    ask rule in each of its orders, so the exported rule holds for `-fr` too."""
    out = []
    for word in words:
        letters = word[1:]
        if restrictive and word.startswith("-") and not word.startswith("--") and 2 <= len(letters) <= 3 \
                and letters.isalpha() and len(set(letters)) == len(letters):
            out.append(["-" + "".join(p) for p in itertools.permutations(letters)])
        else:
            out.append([word])
    return out


def _meaning_note(rule: _Rule, words: list[str], agent: str) -> str | None:
    """What Gatehouse's reading by meaning gives this rule that a literal prefix does not."""
    inv = read_words(tuple(words), pattern=True)
    restrictive = rule.decision != ALLOW
    if restrictive and (inv.options or len(words) > 1):
        what = "denied" if rule.decision == DENY else "asked about"
        return (f"{rule.label} `{rule.pattern}`: Gatehouse matches it by meaning (options in any order or spelling, "
                f"global options and other words between); {agent} matches the words as written, so another "
                f"spelling is not {what}")
    if not restrictive and compile_command(rule.pattern, rule.up_to).ceiling is not None:
        return (f"{rule.label} `{rule.pattern}`: Gatehouse does not let it allow a more severe command (such as one "
                f"adding --force); {agent} allows whatever words follow")
    return None


def _common_unexpressed(document: Mapping[str, Any], compiled: CompiledPolicy, agent: str) -> list[str]:
    out = []
    for name, decision in (compiled.classes or {}).items():
        out.append(f"classes.{name} ({decision}): {agent} has no side-effect classes")
    for key in ("max_tool_calls", "max_denials"):
        value = getattr(compiled, key)
        if value is not None:
            out.append(f"limits.{key} ({value}): {agent} has no per-run limits")
    for name in compiled.programs:
        out.append(f"programs.{name}: {agent} has no program models (it reads the rules' words as written)")
    if document.get("unverified"):
        out.append(f"unverified ({document['unverified']}): {agent} has no program models to verify against")
    if document.get("examples"):
        out.append(f"examples: {agent} has no policy examples (run `manage.py policy_check --test`)")
    if compiled.network is not None:
        out.append(f"network: {agent}'s permission rules have no network section (Gatehouse's egress proxy holds it)")
    if compiled.external is not None:
        out.append(f"external ({compiled.external.target}): {agent}'s permission rules consult no decision point "
                   "(Gatehouse's gate does)")
    return out


# --- Claude Code -------------------------------------------------------------------------


def _claude_word(word: str) -> str:
    if word and not any(ch.isspace() or ch in "'\"\\" for ch in word):
        return word
    return shlex.quote(word)


def _claude_bash(words: list[str]) -> list[str]:
    text = " ".join(_claude_word(w) for w in words)
    if words[-1].endswith("*"):
        forms = [text]  # its last word already takes any continuation
    elif "*" in text:
        forms = [text, text + " *"]  # a wildcard before the end: with and without words after
    else:
        forms = [text + " *"]
    out = []
    for form in forms:
        if form.endswith(":*"):
            form += "*"  # `test:*` must not read as the legacy prefix form `test:*`
        out.append(f"Bash({form})")
    return out


def _claude_globs(glob: str, restrictive: bool) -> list[str]:
    body = glob.lstrip("/")
    anchored = glob.startswith("/") or "/" in glob.rstrip("/")
    directory = glob.endswith("/")
    body = body.rstrip("/") + ("/**" if directory else "")
    relative = body if anchored or body.startswith("**") else f"**/{body}"
    forms = [f"/{relative}"]
    if restrictive:
        forms.append(f"//{relative}")
    return forms


def _claude(document: Mapping[str, Any], compiled: CompiledPolicy) -> PolicyExport:
    lists: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
    unexpressed: list[str] = []
    agent = "Claude Code"

    def add(decision: str, entries: Sequence[str]) -> None:
        for entry in entries:
            if entry not in lists[decision]:
                lists[decision].append(entry)

    reasons = []
    examples = []
    for rule in _rules(document, "commands"):
        words = shlex.split(rule.pattern)
        for spelling in itertools.islice(itertools.product(*_spellings(words, rule.decision != ALLOW)),
                                         _MAX_SPELLINGS):
            add(rule.decision, _claude_bash(list(spelling)))
        note = _meaning_note(rule, words, agent)
        if note:
            unexpressed.append(note)
    for section, tool in (("edits", "Edit"), ("reads", "Read")):
        for rule in _rules(document, section):
            add(rule.decision, [f"{tool}({g})" for g in _claude_globs(rule.pattern, rule.decision != ALLOW)])
    for section in ("commands", "edits", "reads"):
        for rule in _rules(document, section):
            if rule.reason:
                reasons.append(rule.label)
            if rule.examples:
                examples.append(rule.label)
    for section, tool in (("commands", "Bash"), ("edits", "Edit"), ("reads", "Read")):
        ruleset = getattr(compiled, section)
        default = ruleset.default if ruleset is not None else None
        if default == ALLOW:
            add(ALLOW, [tool])  # deny and ask rules still come first
        elif default is not None and not (default == ASK and section != "reads"):
            # (an ask default for commands and edits is what Claude Code does unasked)
            own = "reads it" if section == "reads" else "asks"
            unexpressed.append(f"{section}.default ({default}): for what no rule names {agent} {own}; a bare "
                               f"`{tool}` {default} rule would override the rules that allow")
    for name, (decision, _reason) in compiled.tools.items():
        native = _CLAUDE_TOOLS.get(name, name)
        if decision == ABORT:
            add(DENY, [native])
            unexpressed.append(f"tools.{name} (abort): {agent} cannot end the run; exported as deny")
        else:
            add(decision, [native])
    for name, cls in compiled.tool_classes.items():
        unexpressed.append(f"tools.{name} (class {cls}): {agent} has no side-effect classes; the tool is asked")
    if compiled.default != ASK:
        unexpressed.append(f"default ({compiled.default}): {agent} asks about a tool no rule names")
    if compiled.commands is not None and any(compiled.commands.rules.values()):
        unexpressed.append("commands: Gatehouse reads each command of a script by meaning, through wrappers "
                           "(sudo, env, xargs, bash -c) and substitutions, and asks about code given on the command "
                           f"line, run-time words and uploads whatever the rules say; {agent} matches each "
                           "subcommand's words as written")
    if compiled.edits is not None or compiled.reads is not None:
        unexpressed.append(f"edits, reads: Gatehouse also applies them to the files shell commands write and read "
                           f"(redirections, operands); {agent}'s Edit and Read rules apply to its file tools")
    if reasons:
        unexpressed.append(f"reasons of {', '.join(reasons)}: {agent} permission rules carry no reason")
    if examples:
        unexpressed.append(f"examples of {', '.join(examples)}: {agent} permission rules carry no examples")
    unexpressed += _common_unexpressed(document, compiled, agent)
    text = json.dumps({"permissions": lists}, indent=2, ensure_ascii=False) + "\n"
    return PolicyExport("claude", text, unexpressed)


# --- Codex ---------------------------------------------------------------------------------


def _starlark(value: Any) -> str:
    # JSON's strings and lists are Starlark's (and Python's) too
    return json.dumps(value, ensure_ascii=False)


def _codex_matches(pattern: list[list[str]], tokens: list[str]) -> bool:
    """Codex's PrefixPattern.matches_prefix: each position's token among its alternatives."""
    return len(tokens) >= len(pattern) and all(t in alts for t, alts in zip(tokens, pattern, strict=False))


def _codex_example_tokens(entry: Any) -> list[str] | None:
    request = example_request(entry, "commands")
    if request["tool"] != "bash":
        return None
    try:
        tokens = shlex.split(request["input"]["command"])
    except ValueError:
        return None
    return tokens or None


def _codex_rule(rule: _Rule, unexpressed: list[str]) -> str | None:
    words = shlex.split(rule.pattern)
    while len(words) > 1 and words[-1] == "*":
        words.pop()  # a trailing `*` is the prefix itself
    if any("*" in w for w in words):
        unexpressed.append(f"{rule.label} `{rule.pattern}`: Codex prefix rules have no wildcard; not exported")
        return None
    note = _meaning_note(rule, words, "Codex")
    if note:
        unexpressed.append(note)
    pattern = _spellings(words, rule.decision != ALLOW)
    parts = [f"pattern={_starlark([p[0] if len(p) == 1 else p for p in pattern])}",
             f"decision={_starlark(_CODEX_DECISIONS[rule.decision])}"]
    if rule.reason:
        parts.append(f"justification={_starlark(rule.reason)}")
    for kind in ("match", "not_match"):
        kept = []
        for i, entry in enumerate(rule.examples.get(kind, ())):
            tokens = _codex_example_tokens(entry)
            where = f"{rule.label}.examples.{kind}[{i}]"
            if tokens is None:
                unexpressed.append(f"{where}: not a shell command Codex can test; left out")
            elif _codex_matches(pattern, tokens) != (kind == "match"):
                verb = "does not match" if kind == "match" else "matches"
                unexpressed.append(f"{where} `{shlex.join(tokens)}`: Codex's prefix rule {verb} it (Gatehouse reads "
                                   "it by meaning); left out, since Codex refuses a file whose example fails")
            else:
                kept.append(tokens)
        if kept:
            parts.append(f"{kind}={_starlark(kept)}")
    return f"prefix_rule({', '.join(parts)})"


def _codex(document: Mapping[str, Any], compiled: CompiledPolicy) -> PolicyExport:
    unexpressed: list[str] = []
    lines = [f"# Gatehouse policy {compiled.version[:12]} as Codex execpolicy prefix rules.",
             "# What these rules cannot express is listed by the export (policy_export --format codex)."]
    for rule in _rules(document, "commands"):
        line = _codex_rule(rule, unexpressed)
        if line is not None:
            lines.append(line)
    for section in ("edits", "reads"):
        for rule in _rules(document, section):
            unexpressed.append(f"{rule.label} `{rule.pattern}`: Codex execpolicy has no path rules")
    for section in ("commands", "edits", "reads"):
        ruleset = getattr(compiled, section)
        if ruleset is not None and ruleset.default is not None:
            unexpressed.append(f"{section}.default ({ruleset.default}): Codex execpolicy has no default (its "
                               "approval policy decides what no rule names)")
    for name, (decision, _reason) in compiled.tools.items():
        unexpressed.append(f"tools.{name} ({decision}): Codex execpolicy decides shell commands only")
    for name, cls in compiled.tool_classes.items():
        unexpressed.append(f"tools.{name} (class {cls}): Codex execpolicy decides shell commands only")
    if compiled.default != ASK:
        unexpressed.append(f"default ({compiled.default}): Codex execpolicy has no default")
    if compiled.commands is not None and any(compiled.commands.rules.values()):
        unexpressed.append("commands: Gatehouse reads each command of a script by meaning, through wrappers "
                           "(sudo, env, xargs, bash -c) and substitutions, and asks about code given on the command "
                           "line, run-time words and uploads whatever the rules say; Codex matches token prefixes")
    unexpressed += _common_unexpressed(document, compiled, "Codex")
    return PolicyExport("codex", "\n".join(lines) + "\n", unexpressed)


def export_policy(document: Mapping[str, Any], fmt: str) -> PolicyExport:
    """The policy in `fmt` ("claude" or "codex"), with every rule or part that format cannot
    express as one line of `unexpressed`. PolicyError when the document is invalid;
    ValueError for another format."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (expected one of {', '.join(EXPORT_FORMATS)})")
    compiled = compile_policy(document)
    return _claude(document, compiled) if fmt == "claude" else _codex(document, compiled)
