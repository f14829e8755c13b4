"""One simple command read by meaning (`options.read_words` makes it from a model's options)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

WILD = "\x01"  # a positional whose run-time value is unknown ($x, a glob that may match `-rf`)


class Invocation(NamedTuple):
    """One simple command read by meaning."""

    program: str
    positionals: tuple[str, ...]  # subcommands and operands in order; WILD for an unknown word
    options: frozenset[str]  # canonical options (`-r`, `--dry-run`); clusters of unknown programs also as letters
    values: Mapping[str, tuple[str, ...]]  # option -> the values it was given
    wild: bool = False  # some word's run-time value is unknown (it could supply any option or operand)
    wild_option_at: frozenset[int] = frozenset()  # such words where an option may stand (before `--`, not a value)
    subcommand: str | None = None  # the catalogued subcommand, when the program has them
    has_subcommands: bool = False
    operands_from: int = 0  # index in positionals where operands start (after the subcommand)
    option_words: tuple[str, ...] = ()  # the option words as written (for `*` patterns and display)
    end_of_options: bool = False  # a `--` ended the options
    positional_at: tuple[int, ...] = ()  # index in the command's words of each positional
    value_at: Mapping[str, tuple[int, ...]] = {}  # index of the word holding each value
    unrecognised: tuple[int, ...] = ()  # words the program's model does not declare (an option, a subcommand)

    def value(self, option: str) -> str | None:
        got = self.values.get(option)
        return got[-1] if got else None

    @property
    def operands(self) -> tuple[str, ...]:
        return self.positionals[self.operands_from:]
