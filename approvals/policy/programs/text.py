"""Searching and processing text: grep and its kin, sed, awk, jq.

They read the files they name after their pattern or script (a recursive search reads a
whole tree: `grep -r`, `rg`); sed, awk and jq scripts are read for what they run, write,
read or show (`sed e`, `awk system()`, `getline < FILE`, jq's `env`).
"""

from __future__ import annotations

import re

from ..classnames import DESTRUCTIVE, LOCAL, READ_ONLY
from ..command import SimpleCommand
from ..fileuse import FileUse
from .coreutils import reads_all
from .invocation import Invocation
from .kit import Examples, Inner, Walk, Words, operands, runs_code, value_uses, with_examples, workspace_file
from .model import UNCLASSIFIED, Model
from .sed_script import sed_read_files, sed_runs_code
from .spec import Spec, gnu, spec

FAMILY = "search and text processing"

Pairs = list[tuple[str, tuple[int, ...]]]


def _script_first(inv: Invocation, words: Words, script_options: tuple[str, ...]) -> Pairs:
    """Operands of grep/sed/awk/jq: the first is the pattern/script unless an option gave it."""
    skip = 0 if any(o in inv.options for o in script_options) else 1
    ops = operands(inv, words, skip)
    return [(w, at) for w, at in ops if not ("=" in w and w.split("=", 1)[0].isidentifier())] \
        if inv.program == "awk" else ops


def _script_words_dynamic(inv: Invocation, cmd: SimpleCommand, options: tuple[str, ...]) -> bool:
    """Whether the script given to sed/awk (an option's value, else the first operand) is
    only known at run time."""
    at = [i for o in options for i in inv.value_at.get(o, ())]
    if not at and inv.positional_at:
        at = [inv.positional_at[inv.operands_from]] if len(inv.positional_at) > inv.operands_from else []
    return any(i in cmd.dynamic_at for i in at)


# --- grep and its kin ---------------------------------------------------------------------

_RECURSIVE_ALWAYS = frozenset({"rg", "ag", "ack", "pt"})
# The options with which a recursive search follows the links it meets in the tree (each
# program's own spelling; grep and rg are modelled, so their long forms are folded in).
_FOLLOWS = {"grep": {"-R"}, "ugrep": {"-R", "--dereference-recursive"}, "rg": {"-L"},
            "ag": {"-f", "--follow"}, "ack": {"--follow"}, "pt": {"--follow"}}


def _grep_files(inv: Invocation, words: Words) -> list[FileUse]:
    program = inv.program
    recursive = (program in _RECURSIVE_ALWAYS or bool(inv.options & {"-r", "-R"})
                 or any(v == "recurse" for v in inv.values.get("-d", ())))  # grep -d recurse, --directories=recurse
    deref = recursive and bool(inv.options & _FOLLOWS.get(program, set()))
    # grep, rg and ugrep take the pattern from -e or -f; ag's -f is --follow
    pattern_options = ("-e", "-f") if program in ("grep", "rg", "ugrep") else ()
    out = [FileUse("read", w, at, recursive, deref=deref) for w, at in _script_first(inv, words, pattern_options)]
    if recursive and not out:
        out = [FileUse("read", ".", (), True, deref=deref)]  # `rg KEY`, `grep -r KEY`: the working directory
    return out + value_uses(inv, ("-f",), "read")


_GREP = gnu("E/extended-regexp F/fixed-strings G/basic-regexp P/perl-regexp e/regexp: f/file: i/ignore-case y "
             "w/word-regexp x/line-regexp z/null-data s/no-messages v/invert-match V/version c/count /color? "
             "/colour? n/line-number h/no-filename H/with-filename l/files-with-matches L/files-without-match "
             "o/only-matching q/quiet /silent=q r/recursive R/dereference-recursive A/after-context: "
             "B/before-context: C/context: m/max-count: /include: /exclude: /exclude-dir: /exclude-from: "
             "/label: a/text I d/directories: D/devices: b/byte-offset u T/initial-tab Z/null /line-buffered "
             "U/binary /binary-files: /no-ignore-case", numeric=True)
