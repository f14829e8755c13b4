"""Core utilities that look: list, print, compare, count, filter.

They read the files they name (a `reads` rule holds for them, a secret-looking name is
asked about) and change nothing, save where an option writes a file (`sort -o`, `tree -o`,
`xxd IN OUT`, `uniq IN OUT`).
"""

from __future__ import annotations

from ..classnames import LOCAL, READ_ONLY
from ..fileuse import FileUse
from .invocation import Invocation
from .kit import Examples, Words, operands, value_uses, with_examples
from .model import UNCLASSIFIED, Model
from .spec import UNKNOWN, gnu, spec

FAMILY = "core utilities"

_FROM_FILES = ("--from-file", "--to-file", "--files0-from")


def reads_all(inv: Invocation, words: Words) -> list[FileUse]:
    """Every operand is a file read (and the files `--files0-from` and diff's `--from-file`
    name)."""
    return [FileUse("read", w, at) for w, at in operands(inv, words)] + value_uses(inv, _FROM_FILES, "read")


def _diff(inv: Invocation, words: Words) -> list[FileUse]:
    recursive = bool(inv.options & {"-r", "--recursive"})
    deref = recursive and "--no-dereference" not in inv.options  # diff -r compares what links point to
    return [FileUse("read", w, at, recursive, deref=deref) for w, at in operands(inv, words)] + \
        value_uses(inv, _FROM_FILES, "read")


def _in_out(inv: Invocation, words: Words) -> list[FileUse]:
    """`xxd IN OUT`, `uniq IN OUT`: the second operand is written."""
    ops = operands(inv, words)
    return [FileUse("read", w, at) for w, at in ops[:1]] + [FileUse("write", w, at) for w, at in ops[1:2]]


def _sort(inv: Invocation) -> str | None:
    return LOCAL if "-o" in inv.options else READ_ONLY


def _sort_files(inv: Invocation, words: Words) -> list[FileUse]:
    listed = [FileUse("read", "$NAMES", ())] if "--files0-from" in inv.options else []  # sorts what it names
    return [FileUse("read", w, at) for w, at in operands(inv, words)] + value_uses(inv, ("-o",), "write") + \
        value_uses(inv, ("--files0-from",), "read") + listed


def _date(inv: Invocation) -> str | None:
    """`date -s`/`date MMDDhhmm` set the system's clock (no class); without, it only prints."""
    sets = "-s" in inv.options or any(not op.startswith("+") for op in inv.operands)
    return None if sets else READ_ONLY


# What these print of a file they read names: `date -f .env` and `du --files0-from=.env`
# quote each line they cannot use, `tree --fromfile .env` draws each line as a path.
def _date_files(inv: Invocation, words: Words) -> list[FileUse]:
    return value_uses(inv, ("-f", "-F"), "read")


def _du_files(inv: Invocation, words: Words) -> list[FileUse]:
    return value_uses(inv, ("--files0-from", "-X"), "read")


def _tree_files(inv: Invocation, words: Words) -> list[FileUse]:
    listed = [FileUse("read", w, at) for w, at in operands(inv, words)] if inv.options & {
        "--fromfile", "--fromtabfile"} else []
    return listed + value_uses(inv, ("--infofile",), "read") + value_uses(inv, ("-o",), "write")


_SORT = gnu("o/output: k/key: t/field-separator: T/temporary-directory: S/buffer-size: /parallel: "
            "/files0-from: /compress-program: b/ignore-leading-blanks d/dictionary-order f/ignore-case "
            "g/general-numeric-sort h/human-numeric-sort i/ignore-nonprinting M/month-sort n/numeric-sort "
            "R/random-sort r/reverse u/unique s/stable V/version-sort c/check? C m/merge z/zero-terminated "
            "/random-source: /batch-size: /debug /sort:")
_DU = gnu("0/null a/all A/apparent-size B/block-size: b/bytes c/total D/dereference-args d/max-depth: "
          "/files0-from: H h/human-readable /inodes k L/dereference l/count-links m P/no-dereference "
          "S/separate-dirs /si s/summarize t/threshold: /time? /time-style: X/exclude-from: /exclude: "
          "x/one-file-system")
