"""Building blocks the program models share: reading file operands and option values,
finding a wrapper's inner command, simple code checks."""

from __future__ import annotations

import dataclasses
import functools
import os
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import Field
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, TypeVar

from ..command import SimpleCommand
from ..fileuse import FileUse
from .invocation import WILD, Invocation, read_invocation

if TYPE_CHECKING:
    from ..paths import Resolver  # (paths imports the programs at run time)

T = TypeVar("T")
Pairs = list[tuple[str, tuple[int, ...]]]
Words = tuple[str, ...]  # a command's words, unquoted


class Walk(Protocol):
    """What a model's look at the file system reads of a script's evaluation
    (`script_eval._Walk`): where the command may run, the resolver, a memo per script."""

    @property
    def cwds(self) -> list[str | None]: ...

    @property
    def resolver(self) -> Resolver: ...

    def remember(self, key: tuple[str, ...], read: Callable[[], T]) -> T: ...


# The facets' signatures (`model.py` names them on a Model)
FilesOf = Callable[[Invocation, Words], list[FileUse]]  # (inv, words) -> the files it names
CodeCheck = Callable[[Invocation, SimpleCommand], "str | None"]  # -> why it runs code, if it does
WorkspaceCheck = Callable[[Walk, Invocation], "str | None"]  # -> what of the workspace's it runs


# --- files -------------------------------------------------------------------------------

def op(inv: Invocation, k: int) -> tuple[str, tuple[int, ...]]:
    words_at = inv.positional_at[k] if k < len(inv.positional_at) else -1
    return inv.positionals[k], (words_at,)


def value_uses(inv: Invocation, options: tuple[str, ...], access: str, *, at_prefix: bool = False,
               tree: bool = False) -> list[FileUse]:
    """The files the values of `options` name (`at_prefix`: only a value that reads one, `@file`)."""
    out = []
    for option in options:
        for value, at in zip(inv.values.get(option, ()), inv.value_at.get(option, ()), strict=False):
            if at_prefix:
                path = at_file(value)
                if path is not None:
                    out.append(FileUse(access, path, (at,), tree))
            elif value:
                out.append(FileUse(access, value, (at,), tree))
    return out


def at_file(value: str) -> str | None:
    """The file of a curl/httpie data argument that reads one (`@file`, `name=@file`, `name=<file`)."""
    if value.startswith("@"):
        return value[1:] or None
    for marker in ("=@", "=<", ":=@", "@"):
        head, sep, tail = value.partition(marker)
        if sep and tail and (marker != "@" or "=" not in head):
            return tail
    return None


def operands(inv: Invocation, words: Words, skip: int = 0) -> Pairs:
    """(word, (index,)) of each operand after the subcommand (a run-time word as written)."""
    out = []
    start = inv.operands_from + skip
    for k in range(start, len(inv.positionals)):
        word, at = op(inv, k)
        if word == WILD:
            word = words[at[0]] if 0 <= at[0] < len(words) else word
        out.append((word, at))
    return out


def raw_values(words: Words, shorts: str, longs: tuple[str, ...], *, stop_at_operand: bool = False) -> Pairs:
    """The values of some options of a program whose options are not modelled, read from
    its words as getopt would (`-oFILE`, `-o FILE`, a cluster ending in the letter,
    `--long=FILE`, `--long FILE`); `stop_at_operand`: options end at the first operand
    (`time -o F cmd -o x`: the second `-o` is the command's)."""
    out: Pairs = []
    i = 1
    while i < len(words):
        word = words[i]
        if word == "--":
            break
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in longs:
                if eq:
                    out.append((value, (i,)))
                elif i + 1 < len(words):
                    out.append((words[i + 1], (i + 1,)))
                    i += 1
        elif word.startswith("-") and len(word) > 1:
            for j, letter in enumerate(word[1:], 1):
                if letter in shorts:
                    if word[j + 1:]:
                        out.append((word[j + 1:], (i,)))
                    elif i + 1 < len(words):
                        out.append((words[i + 1], (i + 1,)))
                        i += 1
                    break
        elif stop_at_operand:
            break
        i += 1
    return out