_RG = spec("e/regexp: f/file: /pre: /pre-glob: g/glob: /iglob: t/type: T/type-not: A/after-context: "
           "B/before-context: C/context: m/max-count: /max-depth: d=/max-depth j/threads: M/max-columns: "
           "E/encoding: /engine: r/replace: /path-separator: /sort: /sortr: /type-add: /ignore-file: /colors: "
           "/color: /context-separator: /field-match-separator: /max-filesize: i/ignore-case s/case-sensitive "
           "S/smart-case F/fixed-strings w/word-regexp x/line-regexp v/invert-match c/count "
           "l/files-with-matches n/line-number N/no-line-number H/with-filename I/no-filename o/only-matching "
           "p/pretty q/quiet u/unrestricted a/text z/search-zip L/follow P/pcre2 U/multiline /hidden "
           "/no-ignore /files /json /vimgrep 0/null /no-heading /heading /trim /stats /debug /line-buffered "
           "/no-config /glob-case-insensitive /no-glob-case-insensitive /no-ignore-vcs /no-ignore-parent "
           "/no-ignore-global /no-ignore-exclude /no-ignore-dot /no-ignore-files /ignore-file-case-insensitive "
           "/type-list /count-matches /column /no-column /passthru /passthrough=passthru /null-data /crlf "
           "/multiline-dotall /no-messages /no-require-git /one-file-system /sort-files b/byte-offset /no-unicode "
           "/no-hidden /no-follow /binary /no-binary /block-buffered /no-context-separator /include-zero "
           "/files-without-match /no-pre /pcre2-unicode /auto-hybrid-regex /regex-size-limit: /dfa-size-limit: "
           "/stop-on-nonmatch /max-columns-preview /no-max-columns-preview h/help V/version /type-clear: "
           "/no-ignore-messages /no-heading /smart-case /word-regexp", numeric=False)
_AG = spec("a/all-types A/after? B/before? C/context? /color /nocolor /column c/count /ackmate /vimgrep "
           "/depth: f/follow F/fixed-strings /files-with-matches=l /files-without-matches=L g: "
           "G/file-search-regex: /hidden i/ignore-case /ignore: /ignore-dir: l L m/max-count: /no-numbers "
           "/numbers /null 0=null p/path-to-ignore: /print-long-lines Q/literal=F s/case-sensitive S/smart-case "
           "/search-binary t/all-text u/unrestricted U/skip-vcs-ignores v/invert-match w/word-regexp "
           "z/search-zip /stats /silent /noheading /heading /nobreak /break /filename /nofilename /print0 "
           "/one-device h/help V/version /pager: /nopager /group /nogroup o/only-matching", numeric=True)
_ACK = spec("i/ignore-case I S/smart-case v/invert-match w/word-regexp Q/literal l/files-with-matches "
            "L/files-without-matches c/count h/no-filename H/with-filename o /match: m/max-count: 1 /column "
            "/no-column A/after-context: B/before-context: C/context? /print0 /pager: /nopager /heading "
            "/noheading /break /nobreak /group /nogroup /color /nocolor /flush f g: /sort-files k/known-types "
            "r R/recurse n/no-recurse /follow /nofollow t/type: /type-add: /type-set: /type-del: /ignore-dir: "
            "/noignore-dir: /ignore-file: /noenv /help /version /filter /nofilter x", numeric=True)
def _ackrc(walk: Walk, inv: Invocation) -> str | None:
    """ack reads the `.ackrc` of the directory it runs in and those above it (unless
    `--noenv`): options of the agent's choosing, a `--pager` among them."""
    if "--noenv" in inv.options:
        return None
    found = workspace_file(walk, (".ackrc",))
    return f"reads `{found}`, options of the workspace's (a pager it runs) the agent can write" if found else None


_PAGER = runs_code("`--pager` names a program that is run on the output", frozenset({"--pager"}))


# --- sed -----------------------------------------------------------------------------------

def _sed(inv: Invocation) -> str | None:
    return LOCAL if "-i" in inv.options else READ_ONLY


def _sed_files(inv: Invocation, words: Words) -> list[FileUse]:
    files = _script_first(inv, words, ("-e", "-f"))
    out = [FileUse("read", w, at) for w, at in files] + value_uses(inv, ("-f",), "read")
    scripts = list(inv.values.get("-e", ())) or ([] if "-f" in inv.options else list(inv.operands[:1]))
    # `r FILE`/`R FILE` print FILE (a name with a run-time part: known only when it runs)
    out += [FileUse("read", name, ()) for script in scripts for name in sed_read_files(script)]
    if "-i" in inv.options:
        out += [FileUse("write", w, at) for w, at in files]
    return out