_TREE = spec("a d l f x L: R P: I: /gitignore /ignore-case /matchdirs /metafirst /prune /info /infofile: "
             "/noreport /charset: /filelimit: /timefmt: o: /fromfile /fromtabfile q N Q p u g s h /si /du D "
             "F v t c U r /dirsfirst /filesfirst /sort: i A S n C X J H: T: /nolinks /hintro: /houtro: "
             "/version /help")
_CHECKSUM = gnu("b/binary c/check /tag t/text z/zero /ignore-missing /quiet /status /strict w/warn")

_OPTIONS = {
    "wc": gnu("c/bytes m/chars l/lines /files0-from: L/max-line-length w/words /total:"),
    "head": gnu("n/lines: c/bytes: q/quiet /silent=q v/verbose z/zero-terminated", numeric=True),
    "tail": gnu("n/lines: c/bytes: q/quiet /silent=q v/verbose z/zero-terminated f/follow? F s/sleep-interval: "
                "/pid: /retry /max-unchanged-stats:", numeric=True),
    "cat": gnu("A/show-all b/number-nonblank e E/show-ends n/number s/squeeze-blank t T/show-tabs u "
               "v/show-nonprinting"),
    "tac": gnu("b/before r/regex s/separator:"),
    "nl": gnu("b/body-numbering: d/section-delimiter: f/footer-numbering: h/header-numbering: i/line-increment: "
              "l/join-blank-lines: n/number-format: p/no-renumber s/number-separator: v/starting-line-number: "
              "w/number-width:"),
    # (`-S` needs a value, `--strings` takes one only attached: two options)
    "od": gnu("A/address-radix: /endian: j/skip-bytes: N/read-bytes: S: /strings? t/format: v/output-duplicates "
              "w/width? /traditional a b c d f i l o s x"),
    "hexdump": spec("b/one-byte-octal c/one-byte-char C/canonical d/two-bytes-decimal o/two-bytes-octal "
                    "x/two-bytes-hex L/color? e/format: f/format-file: n/length: s/skip: v/no-squeezing h/help "
                    "V/version"),
    "strings": spec("a/all d/data f/print-file-name n/bytes: t/radix: w/include-all-whitespace o T/target: "
                    "e/encoding: /unicode: U: s/output-separator: h/help v/version V=v", numeric=True),
    "base64": gnu("d/decode i/ignore-garbage w/wrap:"),
    "file": spec("/help v/version m/magic-file: z/uncompress Z/uncompress-noreport b/brief c/checking-printout "
                 "e/exclude: /exclude-quiet: f/files-from: F/separator: i/mime /apple /extension /mime-type "
                 "/mime-encoding k/keep-going l/list L/dereference h/no-dereference n/no-buffer N/no-pad "
                 "0/print0 p/preserve-date P/parameter: r/raw s/special-files d/debug"),
    "md5sum": _CHECKSUM, "sha1sum": _CHECKSUM, "sha256sum": _CHECKSUM, "sha512sum": _CHECKSUM,
    "cksum": gnu("a/algorithm: c/check l/length: /tag /untagged z/zero /ignore-missing /quiet /status /strict "
                 "w/warn /debug /base64 /raw"),
    "cmp": spec("b/print-bytes i/ignore-initial: l/verbose n/bytes: s/quiet /silent=s /help v/version"),
    "comm": gnu("1 2 3 /check-order /nocheck-order /output-delimiter: /total z/zero-terminated"),
    "paste": gnu("d/delimiters: s/serial z/zero-terminated"),
    "join": gnu("a: e: i/ignore-case j: o: t: v: 1: 2: /check-order /nocheck-order /header z/zero-terminated"),
    "cut": gnu("b/bytes: c/characters: d/delimiter: f/fields: n /complement s/only-delimited /output-delimiter: "
               "z/zero-terminated"),
    "fold": gnu("b/bytes s/spaces w/width:"),
    "fmt": gnu("c/crown-margin p/prefix: s/split-only t/tagged-paragraph u/uniform-spacing w/width: g/goal:",
               numeric=True),
    "expand": gnu("i/initial t/tabs:", numeric=True),
    "rev": spec("h/help V/version"),
    "column": spec("t/table n/table-name: O/table-order: N/table-columns: l/table-columns-limit: "
                   "E/table-noextreme: d/table-noheadings e/table-header-repeat H/table-hide: R/table-right: "
                   "T/table-truncate: W/table-wrap: L/keep-empty-lines J/json r/tree: i/tree-id: p/tree-parent: "
                   "c/output-width: o/output-separator: s/separator: x/fillrows h/help V/version"),
    "diff": gnu("/normal q/brief s/report-identical-files c C: /context? u U: /unified? e/ed n/rcs y/side-by-side "
                "W/width: /left-column /suppress-common-lines p/show-c-function F/show-function-line: /label: "
                "t/expand-tabs T/initial-tab /tabsize: /suppress-blank-empty l/paginate r/recursive "
                "/no-dereference N/new-file /unidirectional-new-file /ignore-file-name-case "
                "/no-ignore-file-name-case x/exclude: X/exclude-from: S/starting-file: /from-file: /to-file: "
                "i/ignore-case E/ignore-tab-expansion Z/ignore-trailing-space b/ignore-space-change "
                "w/ignore-all-space B/ignore-blank-lines I/ignore-matching-lines: a/text /strip-trailing-cr "
                "D/ifdef: /line-format: /old-line-format: /new-line-format: /unchanged-line-format: "
                "/old-group-format: /new-group-format: /changed-group-format: /unchanged-group-format: "
                "d/minimal /horizon-lines: /speed-large-files /color? /palette: v=version", numeric=True),
    "uniq": gnu("c/count d/repeated D /all-repeated? f/skip-fields: /group? i/ignore-case s/skip-chars: u/unique "
                "z/zero-terminated w/check-chars:"),
    "xxd": spec("a b C c: E e g: h i l: n: o: p r d s: u v R: /help /version"),
    "ls": gnu("a/all A/almost-all /author b/escape /block-size: B/ignore-backups c C /color? d/directory "
              "D/dired f F/classify? /file-type /format: /full-time g /group-directories-first G/no-group "
              "h/human-readable /si H/dereference-command-line /dereference-command-line-symlink-to-dir "
              "/hide: /hyperlink? /indicator-style: i/inode I/ignore: k/kibibytes l L/dereference m "
              "n/numeric-uid-gid N/literal o p q/hide-control-chars /show-control-chars Q/quote-name "
              "/quoting-style: r/reverse R/recursive s/size S /sort: /time: /time-style: t T/tabsize: u U v "
              "w/width: x X Z/context /zero 1"),
    "stat": gnu("L/dereference f/file-system /cached: c/format: /printf: t/terse"),
    "df": gnu("a/all B/block-size: h/human-readable H/si i/inodes k l/local /no-sync /output? P/portability "
              "/sync /total t/type: T/print-type x/exclude-type: v"),
    "which": spec("a s"),
    "whereis": spec("b m s u B: M: S: f l g h/help V/version"),
    "basename": gnu("a/multiple s/suffix: z/zero"),
    "dirname": gnu("z/zero"),
    "realpath": gnu("e/canonicalize-existing m/canonicalize-missing L/logical P/physical q/quiet /relative-to: "
                    "/relative-base: s/strip /no-symlinks=s z/zero"),
    "readlink": gnu("f/canonicalize e/canonicalize-existing m/canonicalize-missing n/no-newline q/quiet s/silent "
                    "v/verbose z/zero"),
    "tr": gnu("c C/complement d/delete s/squeeze-repeats t/truncate-set1"),
    "seq": gnu("f/format: s/separator: w/equal-width", numeric=True),
    "yes": gnu(""),
    "sleep": gnu(""),
}

