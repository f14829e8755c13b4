"""Pagers and editors: they show the files they name, and editors write them.

Without a terminal (an agent has none) vi and ed read their input as keystrokes, and `!`
runs a shell: an editor given commands is asked about. less's `+CMD` and key settings can
run a program; man's `-P`, bat's and ack's `--pager` name one.
"""

from __future__ import annotations

import re

from ..classnames import READ_ONLY
from ..command import SimpleCommand
from ..fileuse import FileUse
from .coreutils import reads_all
from .files import writes_all
from .invocation import Invocation
from .kit import Examples, Words, operands, raw_values, runs_code, with_examples, written
from .model import UNCLASSIFIED, Model
from .spec import spec

FAMILY = "pagers and editors"


def _less_files(inv: Invocation, words: Words) -> list[FileUse]:
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


def _man_files(inv: Invocation, words: Words) -> list[FileUse]:
    """A name with a slash, or any with -l, is a file man formats and shows."""
    return [FileUse("read", w, at) for w, at in operands(inv, words) if "/" in w or "-l" in inv.options]


def edits(inv: Invocation, words: Words) -> list[FileUse]:
    """An editor writes the files it names and shows them first."""
    return writes_all(inv, words) + [FileUse("read", w, at) for w, at in operands(inv, words)]


# vi and ed run what they read: `+CMD`, `-c`, a script, and, without a terminal (an agent
# has none), their input as keystrokes; `:!`/`!` runs a shell and `:w` writes any file.
_EDITOR = runs_code("the editor runs the commands it is given or reads (`!` runs a shell)")
_PAGER = runs_code("`--pager` names a program that is run on the output", frozenset({"--pager"}))
_SHOWS = "shows the files it names"
# less's options (`+CMD` is an operand to the reader: the code facet reads it)
_LESS = spec("? /help a/search-skip-screen A/SEARCH-SKIP-SCREEN b/buffers: B/auto-buffers c/clear-screen "
             "C/CLEAR-SCREEN d/dumb D/color: e/quit-at-eof E/QUIT-AT-EOF f/force F/quit-if-one-screen "
             "g/hilite-search G/HILITE-SEARCH h/max-back-scroll: i/ignore-case I/IGNORE-CASE j/jump-target: "
             "J/status-column k/lesskey-file: /lesskey-src: /lesskey-content: K/quit-on-intr L/no-lessopen "
             "m/long-prompt M/LONG-PROMPT n/line-numbers N/LINE-NUMBERS o/log-file: O/LOG-FILE: p/pattern: "
             "P/prompt: q/quiet /silent=q Q/QUIET /SILENT=Q r/raw-control-chars R/RAW-CONTROL-CHARS "
             "s/squeeze-blank-lines S/chop-long-lines t/tag: T/tag-file: u/underline-special "
             "U/UNDERLINE-SPECIAL V/version w/hilite-unread W/HILITE-UNREAD x/tabs: X/no-init y/max-forw-scroll: "
             "z/window: #/shift: /mouse /MOUSE /wheel-lines: /use-color /incsearch /follow-name /header: "
             "/wordwrap /save-marks /redraw-on-quit /no-keypad /no-histdups /exit-follow-on-close /file-size "
             "/line-num-width: /status-col-width: /rscroll: /intr: /no-number-headers /no-search-headers "
             "/search-options: /show-preproc-errors /proc-backspace /proc-tab /proc-return", numeric=True)
_MORE = spec("d/silent f/logical l/no-pause c/print-over p/clean-print s/squeeze u/plain n/lines: e/exit-on-eof "
             "h/help V/version", numeric=True)
