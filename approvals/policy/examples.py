"""Examples as tests: a policy's examples, evaluated in a fixed context, and their failures.

Rules and policies carry examples (`example_requests.py` has their shape and the fixed
context, `EXAMPLE_CONTEXT`: workspace `/workspace`, home `/home/agent`, paths resolved by
text alone, the first request of a run, no grants). They are checked when a policy is
saved or checked (`check_examples`, `manage.py policy_check --test`), never while a request
is decided: nothing of them is compiled into the policy.

How an example is judged:

- a rule's **`match`** example passes when the rule matches the request and the request
  gets the rule's decision; for an `ask` or `deny` rule a stricter decision also passes (a
  `deny` rule's example that an earlier deny rule, a protected path or a limit decides
  still shows the rule holds). So an `allow` rule's example fails when anything makes the
  request less than allowed (a deny or ask rule that also matches, a floor such as code on
  the command line), and any rule's example fails when the rule does not match it at all.
- a rule's **`not_match`** example passes when the rule does not match the request,
  whatever decides it.
- a top-level example passes when the request gets exactly `expect` (and, when `rule` is
  given, that rule decides it).

"The rule matches" is read as the policy reads it, on the parts of the request the rule's
section decides: a command rule on each simple command of a script (substitutions and
wrapped commands included), an edit rule on each path the request writes (an edit tool's
file, a redirection, a file operand), a read rule on each path it reads; an `allow` rule
narrowly, a `deny`/`ask` rule widely, as in `patterns.py`. A run-time word that only could
complete a rule (`rm $FLAGS`) is not a match. A request decided before its rule set is
tried (by `tools` or a limit) is matched by no rule of it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .evaluate import evaluate
from .example_requests import EXAMPLE_CONTEXT, example_request
from .path_eval import _candidates
from .paths import Location, Resolver
from .patterns import compile_command, glob_regex
from .rules import RULE_DECISIONS, CompiledPolicy, compile_policy
from .verdicts import ALLOW, Decision, PathUse, RunView, Verdict

__all__ = ["Example", "ExampleFailure", "check_examples", "examples_of"]

_SECTIONS = ("commands", "edits", "reads")
_ACCESS = {"edits": "write", "reads": "read"}
_FIRST_REQUEST = RunView()


@dataclass(frozen=True)
class Example:
    """One example of a policy document, ready to evaluate."""

    where: str  # "commands.deny[0].examples.match[1]" or "examples[3]"
    request: dict[str, Any]  # the request evaluated (with its cwd)
    kind: str  # "match", "not_match" or "expect"
    rule: str | None = None  # match/not_match: the rule's label; expect: the rule that must decide, if given
    pattern: str | None = None  # match/not_match: the rule's pattern or glob
    expect: Decision | None = None  # match: the rule's decision; expect: the decision expected
    why: str | None = None


@dataclass(frozen=True)
class ExampleFailure:
    """A failing example: where it is, the request evaluated, what it got and what was expected."""

    where: str
    request: dict[str, Any]
    got: str  # "allow by commands.allow[0]"
    expected: str  # "deny (or stricter), with commands.deny[0] matching"
    message: str  # one readable sentence
    decision: Decision  # the decision it got
    rule: str  # the rule that decided it

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "request": self.request, "got": self.got, "expected": self.expected,
                "message": self.message, "decision": self.decision, "rule": self.rule}


def _rule_entries(document: Mapping[str, Any]) -> Iterator[tuple[str, str, int, Mapping[str, Any]]]:
    for section in _SECTIONS:
        rules = document.get(section)
        if not isinstance(rules, Mapping):
            continue
        for decision, entries in rules.items():  # as written
            if decision not in RULE_DECISIONS:
                continue
            for index, entry in enumerate(entries):
                if isinstance(entry, Mapping) and isinstance(entry.get("examples"), Mapping):
                    yield section, decision, index, entry


def examples_of(document: Mapping[str, Any]) -> list[Example]:
    """Every example of a (valid) policy document: the rules' examples (commands, edits,
    reads; each rule's `match` then `not_match`), then the top-level ones, as written.
    PolicyError when the document is invalid."""
    compile_policy(document)  # refuses an invalid document, examples included
    out: list[Example] = []
    for section, decision, index, entry in _rule_entries(document):
        label = f"{section}.{decision}[{index}]"
        for kind in ("match", "not_match"):
            for i, item in enumerate(entry["examples"].get(kind, ())):
                out.append(Example(f"{label}.examples.{kind}[{i}]", example_request(item, section), kind,
                                   label, entry["match"], Decision(decision)))
    for i, item in enumerate(document.get("examples", ())):
        out.append(Example(f"examples[{i}]", example_request(item["request"], "commands"), "expect",
                           item.get("rule"), None, Decision(item["expect"]), item.get("why")))
    return out


def _use_candidates(use: PathUse, resolver: Resolver) -> tuple[tuple[str, ...], tuple[str, ...]]:
    # In the example context a path is resolved by text, so its resolved and normalised
    # forms are one: the PathUse holds all the Location the rule set saw.
    loc = Location(use.path, use.resolved, use.resolved, use.relative, use.relative is not None, use.protected,
                   None, use.resolved is None)
    return _candidates(loc, resolver)


def rule_matches(example: Example, verdict: Verdict) -> bool:
    """Whether the example's rule matches the request the verdict is about."""
    label, pattern, decision = example.rule, example.pattern, example.expect
    assert label is not None and pattern is not None and decision is not None
    if verdict.rule == label or any(s.rule == label for s in verdict.segments) or any(
            p.rule == label for p in verdict.all_paths):
        return True
    allow = decision == ALLOW
    section = label.split(".", 1)[0]
    if section == "commands":
        compiled = compile_command(pattern)
        return any(s.invocation is not None and compiled.matches(s.invocation, allow=allow)
                   for s in verdict.segments)
    regex = glob_regex(pattern)
    resolver = Resolver(EXAMPLE_CONTEXT)
    for use in verdict.all_paths:
        if use.access != _ACCESS[section]:
            continue
        allow_candidates, restrictive = _use_candidates(use, resolver)
        if any(regex.match(c) for c in (allow_candidates if allow else restrictive)):
            return True
    return False


