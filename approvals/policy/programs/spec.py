"""How a program spells its options: the option language of the program models.

A `Spec` holds a program's (or a subcommand's) short options, the long names that stand
for them, which take a value, its subcommands and their aliases. Written compactly with
`spec("r/recursive R=r f/force C: /git-dir:")`; read by `options.read_words`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Spec:
    """How one program (or one of its subcommands) spells its options."""

    shorts: Mapping[str, str] = field(default_factory=dict)  # letter -> canonical option
    longs: Mapping[str, str] = field(default_factory=dict)  # long name -> canonical option
    values: frozenset[str] = frozenset()  # canonical options that take a value
    attached: frozenset[str] = frozenset()  # canonical options whose value, if any, is attached (`-i.bak`)
    subcommands: Mapping[str, Spec] | None = None  # None: the program has no subcommands
    default_sub: Spec | None = None  # the spec of a subcommand the model does not list
    sub_aliases: Mapping[str, str] = field(default_factory=dict)  # `i` -> `install`
    single_dash: bool = False  # `-name` is one option (find, go): clusters are not split
    stop_at_operand: bool = False  # options end at the first operand (`python x.py -c` passes -c to x.py)
    known: bool = True
    flags: frozenset[str] = frozenset()  # other options it declares by their canonical name (find's `-print`)
    numeric: bool = False  # `-NUMBER` is an option (`head -5`, `git log -20`)
    negatable: bool = False  # `--no-NAME` of a declared `--NAME` is an option too (git)
    runs_until: frozenset[str] = frozenset()  # options whose following words, to `;` or `+`, are a command
    any_option: bool = False  # every option word is harmless to it (echo prints it, test compares it)

    def long(self, name: str) -> tuple[str, ...]:
        """Canonical options a long name stands for: itself, else every option it abbreviates."""
        hit = self.longs.get(name)
        if hit is not None:
            return (hit,)
        if len(name) >= 2 and self.longs:
            found = tuple(sorted({canon for full, canon in self.longs.items() if full.startswith(name)}))
            if found:
                return found
        return ("--" + name,)

    def declares_long(self, name: str, canons: tuple[str, ...]) -> bool:
        """Whether `--name` is an option of this spec: a long name or an abbreviation of
        some (`canons`, as `long` read them), a flag, or the negation of one."""
        if canons != ("--" + name,) or canons[0] in self.flags:
            return True
        if self.negatable and name.startswith("no-"):
            return self.declares_long(name[3:], self.long(name[3:])) if len(name) > 3 else False
        return False

    def with_subcommands(self, subcommands: Mapping[str, Spec], default_sub: Spec | None = None,
                         sub_aliases: Mapping[str, str] | None = None) -> Spec:
        """This spec as a program's top level with these subcommands."""
        return Spec(shorts=self.shorts, longs=self.longs, values=self.values, attached=self.attached,
                    subcommands=subcommands, default_sub=default_sub, sub_aliases=sub_aliases or {},
                    single_dash=self.single_dash, stop_at_operand=self.stop_at_operand, known=self.known,
                    flags=self.flags, numeric=self.numeric, negatable=self.negatable, runs_until=self.runs_until,
                    any_option=self.any_option)

    def but(self, **changes: Any) -> Spec:
        """This spec with some fields changed (`numeric=True`)."""
        return dataclasses.replace(self, **changes)


def spec(table: str, **kwargs: Any) -> Spec:
    """A Spec from a compact table: `r/recursive R=r f/force C: /git-dir: i?`.

    `x` a short option, `x/long` with its long name, `/long` long only, a trailing `:`
    takes a value, `?` takes an optional attached value; `R=r` and `/long=r` are aliases.
    """
    shorts: dict[str, str] = {}
    longs: dict[str, str] = {}
    values: set[str] = set()
    attached: set[str] = set()
    for token in table.split():
        if "=" in token:
            alias, target = token.split("=", 1)
            canon = f"-{target}" if len(target) == 1 else f"--{target.lstrip('/')}"
            if alias.startswith("/"):
                longs[alias[1:]] = canon
            else:
                shorts[alias] = canon
            continue
        takes = token.endswith(":")
        optional = token.endswith("?")
        token = token.rstrip(":?")
        short, _, long = token.partition("/")
        canon = f"-{short}" if short else f"--{long}"
        if short:
            shorts[short] = canon
        for name in long.split("/") if long else ():
            longs[name] = canon
        if takes:
            values.add(canon)
        if optional:
            attached.add(canon)
    return Spec(shorts=shorts, longs=longs, values=frozenset(values), attached=frozenset(attached), **kwargs)


def gnu(table: str, **kwargs: Any) -> Spec:
    """A GNU program's spec: `table` and the `--help` and `--version` every GNU program has."""
    return spec(table + " /help /version", **kwargs)


def flags(names: str, values: str = "", **kwargs: Any) -> Spec:
    """A spec of single-dash options (`find -name x -print`, `terraform fmt -recursive`):
    `names` take no value, `values` take one."""
    return Spec(single_dash=True, flags=frozenset(names.split()), values=frozenset(values.split()), **kwargs)


UNKNOWN = Spec(known=False)
ANY_SUB = Spec(known=False)  # a subcommand the model does not list: its options kept as written
