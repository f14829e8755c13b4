"""Which words of a command name files it reads or writes (the file-operand catalogue).

Reads: `cat`, `less`, `head`, `tail` and the other filters, `grep`/`rg` operands after the
pattern (and `-f` files), `sed`/`awk`/`jq` operands after the script (and jq's `--rawfile`/
`--slurpfile` files and `-L` module directories), `source`/`.`, `cp`,
`scp` and `rsync` sources, `tar c` members, `diff`, `curl -T`/`-d @file`/`-F x=@file`,
`wget --post-file`, git's (`git_operands.py`: `git show HEAD:.env`, `git log -p -- .env`,
`git grep KEY`, `git add -f .env`…), `< file` redirections. Writes: `tee`, `touch`,
`mkdir`, `rm`, `rmdir`, `shred`, `truncate`, `chmod`/`chown`/`chgrp` targets, `cp`/`mv`/
`install` destinations (and `mv` sources), `ln` link names, `sed -i` files, `dd of=`,
`sort -o`, `tar x` into its `-C` directory, `unzip -d`, `curl -o`, `wget -O`/`-P`, `git
config --global`, `sqlite3` databases, editors, and `>`/`>>` redirections. `ln -s TARGET`
is a link: a target outside the workspace makes the command `outside-workspace`.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

from .classes import curl_urls
from .fileuse import FileUse
from .git_operands import git_file_uses
from .options import WILD, Invocation
from .sed_script import sed_read_files

_READ_ALL = frozenset({
    "cat", "tac", "less", "more", "most", "head", "tail", "nl", "od", "xxd", "hexdump", "hd", "strings", "base64",
    "base32", "basenc", "wc", "file", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum",
    "b2sum", "cksum", "sum", "cmp", "diff", "diff3", "sdiff", "comm", "paste", "join", "cut", "fold", "fmt",
    "expand", "unexpand", "rev", "column", "iconv", "look", "bat", "batcat", "view", "pr", "tsort", "shuf",
    "zcat", "bzcat", "xzcat", "zless", "zmore", "lzcat", "zstdcat", "openssl", "gpg", "yq", "xmllint", "csvlook",
    "readelf", "objdump", "nm", "ldd", "hexyl", "jless", "mdcat", "glow",
})
_WRITE_ALL = frozenset({"tee", "touch", "mkdir", "rmdir", "rm", "shred", "unlink", "truncate", "mkfifo", "mknod",
                        "chattr", "setfacl", "vim", "vi", "nvim", "nano", "emacs", "ed", "ex", "pico", "micro",
                        "sudoedit", "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd",
                        "lzma", "srm", "wipe"})
# Of those, the ones that read what they write: an editor shows the file, a compressor
# reads it (and with -c/--stdout prints it, compressed: `gzip -c .env | gunzip`).
_READ_TOO = frozenset({"vim", "vi", "nvim", "nano", "emacs", "ed", "ex", "pico", "micro", "sudoedit", "gzip", "gunzip",
                       "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lzma"})
_FIRST_IS_NOT_A_FILE = frozenset({"chmod", "chown", "chgrp"})
_NO_FOLLOW = frozenset({"rm", "unlink", "rmdir", "srm", "shred", "wipe"})
_GREPS = frozenset({"grep", "rg", "ag", "ack", "pt", "ugrep"})
_RECURSIVE_ALWAYS = frozenset({"rg", "ag", "ack", "pt"})
# The options with which a recursive search follows the links it meets in the tree (each
# program's own spelling; grep and rg are catalogued, so their long forms are folded in).
_GREP_FOLLOWS = {"grep": {"-R"}, "ugrep": {"-R", "--dereference-recursive"}, "rg": {"-L"},
                 "ag": {"-f", "--follow"}, "ack": {"--follow"}, "pt": {"--follow"}}
# find's actions that write their listing to a file (`-fprintf FILE FORMAT`).
_FIND_WRITES = frozenset({"-fprint", "-fprint0", "-fls", "-fprintf"})


# xmllint's options that load what a document names (entities, XIncludes, DTDs, schemas).
_XML_LOADS = frozenset({"--noent", "--xinclude", "--loaddtd", "--dtdattr", "--valid", "--dtdvalid", "--dtdvalidfpi",
                        "--schema", "--relaxng", "--schematron", "--catalogs", "--path", "--load-trace"})


def _op(inv: Invocation, k: int) -> tuple[str, tuple[int, ...]]:
    words_at = inv.positional_at[k] if k < len(inv.positional_at) else -1
    return inv.positionals[k], (words_at,)


def _value_uses(inv: Invocation, options: tuple[str, ...], access: str, *, at_prefix: bool = False,
                tree: bool = False) -> list[FileUse]:
    out = []
    for option in options:
        for value, at in zip(inv.values.get(option, ()), inv.value_at.get(option, ()), strict=False):
            if at_prefix:
                path = _at_file(value)
                if path is not None:
                    out.append(FileUse(access, path, (at,), tree))
            elif value:
                out.append(FileUse(access, value, (at,), tree))
    return out


def _at_file(value: str) -> str | None:
    """The file of a curl/httpie data argument that reads one (`@file`, `name=@file`, `name=<file`)."""
    if value.startswith("@"):
        return value[1:] or None
    for marker in ("=@", "=<", ":=@", "@"):
        head, sep, tail = value.partition(marker)
        if sep and tail and (marker != "@" or "=" not in head):
            return tail
    return None


def _operands(inv: Invocation, words, skip: int = 0) -> list[tuple[str, tuple[int, ...]]]:
    out = []
    start = inv.operands_from + skip
    for k in range(start, len(inv.positionals)):
        word, at = _op(inv, k)
        if word == WILD:
            word = words[at[0]] if 0 <= at[0] < len(words) else word
        out.append((word, at))
    return out


def _raw_values(words, shorts: str, longs: tuple[str, ...], *, stop_at_operand: bool = False
                ) -> list[tuple[str, tuple[int, ...]]]:
    """The values of some options of a program whose options are not catalogued, read from
    its words as getopt would (`-oFILE`, `-o FILE`, a cluster ending in the letter,
    `--long=FILE`, `--long FILE`); `stop_at_operand`: options end at the first operand
    (`time -o F cmd -o x`: the second `-o` is the command's)."""
    out: list[tuple[str, tuple[int, ...]]] = []
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


def _written(pairs: list[tuple[str, tuple[int, ...]]], *, tree: bool = False) -> list[FileUse]:
    return [FileUse("write", w, at, tree) for w, at in pairs]


def _copy(inv: Invocation, words, program: str) -> list[FileUse]:
    ops = _operands(inv, words)
    recursive = bool(inv.options & {"-r", "-R", "-a"}) or program == "mv"
    deref = recursive and program == "cp" and "-L" in inv.options  # cp -rL copies what links point to
    target = inv.value("-t")
    link = program == "cp" and bool(inv.options & {"-s", "-l"})
    if target is not None:
        sources, dest = ops, (target, inv.value_at.get("-t", (-1,)))
    elif len(ops) >= 2:
        sources, dest = ops[:-1], ops[-1]
    else:
        return [FileUse("read", w, at, recursive, deref=deref) for w, at in ops]
    out = []
    for word, at in sources:
        out.append(FileUse("link" if link else "read", word, at, recursive or link, deref=deref and not link))
        if program == "mv":
            out.append(FileUse("write", word, at, True, False))
        out.append(FileUse("write", posixpath.join(dest[0], posixpath.basename(word.rstrip("/")) or word),
                           at + tuple(dest[1]), recursive))
    out.append(FileUse("write", dest[0], tuple(dest[1]), recursive))
    return out


def _ln(inv: Invocation, words) -> list[FileUse]:
    ops = _operands(inv, words)
    symbolic = "-s" in inv.options
    target_dir = inv.value("-t")
    if target_dir is not None:
        pairs = [(w, at, posixpath.join(target_dir, posixpath.basename(w)), at) for w, at in ops]
    elif len(ops) == 1:
        word, at = ops[0]
        pairs = [(word, at, posixpath.basename(word.rstrip("/")) or ".", at)]
    elif len(ops) >= 2:
        dest, dest_at = ops[-1]
        many = len(ops) > 2
        pairs = [(w, at, posixpath.join(dest, posixpath.basename(w)) if many else dest, dest_at) for w, at in ops[:-1]]
    else:
        return []
    out = []
    for target, target_at, name, name_at in pairs:
        out.append(FileUse("write", name, name_at, True, False))
        if symbolic and not target.startswith(("/", "~", "$")):
            # a relative symlink target is read from the link's own directory
            target = posixpath.join(posixpath.dirname(name), target)
        out.append(FileUse("link", target, target_at + name_at, True))
    return out


def _script_first(inv: Invocation, words, script_options: tuple[str, ...]) -> list[tuple[str, tuple[int, ...]]]:
    """Operands of grep/sed/awk/jq: the first is the pattern/script unless an option gave it."""
    skip = 0 if any(o in inv.options for o in script_options) else 1
    ops = _operands(inv, words, skip)
    return [(w, at) for w, at in ops if not ("=" in w and w.split("=", 1)[0].isidentifier())] \
        if inv.program == "awk" else ops


_JQ_TWO = frozenset({"--arg", "--argjson", "--slurpfile", "--rawfile"})  # NAME VALUE
_JQ_ONE = frozenset({"-f", "--from-file", "-L", "--indent", "--library-path"})


def jq_filter(words) -> str | None:
    """The filter jq runs, as written on its command line (None: read from `-f FILE`)."""
    return _jq_words(words)[0]


def _jq_reads(words) -> list[FileUse]:
    return _jq_words(words)[1]


def _jq_words(words) -> tuple[str | None, list[FileUse]]:
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


# awk's `getline [VAR] < "FILE"` reads FILE from inside the program (a FILE that is not a
# string literal is a run-time name: `risks` asks about it).
AWK_GETLINE_FROM = re.compile(r"\bgetline\b(?:\s+[A-Za-z_]\w*(?:\[[^\]]*\])?)?\s*<\s*")
_AWK_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')


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
    return out


def _tar(inv: Invocation, words) -> list[FileUse]:
    base = inv.value("-C") or ""
    base_at = inv.value_at.get("-C", ())
    archive = _value_uses(inv, ("-f",), "read")
    members = [(posixpath.join(base, w) if base and not w.startswith(("/", "~")) else w, at + tuple(base_at))
               for w, at in _operands(inv, words)]
    if inv.options & {"-c", "-r", "-u", "-A"}:
        deref = "-h" in inv.options  # tar -h archives what links point to
        named = [FileUse("read", "$NAMES", (), True)] if "-T" in inv.options else []  # names read from a list
        return [FileUse("write", u.word, u.at) for u in archive] + \
            [FileUse("read", w, at, True, deref=deref) for w, at in members] + _value_uses(inv, ("-T",), "read") + \
            named
    if "-x" in inv.options:
        source = inv.value("-f") or ""
        if source == "-" or inv.options & {"--transform"}:
            source = ""  # from the standard input, or renamed as it is written
        try:
            strip = int(inv.value("--strip-components") or 0)
        except ValueError:
            strip, source = 0, ""
        out = archive + [FileUse("write", base or ".", tuple(base_at), True, extracts=(source, "tar", strip, False))]
        if "-P" in inv.options:
            out.append(FileUse("write", "/", (), True))  # absolute member names: anywhere
        return out
    return archive


def _file_urls(inv: Invocation) -> list[FileUse]:
    """`curl file:///etc/shadow` reads /etc/shadow (percent-decoded, any host part dropped);
    a URL curl expands (`{a,b}`, `[1-9]`) reads paths only known at run time."""
    out = []
    for scheme, url in curl_urls(inv):
        if scheme != "file":
            continue
        path = url.split("://", 1)[1] if "://" in url else url.split(":", 1)[1] if url.lower().startswith(
            "file:") else url  # `file:///p`, `file://host/p`, `file:/p`; a bare path (--proto-default file)
        if not path.startswith("/"):
            path = "/" + path.split("/", 1)[1] if "/" in path else "/"
        path = unquote(path.split("?", 1)[0].split("#", 1)[0])
        out.append(FileUse("read", "$URL" if any(c in url for c in "{}[]") else path, ()))
    return out


def _find(words) -> list[FileUse]:
    """The files find's `-fprint FILE`-like actions write its listing to (what it runs
    with `-exec` is read as a command of its own, see wrappers)."""
    return [FileUse("write", words[i + 1], (i + 1,)) for i in range(1, len(words) - 1) if words[i] in _FIND_WRITES]


def _network(inv: Invocation, words) -> list[FileUse]:
    program = inv.program
    if program == "curl":
        out = _file_urls(inv)
        out += _value_uses(inv, ("-o", "-c", "-D", "--trace", "--trace-ascii", "--stderr", "--libcurl"), "write")
        out += _value_uses(inv, ("--output-dir",), "write", tree=True)
        out += _value_uses(inv, ("-T", "-K"), "read")
        out += _value_uses(inv, ("-d", "--data-binary", "--data-ascii", "--data-urlencode", "--json", "-F",
                                 "-H", "--variable"), "read", at_prefix=True)
        return out
    if program == "wget":
        out = _value_uses(inv, ("-O", "-o", "-a", "--save-cookies"), "write")
        out += _value_uses(inv, ("-P",), "write", tree=True)
        out += _value_uses(inv, ("--post-file", "--body-file", "-i", "--config", "--load-cookies"), "read")
        return out
    if program == "http":
        out = _value_uses(inv, ("-o",), "write")
        for word, at in _operands(inv, words):
            path = _at_file(word) if "@" in word else None
            if path:
                out.append(FileUse("read", path, at))
        return out
    if program in ("scp", "rsync"):
        local = [(w, at) for w, at in _operands(inv, words) if not _remote_spec(w)]
        ops = _operands(inv, words)
        # scp -r follows every link it meets; rsync with -L, --copy-unsafe-links or -k
        deref = program == "scp" or bool(inv.options & {"-L", "--copy-unsafe-links", "-k", "--copy-dirlinks"})
        if len(ops) < 2:
            return [FileUse("read", w, at, True, deref=deref) for w, at in local]
        dest = ops[-1]
        out = [FileUse("read", w, at, True, deref=deref) for w, at in local if (w, at) != dest]
        if not _remote_spec(dest[0]):
            out.append(FileUse("write", dest[0], dest[1], True))
        return out
    return []


def _remote_spec(word: str) -> bool:
    head = word.split("/", 1)[0]
    return ":" in head or word.startswith("rsync://")


# Every program `file_uses` reads file operands of: a command of any other program names no
# file, so its path checks are skipped (the one list; script_eval asks it).
NAMES_FILES = _READ_ALL | _WRITE_ALL | _FIRST_IS_NOT_A_FILE | _GREPS | frozenset({
    "sed", "awk", "jq", "source", ".", "cp", "mv", "install", "ln", "dd", "sort", "uniq", "tar", "unzip", "zip",
    "find", "git", "npm", "sqlite3", "duckdb", "crontab", "curl", "wget", "http", "scp", "rsync", "xargs", "man",
    "pip", "patch", "history", "script", "date", "hostname", "du", "tree", "time", "flock", "parallel"})


def file_uses(inv: Invocation, words) -> list[FileUse]:
    """The files a command (read by meaning) reads, writes or links to."""
    program = inv.program
    if program == "xxd":  # `xxd IN OUT`, `xxd -r IN OUT`: the second operand is written
        ops = _operands(inv, words)
        return [FileUse("read", w, at) for w, at in ops[:1]] + [FileUse("write", w, at) for w, at in ops[1:2]]
    if program in ("less", "zless"):
        # `-o FILE`/`--log-file`: less copies its input to FILE (when reading a pipe)
        logs = _written(_raw_values(words, "oO", ("--log-file", "--LOG-FILE")))
        logged = {at for use in logs for at in use.at}
        reads = [FileUse("read", w, at) for w, at in _operands(inv, words) if not set(at) & logged]
        return reads + logs
    if program == "time":  # GNU time's `-o FILE` (bash's own `time` has none)
        return _written(_raw_values(words, "o", ("--output",), stop_at_operand=True))
    if program == "flock":  # `flock FILE cmd` creates FILE (a number is a descriptor)
        first = [(w, at) for w, at in _operands(inv, words)[:1] if not w.isdigit()]
        return _written(first)
    if program == "parallel":
        return _written(_raw_values(words, "", ("--joblog", "--results", "--res", "--tmpdir")), tree=True)
    if program in _READ_ALL:
        recursive = program in ("diff",) and bool(inv.options & {"-r", "--recursive"})
        deref = recursive and "--no-dereference" not in inv.options  # diff -r compares what links point to
        reads = [FileUse("read", w, at, recursive, deref=deref) for w, at in _operands(inv, words)]
        if program == "xmllint" and any(w.split("=", 1)[0] in _XML_LOADS for w in words[1:]):
            # a document's external entities and XIncludes (`SYSTEM "file:///root/.ssh/id_rsa"`)
            # are read and printed: files named inside it, only known when it runs
            reads.append(FileUse("read", "$ENTITY", ()))
        return reads + _value_uses(inv, ("--from-file", "--to-file", "--files0-from"), "read")
    if program in _WRITE_ALL:
        tree = bool(inv.options & {"-r", "-R"}) and program in ("rm", "chattr", "setfacl", "shred")
        follow = program not in _NO_FOLLOW
        ops = _operands(inv, words)
        reads = [FileUse("read", w, at, tree) for w, at in ops] if program in _READ_TOO else []
        return [FileUse("write", w, at, tree, follow) for w, at in ops] + reads
    if program == "man":  # a name with a slash, or any with -l, is a file man formats and shows
        return [FileUse("read", w, at) for w, at in _operands(inv, words) if "/" in w or "-l" in inv.options]
    if program in _FIRST_IS_NOT_A_FILE:
        skip = 0 if "--reference" in inv.options else 1
        tree = bool(inv.options & {"-R"})
        return [FileUse("write", w, at, tree) for w, at in _operands(inv, words, skip)]
    if program in _GREPS:
        recursive = (program in _RECURSIVE_ALWAYS or bool(inv.options & {"-r", "-R"})
                     or any(v == "recurse" for v in inv.values.get("-d", ())))  # grep -d recurse, --directories=recurse
        deref = recursive and bool(inv.options & _GREP_FOLLOWS.get(program, set()))
        # grep, rg and ugrep take the pattern from -e or -f; ag's -f is --follow
        pattern_options = ("-e", "-f") if program in ("grep", "rg", "ugrep") else ()
        out = [FileUse("read", w, at, recursive, deref=deref) for w, at in _script_first(inv, words, pattern_options)]
        if recursive and not out:
            out = [FileUse("read", ".", (), True, deref=deref)]  # `rg KEY`, `grep -r KEY`: the working directory
        return out + _value_uses(inv, ("-f",), "read")
    if program == "sed":
        files = _script_first(inv, words, ("-e", "-f"))
        out = [FileUse("read", w, at) for w, at in files] + _value_uses(inv, ("-f",), "read")
        scripts = list(inv.values.get("-e", ())) or ([] if "-f" in inv.options else list(inv.operands[:1]))
        # `r FILE`/`R FILE` print FILE (a name with a run-time part: known only when it runs)
        out += [FileUse("read", name, ()) for script in scripts for name in sed_read_files(script)]
        if "-i" in inv.options:
            out += [FileUse("write", w, at) for w, at in files]
        return out
    if program == "jq":
        return _jq_reads(words)
    if program == "awk":
        out = [FileUse("read", w, at) for w, at in _script_first(inv, words, ("-f", "-e", "--from-file"))]
        return out + _awk_getline_reads(inv) + _value_uses(inv, ("-f",), "read")
    if program in ("source", "."):
        return [FileUse("read", w, at) for w, at in _operands(inv, words)[:1]]
    if program == "xargs":
        return _value_uses(inv, ("-a",), "read")  # `xargs -a FILE echo` prints FILE's words
    if program == "script":
        # the session's log: its operand, `-O`/`-B`/`-I`/`-T` files, else `typescript` here
        logs = _value_uses(inv, ("-O", "-B", "-I", "-T", "-t"), "write")
        named = [FileUse("write", w, at) for w, at in _operands(inv, words)[:1]]
        return named + logs if named or logs else [FileUse("write", "typescript", ())]
    if program in ("cp", "mv", "install"):
        if program == "install" and "-d" in inv.options:
            return [FileUse("write", w, at) for w, at in _operands(inv, words)]
        return _copy(inv, words, program)
    if program == "ln":
        return _ln(inv, words)
    if program == "dd":
        out = []
        for w, at in _operands(inv, words):
            if w.startswith("of="):
                out.append(FileUse("write", w[3:], at))
            elif w.startswith("if="):
                out.append(FileUse("read", w[3:], at))
        return out
    if program == "sort":
        listed = [FileUse("read", "$NAMES", ())] if "--files0-from" in inv.options else []  # sorts what it names
        return [FileUse("read", w, at) for w, at in _operands(inv, words)] + _value_uses(inv, ("-o",), "write") + \
            _value_uses(inv, ("--files0-from",), "read") + listed
    # What these print of a file they read names: `date -f .env` and `du --files0-from=.env`
    # quote each line they cannot use, `tree --fromfile .env` draws each line as a path.
    if program in ("date", "hostname"):
        return _value_uses(inv, ("-f", "-F"), "read")
    if program == "du":
        return _value_uses(inv, ("--files0-from", "-X"), "read")
    if program == "tree":
        listed = [FileUse("read", w, at) for w, at in _operands(inv, words)] if inv.options & {
            "--fromfile", "--fromtabfile"} else []
        return listed + _value_uses(inv, ("--infofile",), "read") + _value_uses(inv, ("-o",), "write")
    if program == "uniq":
        ops = _operands(inv, words)
        return [FileUse("read", w, at) for w, at in ops[:1]] + [FileUse("write", w, at) for w, at in ops[1:2]]
    if program == "tar":
        return _tar(inv, words)
    if program == "unzip":
        ops = _operands(inv, words)
        out = [FileUse("read", w, at) for w, at in ops[:1]]
        extracts = (ops[0][0] if ops and ops[0][0] != "-" else "", "zip", 0, "-j" in inv.options)
        dest = _value_uses(inv, ("-d",), "write", tree=True) or [FileUse("write", ".", (), True)]
        return out + [use._replace(extracts=extracts) for use in dest]
    if program == "zip":
        ops = _operands(inv, words)
        recursive = "-r" in inv.options
        deref = recursive and "-y" not in inv.options  # zip stores what links point to unless -y
        listed = [FileUse("read", "$NAMES", (), recursive)] if "-@" in words or "--names-stdin" in words else []
        return [FileUse("write", w, at) for w, at in ops[:1]] + \
            [FileUse("read", w, at, recursive, deref=deref) for w, at in ops[1:]] + listed
    if program == "find":
        return _find(words)
    if program == "git":
        return git_file_uses(inv, words)
    if program == "npm" and inv.subcommand in ("install", "ci", "uninstall", "update", "link", "prune", "dedupe"):
        return _value_uses(inv, ("--prefix", "--cache"), "write", tree=True)  # `npm --prefix /elsewhere install`
    if program == "npm" and inv.subcommand == "init":
        return _value_uses(inv, ("--prefix", "-w"), "write", tree=True)  # `npm init -w DIR` creates DIR
    if program == "npm":
        out = _value_uses(inv, ("--pack-destination",), "write", tree=True)  # `npm pack --pack-destination DIR`
        action = inv.positionals[inv.operands_from] if len(inv.positionals) > inv.operands_from else ""
        if inv.subcommand == "set" or inv.subcommand == "config" and action in ("set", "delete", "rm", "edit"):
            # the user's .npmrc (or the project's, or the global one): settings such as
            # `script-shell` or `prefix` change what later npm commands run and where
            location = inv.value("--location") or ("global" if "-g" in inv.options else "user")
            out.append(FileUse("write", {"project": ".npmrc", "global": "/etc/npmrc"}.get(location, "~/.npmrc"), ()))
        return out
    if program == "pip":
        # where pip installs, downloads or logs to, and the requirement files it reads
        return _value_uses(inv, ("-t", "--prefix", "--root", "-d", "-w", "--src", "--cache-dir"), "write", tree=True) \
            + _value_uses(inv, ("--log",), "write") + _value_uses(inv, ("-r", "-c"), "read")
    if program == "patch":
        # `patch [FILE [PATCHFILE]]`, `-o OUT`, `-i PATCHFILE`, `-r REJECTS` (a patch read from
        # the input names its own files: not seen, see the README's known limits)
        ops = _operands(inv, words)
        out = [FileUse("write", w, at) for w, at in ops[:1]] + [FileUse("read", w, at) for w, at in ops[1:2]] \
            + _value_uses(inv, ("-o", "-r"), "write") + _value_uses(inv, ("-i",), "read")
        if not ops and not inv.values.get("-o") and "--dry-run" not in inv.options:
            # the files the patch names are written: read from the patch (`-i FILE`, else
            # its input: a file or a here-document; see script_eval._extracted)
            source = inv.value("-i") or "-"
            strip = inv.value("-p")
            level = int(strip) if strip is not None and strip.isdigit() else None
            if strip is not None and level is None:
                source = ""  # a strip level only known at run time
            directory, directory_at = inv.value("-d") or ".", tuple(inv.value_at.get("-d", ()))
            out.append(FileUse("write", directory, directory_at, True,
                               extracts=(source, "patch", -1 if level is None else level, False)))
        return out + _value_uses(inv, ("-B",), "write")  # `-B PREFIX`: backups written at PREFIX+name
    if program == "history" and inv.options & {"-w", "-a", "-r", "-n"}:
        access = "write" if inv.options & {"-w", "-a"} else "read"
        return [FileUse(access, w, at) for w, at in _operands(inv, words)]
    if program in ("sqlite3", "duckdb"):
        return [FileUse("write", w, at) for w, at in _operands(inv, words)[:1]]
    if program == "crontab" and not (inv.options & {"-l"}):
        return [FileUse("write", "/var/spool/cron", ())]
    return _network(inv, words)
