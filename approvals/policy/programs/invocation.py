"""One simple command read by meaning (`options.read_words` makes it from a model's options)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


# The reading of words with every program's model (`options.invocation`), for the few models
# that re-read words of their own (`kill $!`, `docker exec …`, `ssh HOST CMD`). The reader
# stands above the models (it asks the registry, which imports them), so it hands itself down
# here when it is imported (`options.py`: the package `approvals.policy` imports it first).
Reader = Callable[[Sequence[str], frozenset[int]], Invocation]
_READER: list[Reader] = []


def install_reader(reader: Reader) -> None:
    _READER[:] = [reader]


def read_invocation(words: Sequence[str], wild_at: frozenset[int] = frozenset()) -> Invocation:
    """`options.invocation(words, wild_at)`."""
    if not _READER:
        raise RuntimeError("no word reader installed: import approvals.policy.options first")
    return _READER[0](words, wild_at)
