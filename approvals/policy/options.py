"""Reading a command's words by meaning: program, subcommands, options as a set, operands.

`invocation(words)` turns `git -C x --no-pager push -f origin main` into program `git`,
positionals `("push", "origin", "main")`, options `{"-C", "--no-pager", "-f"}` and option
values `{"-C": ("x",)}`. Short-option clusters are split (`-rf` reads `-r -f`), long options
map to their short form (`--recursive` reads `-r`) and unique abbreviations of a long
option are expanded (`--recur` reads `-r`, as getopt_long does) as each program's model
spells them (`programs/`); options that take a value consume it (`-n ns`, `-Cdir`,
`--git-dir=x`), so the value is never taken for an operand. A program whose model does not
spell its options keeps each option word as written and also as its letters, so `-xy`
matches `-yx` and `-x -y`.

The same reading is applied to rule patterns and to commands, so both sides agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from .programs.invocation import WILD, Invocation, install_reader
from .programs.model import Model
from .programs.registry import ALIAS_OPTIONS, MODELS, program_name, spec_of
from .programs.spec import UNKNOWN, Spec

__all__ = ["UNKNOWN", "WILD", "Invocation", "Spec", "invocation", "program_name", "read_words", "spec_of"]


_NO_INTS: frozenset[int] = frozenset()


def read_words(words: Sequence[str], wild_at: frozenset[int] = frozenset(), *, pattern: bool = False,
               model: Model | None = None) -> Invocation:
    """The Invocation of `words` (words[0] is the command name, already reduced to a name).

    `wild_at` are indices of words whose value is only known at run time; `pattern` reads a
    rule pattern (where `*` is a wildcard word, never an option value's end of options);
    `model`: the program's model to read it with (a rule policy's own), not the built-in one.
    """
    first = words[0]
    program, lead = program_name(first)
    if lead:
        rest = list(lead) + list(words[1:])
        offset = 1 - len(lead)  # index in `words` of rest[k] is k + offset
        k = 0
    else:
        rest = list(words)
        offset = 0
        k = 1
    if model is None:
        model = MODELS.get(program)
    spec = model.options if model is not None else UNKNOWN
    options: set[str] = set()
    values: dict[str, list[str]] = {}
    value_at: dict[str, list[int]] = {}
    if first in ALIAS_OPTIONS or first.lower() in ALIAS_OPTIONS:
        options.add(ALIAS_OPTIONS[first.lower()])
    positionals: list[str] = []
    positional_at: list[int] = []
    option_words: list[str] = []
    wild = False
    wild_option_at: set[int] = set()
    unrecognised: list[int] = []  # option words (and a subcommand) the program's model does not declare
    exec_until = ""  # find's `-exec CMD ;`: CMD's words are not find's
    subcommand: str | None = None
    operands_from = 0
    level = spec
    ended = False
    end_seen = False
    # tar's first word may be a dashless cluster (`tar xzf a.tgz`)
    if model is not None and model.dashless_first and len(rest) > k and rest[k].isalpha():
        rest[k] = "-" + rest[k]
    n = len(rest)
    while k < n:
        word = rest[k]
        index = k + offset
        is_wild = bool(wild_at) and index in wild_at
        if is_wild:
            wild = True
            if not ended:
                wild_option_at.add(index)
        if exec_until:
            if word in (";", "+"):
                exec_until = ""
        if ended or word[:1] != "-" or word == "-" or (pattern and word == "*"):
            positional_at.append(index)
            if level.stop_at_operand:
                ended = True
            if level.subcommands is not None and subcommand is None and not is_wild:
                subcommand = level.sub_aliases.get(word, word)
                positionals.append(subcommand)
                operands_from = len(positionals)
                level = level.subcommands.get(subcommand) or level.default_sub or UNKNOWN
                if not pattern and model is not None and model.subcommands is not None \
                        and subcommand not in model.subcommands and subcommand not in (spec.subcommands or {}):
                    unrecognised.append(index)
            else:
                positionals.append(WILD if is_wild and not pattern else word)
            k += 1
            continue
        if word == "--":
            ended = end_seen = True
            k += 1
            continue
        option_words.append(word)
        if word[1] == "-" or level.single_dash:
            name, eq, attached_value = word.lstrip("-").partition("=")
            if level.single_dash:
                canons: tuple[str, ...] = ("-" + name,)
                if not exec_until and canons[0] in level.runs_until:
                    exec_until = canons[0]
                elif not exec_until and canons[0] not in level.values and canons[0] not in level.flags \
                        and not pattern and not level.any_option:
                    unrecognised.append(index)
            else:
                canons = level.long(name)
                if not pattern and name not in level.longs and not level.any_option \
                        and not level.declares_long(name, canons):
                    unrecognised.append(index)
            value: str | None = attached_value if eq else None
            at = index
            if value is None and k + 1 < n:
                takes = level.values
                for c in canons:
                    if c in takes and c not in level.attached:
                        value = rest[k + 1]
                        k += 1
                        at = index + 1
                        break
            for canon in canons:
                options.add(canon)
                if value is not None:
                    values.setdefault(canon, []).append(value)
                    value_at.setdefault(canon, []).append(at)
            k += 1
            continue
        if not level.known:
            # options not modelled: the word as written, and its letters (`-xy` also reads `-x -y`)
            if not pattern:
                unrecognised.append(index)
            options.add(word.split("=", 1)[0])
            options.update("-" + ch for ch in word[1:].split("=", 1)[0])
            k += 1
            continue
        # a short-option cluster: -rf, -sXPOST, -Cdir, -n5
        shorts = level.shorts
        takes = level.values
        j = 1
        length = len(word)
        if level.numeric and word[1:].isdigit():
            options.add(word)  # `head -5`, `git log -20`: a count
            k += 1
            continue
        while j < length:
            letter = word[j]
            declared = shorts.get(letter)
            if declared is None:
                canon = "-" + letter
                if not pattern and canon not in level.flags and not level.any_option:
                    unrecognised.append(index)
            else:
                canon = declared
            options.add(canon)
            if canon in takes and canon not in level.attached:
                tail = word[j + 1:]
                if tail:
                    values.setdefault(canon, []).append(tail)
                    value_at.setdefault(canon, []).append(index)
                elif k + 1 < n:
                    values.setdefault(canon, []).append(rest[k + 1])
                    value_at.setdefault(canon, []).append(index + 1)
                    k += 1
                break
            if canon in level.attached:
                tail = word[j + 1:]
                if tail:
                    values.setdefault(canon, []).append(tail)
                    value_at.setdefault(canon, []).append(index)
                break
            j += 1
        k += 1
    return Invocation(
        program, tuple(positionals), frozenset(options),
        {key: tuple(v) for key, v in values.items()} if values else {},
        wild, frozenset(wild_option_at) if wild_option_at else _NO_INTS, subcommand, spec.subcommands is not None,
        operands_from, tuple(option_words), end_seen, tuple(positional_at),
        {key: tuple(v) for key, v in value_at.items()} if value_at else {},
        tuple(dict.fromkeys(unrecognised)) if unrecognised else (),
    )


@lru_cache(maxsize=4096)
def read_static(words: tuple[str, ...]) -> Invocation:
    """`read_words` for a command with no run-time words (the common case), memoised."""
    return read_words(words)


def invocation(words: Sequence[str], wild_at: frozenset[int] = frozenset()) -> Invocation:
    if not wild_at:
        return read_static(tuple(words))
    return read_words(words, wild_at)


install_reader(invocation)  # for the models that re-read their own words (programs/invocation.py)