def _failure(example: Example, verdict: Verdict) -> ExampleFailure | None:
    decision, rule = verdict.decision, verdict.rule
    got = f"{decision} by {rule}"
    named = f"{example.rule} (`{example.pattern}`)"
    if example.kind == "expect":
        want = example.expect
        if decision == want and (example.rule is None or rule == example.rule):
            return None
        expected = f"{want} by {example.rule}" if example.rule else str(want)
        note = f" ({example.why})" if example.why else ""
        message = f"The example should get {expected}{note}, but it gets {got}."
    elif example.kind == "not_match":
        if not rule_matches(example, verdict):
            return None
        expected = f"{example.rule} does not match"
        message = f"The example should not be matched by {named}, but that rule matches it (it gets {got})."
    else:
        want = example.expect
        assert want is not None  # a match example has its rule's decision
        matches = rule_matches(example, verdict)
        strict_enough = decision == want or (want != ALLOW and decision.worse(want))
        if matches and strict_enough:
            return None
        expected = f"{want} by {example.rule}" if want == ALLOW else (
            f"{want} (or stricter), with {example.rule} matching")
        if not matches:
            message = f"The example should be matched by {named}, but that rule does not match it (it gets {got})."
        else:
            message = f"{named} matches the example, but the request gets {got}, not {want}."
    return ExampleFailure(example.where, example.request, got, expected, message, decision, rule)


def run_example(compiled: CompiledPolicy, example: Example) -> tuple[Verdict, ExampleFailure | None]:
    """Evaluate one example in the fixed example context: (its verdict, its failure or None)."""
    verdict = evaluate(compiled, example.request, run_view=_FIRST_REQUEST, paths=EXAMPLE_CONTEXT)
    return verdict, _failure(example, verdict)


def check_examples(document: Mapping[str, Any]) -> list[ExampleFailure]:
    """The failing examples of a policy document (empty: all pass), in `examples_of` order.

    Raises the first of `policy_problems(document)` when the document is invalid (a
    malformed examples block is one of them).
    """
    compiled = compile_policy(document)
    failures = []
    for example in examples_of(document):
        failure = run_example(compiled, example)[1]
        if failure is not None:
            failures.append(failure)
    return failures