def _sed_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    if "-f" in inv.options:
        return "`sed -f` runs a script file, which is not read"
    if _script_words_dynamic(inv, cmd, ("-e",)):
        return "the `sed` script is only known at run time"
    scripts = list(inv.values.get("-e", ())) or list(inv.operands[:1])
    for script in scripts:
        why = sed_runs_code(script)
        if why:
            return f"the `sed` script {why}"
    return None


# --- awk -----------------------------------------------------------------------------------

# awk's `getline [VAR] < "FILE"` reads FILE from inside the program (a FILE that is not a
# string literal is a run-time name: asked about).
AWK_GETLINE_FROM = re.compile(r"\bgetline\b(?:\s+[A-Za-z_]\w*(?:\[[^\]]*\])?)?\s*<\s*")
_AWK_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
_AWK_NAME = re.compile(r"[^\s;{}()]+")
_AWK_DIRECTIVE = re.compile(r"@\s*(include|load|[A-Za-z_][\w:]*\s*\()")
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk", "busybox-awk"})


def _awk_getline_reads(inv: Invocation) -> list[FileUse]:
    given = inv.values.get("-e", ())
    if given:
        programs = list(zip(given, inv.value_at.get("-e", ()), strict=False))
    elif len(inv.positionals) > inv.operands_from:
        at = inv.positional_at[inv.operands_from] if inv.operands_from < len(inv.positional_at) else -1
        programs = [(inv.positionals[inv.operands_from], at)]
    else:
        programs = []
    out = []
    for program, at in programs:
        for found in AWK_GETLINE_FROM.finditer(program):
            literal = _AWK_LITERAL.match(program, found.end())
            if literal:
                out.append(FileUse("read", literal.group(1), (at,)))
            else:
                # a name only known at run time: a read of any file, as `cat "$f"` is (a word
                # with `$` and no word index is a run-time path), floor or not
                found_name = _AWK_NAME.match(program, found.end())
                name = found_name.group(0) if found_name else "name"
                out.append(FileUse("read", name if name.startswith("$") else "$" + name, ()))
    return out


def _awk_files(inv: Invocation, words: Words) -> list[FileUse]:
    out = [FileUse("read", w, at) for w, at in _script_first(inv, words, ("-f", "-e", "--from-file"))]
    return out + _awk_getline_reads(inv) + value_uses(inv, ("-f",), "read")


def _awk_runs_code(program: str) -> bool:
    return bool(re.search(r"\bsystem\s*\(|\|\s*(getline|&)|\"[^\"]*\"\s*\|\s*getline|\|\s*\"|"
                          r"\bprintf?\b[^;{}]*?>{1,2}|\bcoprocess\b|\|&", program))


def _awk_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    if inv.options & {"-f", "-E", "-i", "-l", "--file", "--exec", "--include", "--load"}:
        return "`awk` runs a program file, which is not read"
    if _script_words_dynamic(inv, cmd, ("-e", "--source")):
        return "the `awk` program is only known at run time"
    # every `-e`/`--source` is a part of the program, not only the last one
    programs = list(inv.values.get("-e", ())) or [inv.operands[0] if inv.operands else ""]
    for program in programs:
        if _awk_runs_code(program):
            return "the `awk` program runs commands or writes files (`system`, a pipe or `>`)"
        if _AWK_DIRECTIVE.search(program):
            # gawk: `@include "f"` runs another file's code, `@load "x"` a library's, and
            # `@name(…)` calls the function named by a variable (`f = "system"; @f("id")`)
            return "the `awk` program includes code from a file, loads a library or calls a function by name"
        if any(not program.startswith('"', m.end()) for m in AWK_GETLINE_FROM.finditer(program)):
            return "the `awk` program reads a file it names only at run time (`getline < name`)"
    return None


def _awk_shows(cmd: SimpleCommand) -> str | None:
    if cmd.words[0] in _AWKS and any("ENVIRON" in w for w in cmd.words[1:]):
        return "the `awk` program reads the environment (`ENVIRON`), which holds the agent's credentials"
    return None


_AWK = spec("F/field-separator: v/assign: f/file: e/source: i/include: l/load: E/exec: b/characters-as-bytes "
            "c/traditional C/copyright d/dump-variables? D/debug? g/gen-pot h/help I/trace o/pretty-print? "
            "p/profile? P/posix r/re-interval s/no-optimize? S/sandbox t/lint-old V/version W: M/bignum L/lint? "
            "O/optimize N/use-lc-numeric n/non-decimal-data")