def written(pairs: Pairs, *, tree: bool = False) -> list[FileUse]:
    return [FileUse("write", w, at, tree) for w, at in pairs]


def reads_operands(inv: Invocation, words: Words) -> list[FileUse]:
    return [FileUse("read", w, at) for w, at in operands(inv, words)]


def option_files(reads: tuple[str, ...] = (), writes: tuple[str, ...] = (), trees: tuple[str, ...] = ()
                 ) -> FilesOf:
    """A files facet that is only option values: files read, written, directories written into."""
    def files(inv: Invocation, words: Words) -> list[FileUse]:
        return value_uses(inv, reads, "read") + value_uses(inv, writes, "write") + \
            value_uses(inv, trees, "write", tree=True)
    return files


# --- wrappers ----------------------------------------------------------------------------

class Inner(NamedTuple):
    """A command (or script) a wrapper runs."""

    words: tuple[str, ...] = ()  # an inner command, or
    script: str | None = None  # an inner script (parsed as shell)
    remote: bool = False
    operands_unknown: bool = False
    start: int = 0  # index in the wrapper's words where `words` begins (-1 when rebuilt)
    placeholder: str | None = None  # words containing it are replaced at run time (xargs -I {})
    tree_at: frozenset[int] = frozenset()  # words standing for every file under a path (find's `{}`)
    follows_links: bool = False  # find -L: those trees are walked through links
    origin: tuple[int, ...] = ()  # rebuilt words (start -1): the wrapper's word each comes from
    cwd: tuple[str, int] | None = None  # the directory it runs in (`env -C DIR`) and that word's index


InnerOf = Callable[[Words, SimpleCommand], list[Inner]]  # (words, cmd) -> the commands a wrapper runs


def skip_options(words: Words, start: int, values: frozenset[str], *, assign: bool = False, numeric: bool = False) -> int:
    """Index of the first word after the options (and `NAME=value` words when `assign`)."""
    i = start
    while i < len(words):
        word = words[i]
        if word == "--":
            return i + 1
        if assign and "=" in word and not word.startswith("-") and word.split("=", 1)[0].isidentifier():
            i += 1
            continue
        if word.startswith("-") and len(word) > 1:
            name = word.split("=", 1)[0]
            if "=" in word and name.startswith("--"):
                i += 1
            elif name in values:
                i += 2
            else:
                i += 1
            continue
        if numeric and word.lstrip("+-").isdigit():
            i += 1
            continue
        return i
    return i


def after(values: str, *, assign: bool = False, positional: int = 0, numeric: bool = False) -> InnerOf:
    """A wrapper facet: the inner command starts after the options (`values` take one) and
    `positional` operands of the wrapper's own (`timeout 5 CMD`)."""
    takes = frozenset(values.split())

    def inner(words: Words, cmd: SimpleCommand) -> list[Inner]:
        i = skip_options(words, 1, takes, assign=assign, numeric=numeric)
        i += positional
        return [Inner(tuple(words[i:]), start=i)] if i < len(words) else []

    return inner


def command_after(*, positional: int = 0) -> InnerOf:
    """A launcher's command: the words after its own options as its model reads them
    (`options.read_words`: letters in order, a value-taking letter ends its cluster with
    the rest or the next word, long options by unique prefix; the model's spec must stop at
    the first operand) and after `positional` operands of its own (`timeout 5 CMD`)."""

    def inner(words: Words, cmd: SimpleCommand) -> list[Inner]:
        at = read_invocation(words).positional_at
        if len(at) <= positional:
            return []
        return [Inner(tuple(words[at[positional]:]), start=at[positional])]

    return inner


def past_assignments(words: Words, start: int, *, any_name: bool = False) -> int:
    """The first word from `start` that is not a `NAME=value` (env sets any name, sudo a
    shell identifier)."""
    while start < len(words) and "=" in words[start] and not words[start].startswith("-") \
            and (any_name or words[start].split("=", 1)[0].isidentifier()):
        start += 1
    return start