_BAT = spec("A/show-all p/plain l/language: H/highlight-line: /file-name: d/diff /diff-context: /tabs: /wrap: "
            "/terminal-width: n/number /color: /italic-text: /decorations: f/force-colorization /paging: /pager: "
            "m/map-syntax: /theme: /list-themes L/list-languages /style: r/line-range: /ignored-suffix: "
            "u/unbuffered /no-config /config-file /config-dir /cache-dir /diagnostic /acknowledgements h/help "
            "V/version /squeeze-blank s=squeeze-blank /squeeze-limit: /strip-ansi: /nonprintable-notation: "
            "/binary: S/chop-long-lines /set-terminal-title /no-paging P=no-paging /theme-dark: /theme-light: "
            "/list-themes /completion:")
_MAN = spec("a/all C/config-file: d/debug D/default e/extension: f/whatis k/apropos K/global-apropos l/local-file "
            "L/locale: m/systems: M/manpath: S/sections: s: w/where W/where-cat i/ignore-case I/match-case /regex "
            "/wildcard /names-only 7/ascii E/encoding: /no-subpages P/pager: H/html? h/help V/version "
            "/no-hyphenation /no-justification r/prompt:")
_EDITS = "edits the files it names"

MODELS = [
    Model("less", FAMILY, "shows the files it names; `-o FILE` writes its input to FILE", options=_LESS,
          cls=READ_ONLY, files=_less_files, code=_less_code,
          effects={"-o": "writes", "-O": "writes", "-k": "code", "--lesskey-src": "code",
                   "--lesskey-content": "code"}),
    Model("zless", FAMILY, "shows compressed files", files=_less_files, code=_less_code),
    Model("more", FAMILY, _SHOWS, options=_MORE, cls=READ_ONLY, files=reads_all),
    *(Model(n, FAMILY, _SHOWS, cls=UNCLASSIFIED, files=reads_all)
      for n in ("zmore", "most", "glow", "mdcat", "jless", "hexyl")),
    *(Model(n, FAMILY, _SHOWS + "; `--pager` runs a program", options=_BAT, cls=READ_ONLY, files=reads_all,
            code=_PAGER, effects={"--pager": "code"}) for n in ("bat", "batcat")),
    Model("man", FAMILY, "shows manual pages (a path, or any with `-l`, is a file read); `-P` runs a pager; "
                         "`-C`/`-M` read settings and pages the policy does not read", options=_MAN,
          cls=READ_ONLY, files=_man_files, effects={"-P": "code", "-H": "code", "-C": "settings", "-M": "settings"},
          code=runs_code("`man -P` runs a pager program", frozenset({"-P", "--pager", "-H", "--html"}))),
    Model("view", FAMILY, "vi, read-only", files=reads_all, code=_EDITOR),
    *(Model(n, FAMILY, _EDITS, files=edits, code=_EDITOR) for n in ("vim", "vi", "nvim", "ex", "ed")),
    *(Model(n, FAMILY, _EDITS, code=_EDITOR) for n in ("gvim", "vimdiff", "rvim", "rview", "evim")),
    *(Model(n, FAMILY, _EDITS, files=edits) for n in ("nano", "pico", "micro", "sudoedit")),
    Model("emacs", FAMILY, _EDITS + "; `--eval`, `-l`, `--batch` run code", files=edits,
          code=runs_code("the editor is told to run code", frozenset({"--eval", "-l", "--load", "--batch",
                                                                      "-batch"}))),
]

_EXAMPLES: dict[str, Examples] = {
    "less": {"allow": ("less -R src/app.py", "less +G src/app.py"), "ask": ("less +!id src/app.py", "less .env")},
    "more": {"allow": ("more src/app.py",), "ask": ("more .env",)},
    "bat": {"allow": ("bat -n src/app.py",), "ask": ("bat --pager ./x src/app.py",)},
    "batcat": {"allow": ("batcat src/app.py",)},
    "man": {"allow": ("man ls", "man -k socket"), "ask": ("man -P ./x ls", "man -C ./man.conf ls")},
}


def _examples(model: Model) -> Examples | None:
    return {"ask": (f"{model.name} src/app.py",)}


MODELS = with_examples(MODELS, _EXAMPLES, _examples)
