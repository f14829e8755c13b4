"""Core utilities that look: list, print, compare, count, filter.

They read the files they name (a `reads` rule holds for them, a secret-looking name is
asked about) and change nothing, save where an option writes a file (`sort -o`, `tree -o`,
`xxd IN OUT`, `uniq IN OUT`).
"""

from __future__ import annotations

from ..classnames import LOCAL, READ_ONLY
from ..fileuse import FileUse
from .invocation import Invocation
from .kit import operands, runs_code, value_uses
from .model import UNCLASSIFIED, Model
from .spec import UNKNOWN, spec

FAMILY = "core utilities"

_FROM_FILES = ("--from-file", "--to-file", "--files0-from")


def reads_all(inv: Invocation, words) -> list[FileUse]:
    """Every operand is a file read (and the files `--files0-from` and diff's `--from-file`
    name)."""
    return [FileUse("read", w, at) for w, at in operands(inv, words)] + value_uses(inv, _FROM_FILES, "read")


def _diff(inv: Invocation, words) -> list[FileUse]:
    recursive = bool(inv.options & {"-r", "--recursive"})
    deref = recursive and "--no-dereference" not in inv.options  # diff -r compares what links point to
    return [FileUse("read", w, at, recursive, deref=deref) for w, at in operands(inv, words)] + \
        value_uses(inv, _FROM_FILES, "read")


def _in_out(inv: Invocation, words) -> list[FileUse]:
    """`xxd IN OUT`, `uniq IN OUT`: the second operand is written."""
    ops = operands(inv, words)
    return [FileUse("read", w, at) for w, at in ops[:1]] + [FileUse("write", w, at) for w, at in ops[1:2]]


def _sort(inv: Invocation):
    return LOCAL if "-o" in inv.options else READ_ONLY


def _sort_files(inv: Invocation, words) -> list[FileUse]:
    listed = [FileUse("read", "$NAMES", ())] if "--files0-from" in inv.options else []  # sorts what it names
    return [FileUse("read", w, at) for w, at in operands(inv, words)] + value_uses(inv, ("-o",), "write") + \
        value_uses(inv, ("--files0-from",), "read") + listed


def _date(inv: Invocation):
    """`date -s`/`date MMDDhhmm` set the system's clock (no class); without, it only prints."""
    sets = "-s" in inv.options or any(not op.startswith("+") for op in inv.operands)
    return None if sets else READ_ONLY


# What these print of a file they read names: `date -f .env` and `du --files0-from=.env`
# quote each line they cannot use, `tree --fromfile .env` draws each line as a path.
def _date_files(inv: Invocation, words) -> list[FileUse]:
    return value_uses(inv, ("-f", "-F"), "read")


def _du_files(inv: Invocation, words) -> list[FileUse]:
    return value_uses(inv, ("--files0-from", "-X"), "read")


def _tree_files(inv: Invocation, words) -> list[FileUse]:
    listed = [FileUse("read", w, at) for w, at in operands(inv, words)] if inv.options & {
        "--fromfile", "--fromtabfile"} else []
    return listed + value_uses(inv, ("--infofile",), "read") + value_uses(inv, ("-o",), "write")


_SORT = spec("o/output: k/key: t/field-separator: T/temporary-directory: S/buffer-size: /parallel: "
             "/files0-from: /compress-program: b/ignore-leading-blanks d/dictionary-order f/ignore-case "
             "g/general-numeric-sort h/human-numeric-sort i/ignore-nonprinting M/month-sort n/numeric-sort "
             "R/random-sort r/reverse u/unique s/stable V/version-sort c/check? C m/merge z/zero-terminated "
             "/random-source: /batch-size: /debug")
_DU = spec("0/null a/all A/apparent-size B/block-size: b/bytes c/total D/dereference-args d/max-depth: "
           "/files0-from: H h/human-readable /inodes k L/dereference l/count-links m P/no-dereference "
           "S/separate-dirs /si s/summarize t/threshold: /time? /time-style: X/exclude-from: /exclude: "
           "x/one-file-system")
_TREE = spec("a d l f x L: R P: I: /gitignore /ignore-case /matchdirs /metafirst /prune /info /infofile: "
             "/noreport /charset: /filelimit: /timefmt: o: /fromfile /fromtabfile q N Q p u g s h /si /du D "
             "F v t c U r /dirsfirst /filesfirst /sort: i A S n C X J H: T: /nolinks /hintro: /houtro: "
             "/version /help")

_OPTIONS = {
    "wc": spec("c/bytes m/chars l/lines /files0-from: L/max-line-length w/words /total:"),
    "head": spec("n/lines: c/bytes: q/quiet /silent=q v/verbose z/zero-terminated"),
    "tail": spec("n/lines: c/bytes: q/quiet /silent=q v/verbose z/zero-terminated f/follow? F s/sleep-interval: "
                 "/pid: /retry"),
    "cat": spec("A/show-all b/number-nonblank e E/show-ends n/number s/squeeze-blank t T/show-tabs u "
                "v/show-nonprinting"),
}

# Readers the policy classifies as read-only, and those it only knows the files of.
_READERS = ("cat", "tac", "head", "tail", "nl", "od", "hexdump", "strings", "base64", "wc", "file", "md5sum",
            "sha1sum", "sha256sum", "sha512sum", "cksum", "cmp", "comm", "paste", "join", "cut", "fold", "fmt",
            "expand", "rev", "column")
_READERS_UNCLASSIFIED = ("hd", "base32", "basenc", "sha224sum", "sha384sum", "b2sum", "sum", "diff3", "sdiff",
                         "unexpand", "iconv", "look", "pr", "tsort", "shuf")
_LOOKERS = ("ls", "stat", "df", "which", "whereis", "basename", "dirname", "realpath", "readlink", "tr", "seq",
            "yes", "sleep")


def _reader(name: str, cls: str | None = READ_ONLY) -> Model:
    return Model(name, FAMILY, "reads the files it names", cls=cls, options=_OPTIONS.get(name, UNKNOWN),
                 files=reads_all)


MODELS = [
    *(_reader(n) for n in _READERS),
    *(_reader(n, UNCLASSIFIED) for n in _READERS_UNCLASSIFIED),
    *(Model(n, FAMILY, "only looks", cls=READ_ONLY) for n in _LOOKERS),
    Model("diff", FAMILY, "compares the files it names (`-r`: their trees)", cls=READ_ONLY, files=_diff),
    Model("xxd", FAMILY, "dumps a file; `xxd IN OUT` writes OUT", cls=READ_ONLY, files=_in_out),
    Model("uniq", FAMILY, "filters a file; `uniq IN OUT` writes OUT", cls=READ_ONLY, files=_in_out),
    Model("sort", FAMILY, "sorts the files it names; `-o FILE` writes FILE", options=_SORT, cls=_sort,
          files=_sort_files, option_sensitive=True,
          code=runs_code("`sort --compress-program` runs a program", frozenset({"--compress-program"}))),
    Model("date", FAMILY, "prints the date; `-s` or an operand sets the clock (no class)",
          options=spec("d/date: f/file: I/iso-8601? R/rfc-email /rfc-3339: r/reference: s/set: u/utc "
                       "/universal=u /debug /resolution"), cls=_date, files=_date_files),
    Model("du", FAMILY, "measures the files it names", options=_DU, cls=READ_ONLY, files=_du_files),
    Model("tree", FAMILY, "draws a directory; `-o FILE` writes FILE", options=_TREE, cls=READ_ONLY,
          files=_tree_files),
]
