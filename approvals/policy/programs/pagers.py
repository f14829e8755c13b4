"""Pagers and editors: they show the files they name, and editors write them.

Without a terminal (an agent has none) vi and ed read their input as keystrokes, and `!`
runs a shell: an editor given commands is asked about. less's `+CMD` and key settings can
run a program; man's `-P`, bat's and ack's `--pager` name one.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..classnames import READ_ONLY
from ..fileuse import FileUse
from .coreutils import reads_all
from .files import writes_all
from .invocation import Invocation
from .kit import operands, raw_values, runs_code, written
from .model import UNCLASSIFIED, Model

if TYPE_CHECKING:
    from ..shell import SimpleCommand

FAMILY = "pagers and editors"


def _less_files(inv: Invocation, words) -> list[FileUse]:
    # `-o FILE`/`--log-file`: less copies its input to FILE (when reading a pipe)
    logs = written(raw_values(words, "oO", ("--log-file", "--LOG-FILE")))
    logged = {at for use in logs for at in use.at}
    reads = [FileUse("read", w, at) for w, at in operands(inv, words) if not set(at) & logged]
    return reads + logs


# less's `+CMD` that only moves: a line or a percentage, the end (`G`, `F`), a search
_LESS_MOVES = re.compile(r"^\+\+?(?:[0-9]*[gGFpP%]?|[/?&][^\x00-\x1f]*)$")


def _less_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    """A lesskey file given to less: its `#env` section can set LESSOPEN, a program less
    runs. `+CMD` is typed into less as keys when it starts: `+!id` runs a shell (in a
    terminal, which `script -c` gives it), `+s FILE` saves the input to a file."""
    if any(w.split("=", 1)[0] in ("--lesskey-file", "--lesskey-src", "--lesskey-content")
           or (w.startswith("-k") and not w.startswith("--")) for w in cmd.words[1:]):
        return "`less` is given key settings, which can name a program it runs (LESSOPEN)"
    if any(w.startswith("+") and not _LESS_MOVES.match(w) for w in cmd.words[1:]):
        return "`less` is given commands to run when it starts (`!` runs a shell, `s` saves to a file)"
    return None


def _man_files(inv: Invocation, words) -> list[FileUse]:
    """A name with a slash, or any with -l, is a file man formats and shows."""
    return [FileUse("read", w, at) for w, at in operands(inv, words) if "/" in w or "-l" in inv.options]


def edits(inv: Invocation, words) -> list[FileUse]:
    """An editor writes the files it names and shows them first."""
    return writes_all(inv, words) + [FileUse("read", w, at) for w, at in operands(inv, words)]


# vi and ed run what they read: `+CMD`, `-c`, a script, and, without a terminal (an agent
# has none), their input as keystrokes; `:!`/`!` runs a shell and `:w` writes any file.
_EDITOR = runs_code("the editor runs the commands it is given or reads (`!` runs a shell)")
_PAGER = runs_code("`--pager` names a program that is run on the output", frozenset({"--pager"}))
_SHOWS = "shows the files it names"
_EDITS = "edits the files it names"

MODELS = [
    Model("less", FAMILY, "shows the files it names; `-o FILE` writes its input to FILE", cls=READ_ONLY,
          files=_less_files, code=_less_code),
    Model("zless", FAMILY, "shows compressed files", files=_less_files, code=_less_code),
    Model("more", FAMILY, _SHOWS, cls=READ_ONLY, files=reads_all),
    *(Model(n, FAMILY, _SHOWS, cls=UNCLASSIFIED, files=reads_all)
      for n in ("zmore", "most", "glow", "mdcat", "jless", "hexyl")),
    *(Model(n, FAMILY, _SHOWS + "; `--pager` runs a program", cls=READ_ONLY, files=reads_all, code=_PAGER)
      for n in ("bat", "batcat")),
    Model("man", FAMILY, "shows manual pages (a path, or any with `-l`, is a file read); `-P` runs a pager",
          cls=READ_ONLY, files=_man_files,
          code=runs_code("`man -P` runs a pager program", frozenset({"-P", "--pager", "-H", "--html"}))),
    Model("view", FAMILY, "vi, read-only", files=reads_all, code=_EDITOR),
    *(Model(n, FAMILY, _EDITS, files=edits, code=_EDITOR) for n in ("vim", "vi", "nvim", "ex", "ed")),
    *(Model(n, FAMILY, _EDITS, code=_EDITOR) for n in ("gvim", "vimdiff", "rvim", "rview", "evim")),
    *(Model(n, FAMILY, _EDITS, files=edits) for n in ("nano", "pico", "micro", "sudoedit")),
    Model("emacs", FAMILY, _EDITS + "; `--eval`, `-l`, `--batch` run code", files=edits,
          code=runs_code("the editor is told to run code", frozenset({"--eval", "-l", "--load", "--batch",
                                                                      "-batch"}))),
]