# Readers the policy classifies as read-only, and those it only knows the files of.
_READERS = ("cat", "tac", "head", "tail", "nl", "od", "hexdump", "strings", "base64", "wc", "file", "md5sum",
            "sha1sum", "sha256sum", "sha512sum", "cksum", "cmp", "comm", "paste", "join", "cut", "fold", "fmt",
            "expand", "rev", "column")
_READERS_UNCLASSIFIED = ("hd", "base32", "basenc", "sha224sum", "sha384sum", "b2sum", "sum", "diff3", "sdiff",
                         "unexpand", "iconv", "look", "pr", "tsort", "shuf")
_LOOKERS = ("ls", "stat", "df", "which", "whereis", "basename", "dirname", "realpath", "readlink", "tr", "seq",
            "yes", "sleep")


# options whose value is a file read
_READ_OPTIONS = {"wc": {"--files0-from": "reads"}, "file": {"-f": "reads", "-m": "reads"},
                 "hexdump": {"-f": "reads"}}


def _reader(name: str, cls: str | None = READ_ONLY) -> Model:
    return Model(name, FAMILY, "reads the files it names", cls=cls, options=_OPTIONS.get(name, UNKNOWN),
                 files=reads_all, effects=_READ_OPTIONS.get(name, {}))


MODELS = [
    *(_reader(n) for n in _READERS),
    *(_reader(n, UNCLASSIFIED) for n in _READERS_UNCLASSIFIED),
    *(Model(n, FAMILY, "only looks", options=_OPTIONS[n], cls=READ_ONLY) for n in _LOOKERS),
    Model("diff", FAMILY, "compares the files it names (`-r`: their trees)", options=_OPTIONS["diff"], cls=READ_ONLY,
          files=_diff, effects={"--from-file": "reads", "--to-file": "reads"}),
    Model("xxd", FAMILY, "dumps a file; `xxd IN OUT` writes OUT", options=_OPTIONS["xxd"], cls=READ_ONLY,
          files=_in_out),
    Model("uniq", FAMILY, "filters a file; `uniq IN OUT` writes OUT", options=_OPTIONS["uniq"], cls=READ_ONLY,
          files=_in_out),
    Model("sort", FAMILY, "sorts the files it names; `-o FILE` writes FILE", options=_SORT, cls=_sort,
          files=_sort_files, option_sensitive=True,
          effects={"-o": "writes", "--files0-from": "reads", "--compress-program": "code"}),
    Model("date", FAMILY, "prints the date; `-s` or an operand sets the clock (no class)",
          options=gnu("d/date: f/file: I/iso-8601? R/rfc-email /rfc-3339: r/reference: s/set: u/utc "
                      "/universal=u /debug /resolution"), cls=_date, files=_date_files, effects={"-f": "reads"}),
    Model("du", FAMILY, "measures the files it names", options=_DU, cls=READ_ONLY, files=_du_files,
          effects={"--files0-from": "reads", "-X": "reads"}),
    Model("tree", FAMILY, "draws a directory; `-o FILE` writes FILE", options=_TREE, cls=READ_ONLY,
          files=_tree_files, effects={"-o": "writes", "--infofile": "reads"}),
]

