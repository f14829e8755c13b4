"""Compiled matchers: command patterns (by meaning) and path globs (gitignore style).

A command pattern is read with the same catalogue as the commands it is matched against
(`options.read_words`): its program, its options as a set (with the values it names) and
its other words in order. It matches a command when

- the program is the same (`*` as the pattern's first word: any program);
- every option of the pattern is among the command's options, whatever their spelling and
  order (`rm -rf` matches `rm -r -f x`), and every option value it names is given
  (`curl -X POST` matches `curl -sXPOST`);
- its other words match the command's operands in order: an `allow` pattern from the
  first operand on, word by word (`git push origin` matches `git push -f origin main`);
  a `deny` or `ask` pattern also with other operands between them (`rm -rf /` holds for
  `rm -rf /tmp/x /`), the subcommand of a program that has them always first. `*` as a
  whole word matches any number of words, `*` inside a word any characters of that word.

Matching restrictive rules more widely and allowing rules more narrowly errs on the side
of asking. A word whose value is only known at run time (`$opts`, a glob that may match a
file named `-rf`) could be any option or operand: a deny or ask rule it could complete is
reported as an uncertain match, which makes the command at least `ask`.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from .classes import CLASS_SEVERITY, classify_invocation
from .options import WILD, Invocation, invocation, read_words, spec_of

# (program, options, values, positionals): equal for two commands that say exactly the same
ExactKey = tuple[str, frozenset[str], tuple[tuple[str, tuple[str, ...]], ...], tuple[str, ...]]

SEP = "\x00"  # words never contain NUL, so it separates them unambiguously


def pattern_words(pattern: str) -> list[str]:
    """The words of a command pattern; raises ValueError when it is empty or unbalanced."""
    words = shlex.split(pattern)
    if not words:
        raise ValueError("a command pattern needs at least one word")
    return words


def _word_regex(word: str, wild: bool) -> str:
    if word == "*":
        return f"(?:{SEP}[^{SEP}]*)*"
    if "*" in word:
        body = f"[^{SEP}]*".join(re.escape(p) for p in word.split("*"))
    else:
        body = re.escape(word)
    return f"{SEP}(?:{body}|{WILD})" if wild else f"{SEP}{body}"


def _value_regex(value: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(p) for p in value.split("*")), re.DOTALL)


@dataclass(frozen=True)
class CommandPattern:
    source: str
    program: str  # "*": any program
    options: frozenset[str]
    requirements: tuple[frozenset[str], ...]  # each: the spellings, one of which the command must have
    values: tuple[tuple[str, re.Pattern[str]], ...]
    positionals: tuple[str, ...]
    first_literal: str | None  # the subcommand the pattern names, for the rule index
    exact_key: ExactKey | None  # equal to `exact_key_of(command)` when the pattern names exactly that command
    strict: re.Pattern[str]  # allow: operands word by word from the first
    loose: re.Pattern[str]  # deny / ask: operands in order, others between
    loose_wild: re.Pattern[str]  # as loose, a run-time word standing for any word
    # An allow pattern's own side-effect class (its severity): the command it allows may add
    # options, but none that make it more severe (`git push origin x` does not allow
    # `git push --force origin x`). None: the pattern names no class (`python`, `git *`).
    ceiling: int | None = None

    def matches(self, inv: Invocation, *, allow: bool, cls: str | None | bool = False) -> bool:
        """Whether the pattern certainly matches (allow: narrowly; deny/ask: widely).
        `cls`: the command's side-effect class when the caller has it."""
        if self.program != "*" and self.program != inv.program:
            return False
        if allow and self.ceiling is not None:
            own = classify_invocation(inv) if cls is False else cls
            if own is not None and CLASS_SEVERITY[own] > self.ceiling:  # type: ignore[index]
                return False
        if self.requirements:
            have = inv.options
            for alternatives in self.requirements:
                if alternatives.isdisjoint(have):
                    return False
        if self.values and not self._values_match(inv):
            return False
        subject = SEP + SEP.join(inv.positionals) if inv.positionals else ""
        regex = self.strict if allow else self.loose
        return regex.match(subject) is not None

    def may_match(self, inv: Invocation) -> bool:
        """Whether a run-time word of the command could make this (deny/ask) pattern match:
        supply the options it lacks (only a word where an option may stand, before `--`),
        or stand for an operand it names."""
        if not inv.wild or (self.program != "*" and self.program != inv.program):
            return False
        lacking = any(alternatives.isdisjoint(inv.options) for alternatives in self.requirements) or (
            self.values and not self._values_match(inv))
        if lacking and not inv.wild_option_at:
            return False
        subject = SEP + SEP.join(inv.positionals) if inv.positionals else ""
        return self.loose_wild.match(subject) is not None

    def _values_match(self, inv: Invocation) -> bool:
        for option, regex in self.values:
            given = inv.values.get(option, ())
            if not any(regex.fullmatch(v) for v in given):
                return False
        return True