# --- jq ------------------------------------------------------------------------------------

_JQ_TWO = frozenset({"--arg", "--argjson", "--slurpfile", "--rawfile"})  # NAME VALUE
_JQ_ONE = frozenset({"-f", "--from-file", "-L", "--indent", "--library-path"})
_JQ_ENV = re.compile(r"(?<![\w$.])env\b|\$ENV\b")


def jq_filter(words: Words) -> str | None:
    """The filter jq runs, as written on its command line (None: read from `-f FILE`)."""
    return _jq_words(words)[0]


def _jq_files(inv: Invocation, words: Words) -> list[FileUse]:
    return _jq_words(words)[1]


def _jq_words(words: Words) -> tuple[str | None, list[FileUse]]:
    """jq's files: its inputs after the filter, `-f FILE` (the filter), `--slurpfile NAME
    FILE` and `--rawfile NAME FILE` (read into a variable), `-L DIR` (its modules; `import
    "x" as $d` reads `DIR/x.json`). `--arg`/`--argjson`/`--slurpfile`/`--rawfile` take two
    words: `jq --rawfile k .env -n '$k'` reads `.env`, it is not the filter."""
    out: list[FileUse] = []
    positionals: list[int] = []
    from_file = rest_are_args = False
    i = 1
    while i < len(words):
        word = words[i]
        if word == "--":
            positionals += range(i + 1, len(words))
            break
        if word in _JQ_TWO:
            if word in ("--slurpfile", "--rawfile") and i + 2 < len(words):
                out.append(FileUse("read", words[i + 2], (i + 2,)))
            i += 3
            continue
        name, eq, value = word.partition("=")
        if word in _JQ_ONE or (eq and name in _JQ_ONE):
            value_at = i if eq else i + 1
            if value_at < len(words):
                if name in ("-f", "--from-file"):
                    from_file = True
                    out.append(FileUse("read", value if eq else words[value_at], (value_at,)))
                elif name in ("-L", "--library-path"):
                    out.append(FileUse("read", value if eq else words[value_at], (value_at,), tree=True))
            i = value_at + 1
            continue
        if word.startswith("-L") and len(word) > 2:
            out.append(FileUse("read", word[2:], (i,), tree=True))
        elif word in ("--args", "--jsonargs"):
            rest_are_args = True
        elif not word.startswith("-") or word == "-":
            positionals.append(i)
        i += 1
    files = positionals if from_file else positionals[1:]
    if rest_are_args:
        files = []  # the words after the filter are the filter's arguments, not files
    script = None if from_file or not positionals else words[positionals[0]]
    return script, out + [FileUse("read", words[at], (at,)) for at in files if words[at] != "-"]


def _jq_shows(cmd: SimpleCommand) -> str | None:
    words = cmd.words
    if words[0] != "jq":
        return None
    script = jq_filter(words)
    if script is None and any(w in ("-f", "--from-file") or w.startswith("--from-file=") for w in words):
        return "the `jq` filter is read from a file, and a filter can print the environment (`env`)"
    if _JQ_ENV.search(script or ""):
        return "the `jq` filter reads the environment (`env`, `$ENV`), which holds the agent's credentials"
    return None


_JQ = spec("r/raw-output j/join-output a/ascii-output c/compact-output C/color-output M/monochrome-output "
           "S/sort-keys s/slurp n/null-input e/exit-status f/from-file: L: /arg: /argjson: /slurpfile: "
           "/rawfile: /args /jsonargs /tab /indent: R/raw-input /seq /stream h/help V/version /raw-output0 "
           "/unbuffered /stream-errors b/binary /library-path=L /build-configuration")


# --- find ----------------------------------------------------------------------------------

def _find(inv: Invocation) -> str | None:
    if "-delete" in inv.options:
        return DESTRUCTIVE
    if inv.options & {"-fprint", "-fprint0", "-fprintf", "-fls"}:
        return LOCAL
    return READ_ONLY  # -exec: the inner command is classified on its own


# find's actions that write their listing to a file (`-fprintf FILE FORMAT`).
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fls", "-fprintf"})


def _find_files(inv: Invocation, words: Words) -> list[FileUse]:
    """The files find's `-fprint FILE`-like actions write its listing to (what it runs with
    `-exec` is read as a command of its own)."""
    return [FileUse("write", words[i + 1], (i + 1,)) for i in range(1, len(words) - 1) if words[i] in _FIND_WRITES]