def runner(sub: str, values: str = "") -> InnerOf:
    """`uv run CMD`, `poetry run CMD`, `npm exec -- CMD`, `pnpm dlx CMD`, `bundle exec CMD`."""
    takes = frozenset(values.split())

    def inner(words: Words, cmd: SimpleCommand) -> list[Inner]:
        if len(words) < 2 or words[1] != sub:
            return []
        for i, word in enumerate(words):
            if word in ("-c", "--call") and i + 1 < len(words):
                return [Inner(script=words[i + 1])]
        i = skip_options(words, 2, takes)
        return [Inner(tuple(words[i:]), start=i)] if i < len(words) else []

    return inner


# --- code --------------------------------------------------------------------------------

def stdin_kind(cmd: SimpleCommand) -> str:
    return {"pipe": "pipe", "file": "input file", "heredoc": "here-document"}.get(cmd.stdin or "", "input")


def runs_code(why: str, options: frozenset[str] | None = None, words: Words = ()) -> CodeCheck:
    """A code facet: `why`, when the command has one of `options` (or a word of `words`);
    always when neither is given."""
    def check(inv: Invocation, cmd: SimpleCommand) -> str | None:
        if options is not None and not (inv.options & options) and not any(w in cmd.words for w in words):
            return None
        return why
    return check


# --- the workspace's settings ----------------------------------------------------------------

def workspace_file(walk: Walk, names: tuple[str, ...], *, upward: bool = True) -> str | None:
    """The first of `names` (paths relative to a directory) found in a directory the command
    may run in, and, `upward`, each directory above it up to the workspace root: a settings
    file of the workspace's, which the agent can write. None without the file system."""
    resolver = walk.resolver
    if not resolver.ctx.filesystem:
        return None
    root = resolver.workspace.rstrip("/")
    for cwd in walk.cwds:
        if cwd is None:
            continue
        directory = posixpath.normpath(cwd)
        for _ in range(32):
            if directory != root and not directory.startswith(root + "/"):
                break
            for name in names:
                path = posixpath.join(directory, name)
                if walk.remember(("isfile", path), functools.partial(os.path.isfile, path)):
                    return path
            if not upward or directory == root:
                break
            directory = posixpath.dirname(directory)
    return None


def workspace_venvs(walk: Walk) -> list[str]:
    """The virtual environments at the workspace root and in the directories the command may
    run in (a child directory holding `pyvenv.cfg`)."""
    resolver = walk.resolver
    if not resolver.ctx.filesystem:
        return []
    found: list[str] = []
    for directory in dict.fromkeys([resolver.workspace] + [c for c in walk.cwds if c is not None]):
        def venvs(d: str = directory) -> list[str]:
            try:
                names = sorted(os.listdir(d))[:256]
            except OSError:
                return []
            return [posixpath.join(d, n) for n in names if os.path.isfile(posixpath.join(d, n, "pyvenv.cfg"))]
        found += walk.remember(("venvs", directory), venvs)
    return list(dict.fromkeys(found))


# --- examples ----------------------------------------------------------------------------------

Examples = dict[str, tuple[str, ...]]


class _Named(Protocol):
    """A program model as `with_examples` reads it (`model.py` imports this module)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def name(self) -> str: ...


M = TypeVar("M", bound=_Named)


def with_examples(models: list[M], table: Mapping[str, Examples],
                  default: Callable[[M], Examples | None] | None = None) -> list[M]:
    """The family's models, each with its table of examples (decision -> commands), from
    `table` or, for a model it does not name, `default(model)`."""
    out = []
    for model in models:
        examples = table.get(model.name) or (default(model) if default is not None else None)
        out.append(dataclasses.replace(model, examples=examples) if examples else model)
    unknown = set(table) - {m.name for m in models}
    if unknown:
        raise ValueError(f"examples of programs without a model: {sorted(unknown)}")
    return out