def exact_key_of(inv: Invocation) -> ExactKey:
    return (inv.program, inv.options, tuple(sorted((k, tuple(v)) for k, v in inv.values.items())), inv.positionals)


@lru_cache(maxsize=2048)
def compile_command(pattern: str, up_to: str | None = None) -> CommandPattern:
    """The compiled form of one command pattern; ValueError when it is not usable.
    `up_to` (an allow rule's side-effect class): it allows no command more severe than that,
    whatever its words (a bare program otherwise allows all it does)."""
    words = pattern_words(pattern)
    inv = read_words(tuple(words), pattern=True)
    program = "*" if words[0] == "*" else inv.program
    positionals = inv.positionals
    if words[0] == "*" and len(words) == 1:
        positionals = ("*",)
    anchored = inv.has_subcommands
    strict = "".join(_word_regex(w, False) for w in positionals)
    loose_parts = []
    wild_parts = []
    gap = f"(?:{SEP}[^{SEP}]*)*?"
    for i, word in enumerate(positionals):
        lead = "" if (i == 0 and anchored) else gap
        loose_parts.append(lead + _word_regex(word, False))
        wild_parts.append(lead + _word_regex(word, True))
    first = positionals[0] if anchored and positionals and "*" not in positionals[0] else None
    has_star = any("*" in w for w in words)
    requirements = tuple(frozenset((o,)) for o in sorted(inv.options))
    spec = spec_of(inv.program)
    if not spec.known and words[0] != "*":
        # outside the catalogue: `-xy` asks for the letters, in any grouping or order
        requirements = tuple(frozenset((o,)) for o in sorted({w.split("=", 1)[0] for w in inv.option_words
                                                             if w.startswith("--")}
                                                            | {"-" + ch for w in inv.option_words
                                                               if not w.startswith("--") for ch in w[1:].split("=")[0]}))
    elif inv.subcommand == "*" and spec.subcommands:
        # `git * --force`: the option may be spelled per subcommand; any of its readings counts
        pieces = [w if w.startswith("--") else "-" + ch for w in inv.option_words
                  for ch in ([""] if w.startswith("--") else w[1:])]
        requirements = tuple(_spellings(inv.program, spec.subcommands, piece) for piece in pieces)
    values = tuple(sorted((opt, _value_regex(v)) for opt, vals in inv.values.items() for v in vals))
    # a bare program (`curl`, `sudo`) allows all it does; a pattern that names more only what it shows
    names_more = len(words) > 1 and words[0] != "*"
    own_class = classify_invocation(inv) if names_more else None
    return CommandPattern(
        source=pattern,
        program=program,
        options=inv.options,
        requirements=requirements,
        values=values,
        positionals=positionals,
        first_literal=first,
        exact_key=None if has_star else exact_key_of(inv),
        strict=re.compile(strict + f"(?={SEP}|\\Z)", re.DOTALL),
        loose=re.compile("".join(loose_parts) + f"(?={SEP}|\\Z)", re.DOTALL),
        loose_wild=re.compile("".join(wild_parts) + f"(?={SEP}|\\Z)", re.DOTALL),
        ceiling=_ceiling(None if own_class is None else CLASS_SEVERITY[own_class], up_to),
    )


def _ceiling(own: int | None, up_to: str | None) -> int | None:
    if up_to is None:
        return own
    bound = CLASS_SEVERITY[up_to]
    return bound if own is None else min(own, bound)


def _spellings(program: str, subcommands: Iterable[str], word: str) -> frozenset[str]:
    word = word.split("=", 1)[0]
    found = {word} | set(read_words((program, "*", word), pattern=True).options)
    for sub in subcommands:
        found |= read_words((program, sub, word), pattern=True).options
    return frozenset(found)