_FIND_LINK_OPTIONS = ("-H", "-L", "-P")


def _find_inner(words: Words, cmd: SimpleCommand) -> list[Inner]:
    """`find START… -exec CMD {} ;`: `{}` stands for each file under the start paths, so
    the inner command reads (or changes) every file of those trees; a word that only
    contains `{}` is known at run time, and `-exec {} ;` runs each file found."""
    i, follow = 1, False
    while i < len(words) and (words[i] in _FIND_LINK_OPTIONS or words[i] == "-D" or words[i].startswith("-O")):
        if words[i] in _FIND_LINK_OPTIONS:
            follow = words[i] == "-L"  # the last of -H, -L, -P wins
        i += 2 if words[i] == "-D" else 1
    starts: list[tuple[str, int]] = []  # (start path, index of its word)
    while i < len(words) and not words[i].startswith(("-", "(", "!")):
        starts.append((words[i], i))
        i += 1
    starts = starts or [(".", -1)]
    follow = follow or "-follow" in words[i:]
    out = []
    while i < len(words):
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(words) and words[j] not in (";", "+"):
                j += 1
            inner = words[i + 1 : j]
            if inner:
                tree_at = frozenset(k for k, w in enumerate(inner) if w == "{}" and k > 0)
                for start, start_at in starts[:4]:
                    replaced = tuple(start if k in tree_at else w for k, w in enumerate(inner))
                    origin = tuple(start_at if k in tree_at else i + 1 + k for k in range(len(inner)))
                    out.append(Inner(replaced, start=-1, placeholder="{}", tree_at=tree_at, follows_links=follow,
                                     origin=origin))
            i = j
        i += 1
    return out


_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_FIND = Spec(single_dash=True, runs_until=_FIND_RUNS, flags=frozenset(
    "-print -print0 -ls -delete -prune -quit -depth -d -mount -xdev -noleaf -follow -daystart -ignore_readdir_race "
    "-noignore_readdir_race -warn -nowarn -true -false -empty -executable -readable -writable -nouser -nogroup "
    "-not -and -or -a -o -H -L -P -help -version -exec -execdir -ok -okdir -newermt -newerct -newerat "
    "-newermm -newercc -newerBt -O0 -O1 -O2 -O3".split()) | _FIND_RUNS, values=frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-type",
    "-xtype", "-user", "-group", "-perm", "-size", "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin",
    "-newer", "-anewer", "-cnewer", "-maxdepth", "-mindepth", "-fprint", "-fprint0", "-fls", "-printf",
    "-samefile", "-inum", "-links", "-uid", "-gid", "-fstype", "-context", "-used", "-lname", "-ilname",
    "-regextype", "-files0-from", "-D", "-O"}))


# --- documents -----------------------------------------------------------------------------

# xmllint's options that load what a document names (entities, XIncludes, DTDs, schemas).
_XML_LOADS = frozenset({"--noent", "--xinclude", "--loaddtd", "--dtdattr", "--valid", "--dtdvalid", "--dtdvalidfpi",
                        "--schema", "--relaxng", "--schematron", "--catalogs", "--path", "--load-trace"})


def _xmllint_files(inv: Invocation, words: Words) -> list[FileUse]:
    reads = [FileUse("read", w, at) for w, at in operands(inv, words)]
    if any(w.split("=", 1)[0] in _XML_LOADS for w in words[1:]):
        # a document's external entities and XIncludes (`SYSTEM "file:///root/.ssh/id_rsa"`)
        # are read and printed: files named inside it, only known when it runs
        reads.append(FileUse("read", "$ENTITY", ()))
    return reads + value_uses(inv, ("--from-file", "--to-file", "--files0-from"), "read")