# Examples (decision -> commands under the default policy, no floor; test_program_models)
_EXAMPLES: dict[str, Examples] = {
    "ls": {"allow": ("ls -la src", "ls --color=auto -lh"), "ask": ("ls --no-such-option",)},
    "diff": {"allow": ("diff -ru src build", "diff src/a.py src/b.py"), "ask": ("diff src/a.py .env",)},
    "xxd": {"allow": ("xxd src/app.py", "xxd src/app.py build/app.hex"), "ask": ("xxd src/app.py /tmp/app.hex",)},
    "uniq": {"allow": ("uniq -c src/a",), "ask": ("uniq src/a /tmp/out",)},
    "sort": {"allow": ("sort -u -k2,2 src/a", "sort -o build/out src/a"),
             "ask": ("sort --compress-program=gzip src/a", "sort -o /tmp/out src/a"), "deny": ("sort -o /etc/x a",)},
    "date": {"allow": ("date -u +%F", "date -d yesterday"), "ask": ("date -s 2020-01-01", "date -f .env")},
    "du": {"allow": ("du -sh src",), "ask": ("du --files0-from=.env",)},
    "tree": {"allow": ("tree -L 2 src", "tree -o build/tree.txt"), "ask": ("tree -o /tmp/tree.txt",)},
    "tr": {"allow": ("tr a-z A-Z",)}, "seq": {"allow": ("seq -5 5",)}, "sleep": {"allow": ("sleep 1",)},
    "which": {"allow": ("which -a git",)}, "readlink": {"allow": ("readlink -f src",)},
}


def _examples(model: Model) -> Examples | None:
    if model.files is not None and model.known:
        return {"allow": (f"{model.name} src/app.py",), "ask": (f"{model.name} .env",)}
    if model.files is not None:
        return {"ask": (f"{model.name} src/app.py",)}
    return {"allow": (model.name,)}


MODELS = with_examples(MODELS, _EXAMPLES, _examples)