# (the first rule, in most-restrictive order, that certainly matches; an earlier deny/ask
# rule a run-time word could complete), as positions in the matcher
CommandHit = tuple[int | None, int | None]
_NO_HIT: CommandHit = (None, None)


class CommandMatcher:
    """Every pattern of a rule set, indexed by program (and subcommand): `first(inv, kinds)`."""

    __slots__ = ("_patterns", "_allow", "_by_sub", "_by_program", "_any", "size")

    def __init__(self, patterns: list[str], allow: list[bool] | None = None, up_to: list[str | None] | None = None) -> None:
        self.size = len(patterns)
        bounds = up_to or [None] * len(patterns)
        self._patterns = [compile_command(p, b) for p, b in zip(patterns, bounds, strict=True)]
        self._allow = allow or [False] * len(patterns)
        self._by_sub: dict[tuple[str, str], list[int]] = {}
        self._by_program: dict[str, list[int]] = {}
        self._any: list[int] = []
        for pos, pat in enumerate(self._patterns):
            if pat.program == "*":
                self._any.append(pos)
                continue
            self._by_program.setdefault(pat.program, []).append(pos)
            key = (pat.program, pat.first_literal) if pat.first_literal is not None else (pat.program, "")
            self._by_sub.setdefault(key, []).append(pos)

    def _candidates(self, inv: Invocation) -> list[int]:
        if inv.has_subcommands and inv.positionals and inv.positionals[0] != WILD:
            found = self._by_sub.get((inv.program, inv.positionals[0]), [])
            rest = self._by_sub.get((inv.program, ""))
            if rest:
                found = sorted(found + rest)
        else:
            found = self._by_program.get(inv.program, [])
        if self._any:
            return sorted(found + self._any)
        return found

    def first(self, inv: Invocation, cls: str | None | bool = False) -> CommandHit:
        uncertain = None
        for pos in self._candidates(inv):
            pat = self._patterns[pos]
            allow = self._allow[pos]
            if pat.matches(inv, allow=allow, cls=cls):
                return pos, uncertain
            if uncertain is None and not allow and inv.wild and pat.may_match(inv):
                uncertain = pos
        return (None, uncertain) if uncertain is not None else _NO_HIT

    def exact(self, inv: Invocation, positions: Iterable[int]) -> int | None:
        """The first of `positions` whose pattern names exactly this command."""
        key = exact_key_of(inv)
        for pos in positions:
            if self._patterns[pos].exact_key == key:
                return pos
        return None


def command_matches(pattern: str, words: Iterable[str], *, allow: bool = True) -> bool:
    return compile_command(pattern).matches(invocation(tuple(words)), allow=allow)


def glob_regex(pattern: str) -> re.Pattern[str]:
    """The compiled regex of one gitignore-style glob; ValueError when it is not usable."""
    if not pattern or not pattern.strip():
        raise ValueError("a path glob must not be empty")
    if pattern.startswith("!"):
        raise ValueError("negated globs ('!') are not supported; use the allow/ask/deny lists")
    if pattern.startswith("#"):
        raise ValueError("a glob starting with '#' is a comment in gitignore syntax")
    return _glob_regex(pattern)


@lru_cache(maxsize=1024)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    try:
        compiled = GitIgnoreSpecPattern(pattern)
    except Exception as exc:  # pathspec raises its own error types
        raise ValueError(f"not a valid gitignore-style glob: {exc}") from None
    if compiled.regex is None:
        raise ValueError("the glob matches nothing")
    return compiled.regex


class PathMatcher:
    """Globs of a rule set. An allow glob is tried on the workspace-relative path only; a
    deny or ask glob also on the path as written inside the workspace and, for a path
    outside it, on its absolute form (so `/etc/**` in a deny list holds)."""

    __slots__ = ("_regexes", "_allow", "size")

    def __init__(self, patterns: list[str], allow: list[bool] | None = None) -> None:
        self.size = len(patterns)
        self._regexes = [glob_regex(p) for p in patterns]
        self._allow = allow or [False] * len(patterns)

    def first_path(self, allow_candidates: tuple[str, ...], restrictive_candidates: tuple[str, ...]) -> int | None:
        for i, regex in enumerate(self._regexes):
            for cand in allow_candidates if self._allow[i] else restrictive_candidates:
                if regex.match(cand):
                    return i
        return None