_SEARCH = "searches the files it names after its pattern (`-r`: their trees)"
MODELS = [
    Model("grep", FAMILY, _SEARCH, aliases=("egrep", "fgrep", "rgrep", "ggrep"),
          alias_options={"egrep": "-E", "fgrep": "-F", "rgrep": "-r"}, options=_GREP, cls=READ_ONLY,
          files=_grep_files),
    Model("rg", FAMILY, "searches a tree (the working directory unless it names paths); `--pre` runs a program",
          options=_RG, cls=READ_ONLY, files=_grep_files, effects={"-f": "reads", "--pre": "code"},
          code=runs_code("`rg --pre` runs a program on every file", frozenset({"--pre"}))),
    *(Model(n, FAMILY, "searches a tree; `--pager` runs a program", options=o, cls=READ_ONLY, files=_grep_files,
            code=_PAGER, effects={"--pager": "code"}, workspace_code=_ackrc if n == "ack" else None)
      for n, o in (("ag", _AG), ("ack", _ACK))),
    *(Model(n, FAMILY, "searches a tree", files=_grep_files) for n in ("pt", "ugrep")),
    Model("sed", FAMILY, "edits text (`-i`: the files in place); its script is read for `e`, `w`, `r`",
          aliases=("gsed",), options=gnu("n/quiet /silent=n e/expression: f/file: i/in-place? l/line-length: "
                                          "E/regexp-extended r=E s/separate u/unbuffered z/null-data /posix /debug "
                                          "/sandbox /follow-symlinks b/binary"),
          cls=_sed, files=_sed_files, code=_sed_code, option_sensitive=True,
          effects={"-f": "code"}),
    Model("awk", FAMILY, "runs an awk program on the files it names; read for `system`, pipes, `getline`",
          aliases=("gawk", "mawk", "nawk"), options=_AWK, cls=READ_ONLY, files=_awk_files, code=_awk_code,
          shows_environment=_awk_shows, option_sensitive=True,
          effects={"-f": "code", "-E": "code", "-i": "code", "-l": "code", "-D": "code", "-W": "code",
                   "-d": "writes", "-o": "writes", "-p": "writes"}),
    Model("busybox-awk", FAMILY, "busybox's awk", shows_environment=_awk_shows),
    Model("jq", FAMILY, "filters JSON; its filter is read for `env`", options=_JQ, cls=READ_ONLY, files=_jq_files,
          shows_environment=_jq_shows, effects={"-f": "reads"}),
    Model("find", FAMILY, "lists a tree; `-delete` destroys, `-fprint FILE` writes, `-exec CMD` is looked through",
          options=_FIND, cls=_find, files=_find_files, inner=_find_inner, option_sensitive=True,
          effects={"-fprint": "writes", "-fprint0": "writes", "-fls": "writes", "-fprintf": "writes"}),
    Model("yq", FAMILY, "filters YAML", cls=UNCLASSIFIED, files=reads_all),
    Model("csvlook", FAMILY, "shows a CSV file", cls=UNCLASSIFIED, files=reads_all),
    Model("xmllint", FAMILY, "checks XML; `--noent`, `--xinclude`… read the files a document names",
          cls=UNCLASSIFIED, files=_xmllint_files),
]

_EXAMPLES: dict[str, Examples] = {
    "grep": {"allow": ("grep -rn TODO src", "egrep -i 'a|b' src/app.py", "grep -C3 main src/app.py"),
             "ask": ("grep KEY .env", "grep --no-such-option x src")},
    "rg": {"allow": ("rg -n TODO src", "rg --hidden -g '*.py' main"), "ask": ("rg --pre ./x TODO",)},
    "ag": {"allow": ("ag TODO src",), "ask": ("ag --pager ./x TODO src",)},
    "ack": {"allow": ("ack TODO src",), "ask": ("ack --pager=./x TODO src",)},
    "pt": {"ask": ("pt TODO src",)}, "ugrep": {"ask": ("ugrep TODO src",)},
    "sed": {"allow": ("sed -n 1,5p src/app.py", "sed -i s/a/b/ src/app.py"),
            "ask": ("sed 'e id' src/app.py", "sed -n p .env", "sed -i s/a/b/ /tmp/x")},
    "awk": {"allow": ("awk '{print $1}' src/app.py", "gawk -F: '{print $1}' src/app.py"),
            "ask": ("awk 'BEGIN { system(\"id\") }'", "awk -f prog.awk src/app.py")},
    "busybox-awk": {"ask": ("busybox-awk '{print}' src/app.py",)},
    "jq": {"allow": ("jq .name package.json", "jq -r '.a[]' src/x.json"), "ask": ("jq -n env", "jq . .env")},
    "find": {"allow": ("find . -name '*.py' -type f", "find src -exec grep -l TODO {} +"),
             "ask": ("find . -fprint /tmp/x", "find . -exec sh -c 'x' \\;"), "deny": ("find . -delete",)},
    "yq": {"ask": ("yq .a src/x.yaml",)}, "csvlook": {"ask": ("csvlook src/x.csv",)},
    "xmllint": {"ask": ("xmllint --noout src/x.xml",)},
}
MODELS = with_examples(MODELS, _EXAMPLES)
