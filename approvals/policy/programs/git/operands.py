"""Which words of a git command name files it reads or writes.

Reads, so that a `reads` rule on a file holds for every git route to it:

- an object name naming a file (`REV:PATH`, `:PATH`, `:N:PATH`: `git show HEAD:.env`,
  `git cat-file -p :.env`, `git rev-parse HEAD:.env`), in any subcommand but those whose
  operands are refspecs or URLs (`git push origin a:b`, `git clone git@host:x`). PATH is
  literal (git expands no glob in it: `HEAD:*.env` names a file called `*.env`); git reads
  it from the repository top unless it starts with `./` or `../`, and not knowing the top
  we judge it from the workspace root (the top when the workspace is the repository) and
  from the working directory (and `git -C DIR`); so are pathspecs with the `top` magic
  (`:/x`, `:(top)x`), read or written;
- pathspecs: the words after `--`, the operands of `log`/`show`/`diff` that are not plainly
  revisions (`git log -p .env`), of `blame`, of `grep` after its pattern, of `archive`
  after the tree-ish, of `add`, `commit`, `stash push`, `mv`, `hash-object`,
  `checkout-index`, `update-index`, `merge-file`. A command that prints what it finds
  (`log`, `diff`, `grep`, `archive`…) reads a directory's whole tree, and a pattern
  (`'*.env'`, `:(icase).ENV`, `:(glob)**/x`) the tree of its literal directory; `add`,
  `commit` and `stash` skip git-ignored files, so their pathspecs are judged by the path
  they name, unless `add -f` or `stash --all` takes ignored files too;
- `git grep` with neither pathspec nor tree reads the working directory's tree (`rg KEY`);
- files options name (`-F`/`--file` messages, `--pathspec-from-file`, `log -L`, `grep -f`,
  `archive --add-file`, `config -f`/`--blob`); names read from standard input
  (`cat-file --batch`, `hash-object --stdin-paths`, `--pathspec-from-file=-`) are paths
  only known at run time.

- a command that prints tracked files' contents without naming a file (`git diff`, `git
  show`, `git log -p`, `git format-patch`, `git archive HEAD`, `git stash show -p`…) reads
  every path the repository's index holds (`git_index.py`): a tracked `.env` is read, an
  ignored one is not. After a git command of the same script that changes something
  (`git add -A && git diff --cached`) the index on disk is stale: the whole tree is read.

Not modelled: a file the history holds but the index no longer does (`git log -p` of a
`.env` committed once and removed since), and an object named by its hash (`git cat-file
-p SHA`). `git add -A`/`add .`/`commit -a`/`stash -u` are not tree reads: git skips ignored
files, the policy does not read .gitignore, and a tree read would refuse them in every
workspace holding an ignored `.env` (what they stage is read by the command that prints it).

Writes: `git config --global`/`--system`/`-f` files, the directories `clone`, `init` and
`worktree add` create, `-o`/`--output` files, and the repository `git -C DIR` changes.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import NamedTuple

from ...classnames import READ_ONLY
from ...fileuse import FileUse
from ..invocation import WILD, Invocation
from ..kit import Words
from .classify import classify_git

_Where = tuple[str, tuple[int, ...]]  # (the directory `git -C` names, as written; its words' indices)


class _Operand(NamedTuple):
    word: str  # as written (a run-time word keeps its text: `HEAD:$f`)
    at: int  # its index in the command's words
    after_dashdash: bool  # after the `--` that ends the options: a pathspec
    wild: bool  # only known at run time (a variable, a glob)


# Subcommands whose operands are refspecs (`main:main`) or URLs (`git@host:repo`), never
# object names; config names its files by options (below).
_NO_OBJECTS = frozenset({"push", "fetch", "pull", "remote", "clone", "ls-remote", "submodule", "subtree",
                         "request-pull", "send-email", "fetch-pack", "send-pack", "config", "credential", "svn",
                         "p4", "archimport", "cvsimport", "quiltimport", "daemon", "help"})
# Subcommands that print what they read: a directory pathspec means its whole tree.
_LOG_LIKE = frozenset({"log", "show", "diff", "whatchanged", "format-patch", "diff-tree", "diff-index",
                       "diff-files", "difftool"})
_TREE_OBJECTS = frozenset({"grep", "archive", "diff", "diff-tree", "difftool"})  # `REV:DIR`: the tree's files
_FILE_OPERANDS = frozenset({"hash-object", "checkout-index", "update-index", "merge-file"})
_OBJECT_PRINTERS = frozenset({"cat-file", "unpack-file"})  # a run-time operand may be `REV:PATH`
_STDIN_NAMES = {"cat-file": ("--batch", "--batch-check", "--batch-command", "--batch-all-objects"),
                "hash-object": ("--stdin-paths",), "checkout-index": ("--stdin",), "update-index": ("--stdin",)}
_IGNORED_TOO = {"add": "-f", "stash": "-a"}  # `add -Af`, `stash --all` take git-ignored files too
_FILE_OPTIONS = ("-F", "-t", "-f", "--file", "--add-file", "--contents", "--pathspec-from-file")  # values that are files read
_OBJECT_OPTIONS = ("-s", "--blob")  # `restore --source=REV:DIR`, `config --blob=REV:PATH`
# A name read from standard input: a path only known at run time (a word with `$` and no
# index in the command is one, see script_eval).
_STDIN_READ = FileUse("read", "$STDIN", ())
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
# Words git only takes as revisions, never as paths (both would be an ambiguity git refuses):
# HEAD and its kin with `~2`, `^`, `@{1}` suffixes, abbreviated object names, ranges
# (`main..feature`, not `../x` or `src/..`).
_REVISION = re.compile(r"(?:@|[A-Z_]*HEAD)(?:[~^][0-9]*|@?\{[^}]*\})*|@\{[^}]*\}|[0-9a-f]{7,40}")
_RANGE = re.compile(r"(?:^|[^/.])\.\.\.?(?:[^/.]|$)")
_MAGIC_SHORT = {"/": "top", "!": "exclude", "^": "exclude"}


# Printing the contents of tracked files: `git diff`, `git show` unless told to print only
# names or numbers; `git log -p` and the other patch options; patches and archives.
_QUIET = frozenset({"--stat", "--numstat", "--shortstat", "--name-only", "--name-status", "--summary", "--dirstat",
                    "-s", "--no-patch", "--quiet", "--raw", "--check", "--compact-summary"})
_PATCH = frozenset({"-p", "-u", "--patch", "--cc", "-c", "--full-diff", "--remerge-diff", "--patch-with-stat",
                    "--patch-with-raw", "--color-words", "-m", "--binary", "--word-diff", "-U", "--unified",
                    "-W", "--function-context"})


def prints_tracked(inv: Invocation) -> bool:
    """Whether a git command prints the contents of the files it tracks, unless a pathspec
    or an object name narrows it (`git diff`, `git show HEAD~2`, `git log -p`)."""
    sub = inv.subcommand
    patch = bool(inv.options & _PATCH) or any(w.startswith(("-U", "--unified", "--word-diff", "--diff-merges"))
                                              for w in inv.option_words)
    if sub in ("diff", "show", "difftool"):
        return patch or not inv.options & _QUIET
    if sub in ("log", "whatchanged", "diff-tree", "diff-index", "diff-files"):
        return patch
    if sub == "stash":
        return bool(inv.operands[:1] == ("show",) and patch)
    return sub in ("format-patch", "archive", "fast-export", "bundle")


def may_name_files_git(inv: Invocation) -> bool:
    """Whether a git command may name files it reads or writes (`git status`, `git log`,
    `git push origin a:b` name none, so their path checks are skipped; `git diff` prints
    what the repository tracks)."""
    sub = inv.subcommand
    return bool(inv.values) or sub in ("config", "clone", "init", "worktree", "apply", "am") \
        or prints_tracked(inv) \
        or "--no-index" in inv.options \
        or bool(inv.operands) and sub not in _NO_OBJECTS or sub in _STDIN_NAMES and bool(inv.options) \
        or sub in _IGNORED_TOO and _IGNORED_TOO[sub] in inv.options


_GIT_WHERE = ("-C", "--git-dir", "--work-tree")


def git_file_uses(inv: Invocation, words: Words) -> list[FileUse]:
    """The files a git command reads or writes."""
    if not may_name_files_git(inv):
        return []
    out: list[FileUse] = []
    if any(o in inv.values for o in _GIT_WHERE) and classify_git(inv) not in (READ_ONLY, None):
        # `git -C /elsewhere commit` changes that repository, not the workspace's
        out = [FileUse("write", v, (at,), True) for v, at in _values(inv, _GIT_WHERE)]
    return out + _writes(inv, words) + _reads(inv, words)


def _values(inv: Invocation, options: Iterable[str]) -> list[tuple[str, int]]:
    """(value, index) of each non-empty value given to `options`."""
    given = inv.values
    out = []
    for option in options:
        if option in given:
            out += [(v, at) for v, at in zip(given[option], inv.value_at.get(option, ()), strict=False) if v]
    return out


def _operands(inv: Invocation, words: Words) -> list[_Operand]:
    ends = _dashdash_at(inv, words)
    out = []
    for k in range(inv.operands_from, len(inv.positionals)):
        at = inv.positional_at[k] if k < len(inv.positional_at) else -1
        wild = inv.positionals[k] == WILD
        word = words[at] if wild and 0 <= at < len(words) else inv.positionals[k]
        out.append(_Operand(word, at, at > ends, wild))
    return out


def _dashdash_at(inv: Invocation, words: Words) -> int:
    """The index of the `--` that ended the options (past the end when none did)."""
    if inv.end_of_options:
        taken = set(inv.positional_at) | {i for ats in inv.value_at.values() for i in ats}
        for i, word in enumerate(words):
            if word == "--" and i not in taken:
                return i
    return len(words)


def _writes(inv: Invocation, words: Words) -> list[FileUse]:
    sub = inv.subcommand
    if sub == "config":
        setting = not (inv.options & {"--get", "--get-all", "--get-regexp", "-l", "--list", "--get-urlmatch"}) \
            and len(inv.operands) >= 2 or inv.options & {"--unset", "--unset-all", "--add", "--replace-all", "-e"}
        if setting and "--global" in inv.options:
            return [FileUse("write", "~/.gitconfig", ())]
        if setting and "--system" in inv.options:
            return [FileUse("write", "/etc/gitconfig", ())]
        if setting and "-f" in inv.options:
            return [FileUse("write", v, (at,)) for v, at in _values(inv, ("-f",))]
        return []
    if sub in ("archive", "format-patch", "log", "show", "diff"):
        return [FileUse("write", v, (at,)) for v, at in _values(inv, ("-o", "--output", "--output-directory"))]
    ops = _operands(inv, words)
    if sub in ("apply", "am"):
        return _patches(inv, ops)
    if sub in _WORKTREE_WRITES:
        return _worktree_writes(inv, ops)
    if sub == "clone" and len(ops) >= 2:
        return [FileUse("write", ops[1].word, (ops[1].at,), True)]
    if sub in ("init", "worktree"):
        made = ops[1:2] if sub == "worktree" else ops[:1]  # `worktree add DIR`, `init DIR`
        return [FileUse("write", op.word, (op.at,), True) for op in made]
    return []


def _patches(inv: Invocation, ops: list[_Operand]) -> list[FileUse]:
    """`git apply` and `git am` write the files their patches name (read from each patch
    file, or the input: script_eval._extracted); git refuses paths in `.git`, not the
    agent's control files (`.claude/settings.json`). `--cached` writes them to the index
    only, from where the next commit and checkout write them: decided the same."""
    if inv.subcommand == "apply" and (inv.options & {"--check"} or (
            inv.options & {"--stat", "--numstat", "--summary"} and "--apply" not in inv.options)):
        return []  # nothing is written
    if inv.subcommand == "am" and inv.options & {"--abort", "--skip", "--quit", "--show-current-patch"}:
        return []
    strip = inv.value("-p")
    known = strip is None or strip.isdigit()
    level = 1 if strip is None else int(strip) if known else 0  # git's default: -p1
    root = inv.value("--directory") or "."
    sources = [op.word if not op.wild else "" for op in ops] or ["-"]
    return [FileUse("write", root, (), True, extracts=(source if known else "", "patch", level, False))
            for source in sources]


# Subcommands that write the files their pathspecs name (from the index, a commit, or by
# removing them): `git checkout -- .claude/settings.json` is a write of that file.
_WORKTREE_WRITES = frozenset({"checkout", "restore", "rm", "mv", "checkout-index"})


def _worktree_writes(inv: Invocation, ops: list[_Operand]) -> list[FileUse]:
    """The working-tree files `checkout`/`restore`/`rm`/`checkout-index` write (every
    operand that is not plainly a revision: a branch name read as a file changes nothing)
    and `git mv`'s destination (and the sources it moves away), through `git -C DIR`."""
    sub = inv.subcommand
    where = _where(inv)
    if sub == "mv":
        if len(ops) < 2:
            return []
        dest = ops[-1]
        moved = [_write(where, posixpath.join(dest.word, posixpath.basename(op.word.rstrip("/"))), (op.at, dest.at))
                 for op in ops[:-1]]
        gone = [_write(where, op.word, (op.at,), follow=False) for op in ops[:-1]]
        return [_write(where, dest.word, (dest.at,)), *moved, *gone]
    if sub == "rm" and "--cached" in inv.options or sub == "checkout-index" and "--stdout" in inv.options:
        return []  # only the index changes, or the file is printed
    if sub == "restore" and "-S" in inv.options and "-W" not in inv.options:
        return []  # `restore --staged`: only the index
    named = [op for op in ops if op.after_dashdash or not _object_or_revision(op.word)]
    out = []
    for op in named:
        spec = _pathspec(op.word, False)
        if spec is not None:
            out.append(_write(where, _literal_part(spec[0]), (op.at,), follow=sub != "rm"))
            if spec[2]:  # `:(top)x`: the top's x, wherever git runs
                out.append(FileUse("write", _literal_part(spec[0]), (op.at,), True, sub != "rm", top=True))
    return out


def _literal_part(path: str) -> str:
    """A pathspec up to its first pattern (`.claude/setting?.json` writes under `.claude`);
    case is kept, since protected names are matched without it (`:(icase)`)."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if any(char in part for char in "*?[\\"):
            return "/".join(parts[:i]) or "."
    return path


def _write(where: _Where, path: str, at: tuple[int, ...], follow: bool = True) -> FileUse:
    word, word_at = _in(where, path, at)
    return FileUse("write", word, word_at, True, follow)


def _reads(inv: Invocation, words: Words) -> list[FileUse]:
    where = _where(inv)
    return _other_repository(inv, where) + _named_reads(inv, words, where)


def _other_repository(inv: Invocation, where: _Where) -> list[FileUse]:
    """What a git command reads of a repository or work tree named by `--git-dir` or
    `--work-tree`: the whole tree (`git --work-tree=/ diff` prints files at the index's
    paths under `/`; `git --git-dir=../other/.git log -p` prints what another repository
    holds, the tree of the directory whose `.git` it is)."""
    out = []
    for value, at in _values(inv, ("--git-dir",)):
        path = value.rstrip("/") or "/"
        if posixpath.basename(path) == ".git":
            path = posixpath.dirname(path) or "."
        out.append(_read(where, path, at, tree=True))
    return out + [_read(where, value, at, tree=True) for value, at in _values(inv, ("--work-tree",))]


def _named_reads(inv: Invocation, words: Words, where: _Where) -> list[FileUse]:
    sub = inv.subcommand
    if sub == "config":
        return [_read(where, v, at) for v, at in _values(inv, ("-f",))] + _object_reads(inv, [], where)
    if sub is None or sub in _NO_OBJECTS:
        return []
    ops = _operands(inv, words)
    if sub == "grep" and not _grep_pattern_given(inv):
        ops = ops[1:]  # the first operand is the pattern
    out = _object_reads(inv, ops, where) + _pathspec_reads(inv, ops, where) + _option_reads(inv, words, where)
    if any(o in inv.options for o in _STDIN_NAMES.get(sub, ())):
        out.append(_STDIN_READ)
    if not out and prints_tracked(inv):
        # no file named: it prints any file the repository tracks (a tracked `.env` in
        # `git diff`); another repository (`--git-dir`, `--work-tree`) is walked whole
        elsewhere = any(o in inv.values for o in ("--git-dir", "--work-tree"))
        base, at = where
        out.append(FileUse("read", base or ".", at, True, tracked=not elsewhere))
    return out


def _grep_pattern_given(inv: Invocation) -> bool:
    """Whether `git grep` took its pattern from an option (`-e`, `-f`, `--regexp`, `--file`:
    the long forms are outside the option catalogue, `--reg` abbreviates `--regexp`)."""
    return bool(inv.options & {"-e", "-f"}) or any(o.startswith(("--reg", "--file")) for o in inv.options)


def _where(inv: Invocation) -> _Where:
    """The directory `git -C DIR` runs in, relative to the working directory ("" when none),
    and the indices of its words (a `-C` after the subcommand is `commit -C COMMIT`)."""
    sub_at = inv.positional_at[0] if inv.positional_at else 1 << 30
    base = ""
    at: tuple[int, ...] = ()
    for value, i in _values(inv, ("-C",)):
        if i < sub_at:
            base, at = posixpath.join(base, value), at + (i,)
    return base, at


def _read(where: _Where, path: str, at: int | None = None, tree: bool = False) -> FileUse:
    word, word_at = _in(where, path, (at,) if at is not None else ())
    return FileUse("read", word, word_at, tree)


def _in(where: _Where, path: str, at: tuple[int, ...]) -> tuple[str, tuple[int, ...]]:
    """A path as `git -C DIR` reads it, and the indices of the words it comes from."""
    base, base_at = where
    return (posixpath.join(base, path) if base and not path.startswith(("/", "~")) else path), base_at + at


def object_path(word: str) -> str | None:
    """The file an object name names: PATH of `REV:PATH`, `:PATH`, `:N:PATH` ("" for the
    top tree), or None (no path, or a URL). `:/TEXT` names a commit by its message, but as
    a pathspec the file TEXT at the top: read as that file."""
    if ":" not in word or _URL.match(word):
        return None
    if word.startswith(":"):
        if word[1:2] in ("0", "1", "2", "3") and word[2:3] == ":":
            return word[3:]  # a stage of the index
        return word[2:] if word[1:2] == "/" else word[1:]
    depth = 0
    for i, char in enumerate(word):
        if char == "{":
            depth += 1  # `HEAD@{2024-01-01 10:00}:x`, `HEAD^{/fix: x}:y`
        elif char == "}":
            depth = max(depth - 1, 0)
        elif char == ":" and depth == 0:
            return word[i + 1:]
    return None


def _object_reads(inv: Invocation, ops: list[_Operand], where: _Where) -> list[FileUse]:
    tree = inv.subcommand in _TREE_OBJECTS
    out = []
    for op in ops:
        path = object_path(op.word)
        if path is not None:
            out += [_read(where, path or ".", op.at, tree), *_from_top(path, op.at, tree)]
        elif op.wild and inv.subcommand in _OBJECT_PRINTERS:
            out.append(_read(where, op.word, op.at))  # `git cat-file -p "$x"` may name `HEAD:.env`
    for value, at in _values(inv, _OBJECT_OPTIONS):
        path = object_path(value)
        if path is not None:
            out += [_read(where, path or ".", at), *_from_top(path, at, False)]
    return out


def _from_top(path: str, at: int, tree: bool) -> list[FileUse]:
    """git reads `REV:PATH` from the repository's top, not the working directory: the same
    path from the workspace root too, which is the top when the workspace is the
    repository (a `./` or `../` path is the working directory's)."""
    if path.startswith(("./", "../")) or path in (".", ".."):
        return []
    return [FileUse("read", path or ".", (at,), tree, top=True)]


def _pathspec(word: str, icase: bool) -> tuple[str, str, bool] | None:
    """(the path a pathspec names, the directory a pattern is confined to: the path itself
    when it is no pattern, whether it is from the repository's top: `:/x`, `:(top)x`), or
    None for an exclusion (`:!x`, `:(exclude)x`)."""
    magic: set[str] = set()
    if word.startswith(":("):
        names, closed, rest = word[2:].partition(")")
        if closed:
            magic = {name.split(":", 1)[0].strip() for name in names.split(",")}
            word = rest
    elif word.startswith(":"):
        i = 1
        while i < len(word) and word[i] in _MAGIC_SHORT:
            magic.add(_MAGIC_SHORT[word[i]])
            i += 1
        word = word[i + 1:] if word[i:i + 1] == ":" else word[i:]
    if "exclude" in magic:
        return None
    path, top = word or ".", "top" in magic
    if "literal" in magic:
        return path, path, top
    if icase or magic & {"icase", "attr"}:
        return path, ".", top  # any name below may match
    parts = path.split("/")
    for i, part in enumerate(parts):
        if any(char in part for char in "*?[\\"):  # git's glob characters (`\.env` matches `.env`)
            return path, "/".join(parts[:i]) or ".", top
    return path, path, top


def _specs(ops: list[_Operand], where: _Where, tree: bool, icase: bool) -> list[FileUse]:
    """Reads of pathspecs: with `tree`, a directory's tree and a pattern's literal directory's
    tree; without, the path named (git skips ignored files)."""
    out = []
    for op in ops:
        spec = _pathspec(op.word, icase)
        if spec is not None:
            path = spec[1] if tree else spec[0]
            out.append(_read(where, path, op.at, tree))
            if spec[2]:  # `:/x`, `:(top)x`: the top's x, wherever git runs (as `HEAD:x`)
                out.append(FileUse("read", path, (op.at,), tree, top=True))
    return out


def _pathspec_reads(inv: Invocation, ops: list[_Operand], where: _Where) -> list[FileUse]:
    sub = inv.subcommand
    icase = "--icase-pathspecs" in inv.options
    named = [op for op in ops if op.after_dashdash or not _object_or_revision(op.word)]
    if sub == "diff" and "--no-index" in inv.options:
        return [_read(where, op.word, op.at, True) for op in ops]  # two files, or two trees compared
    if sub in _LOG_LIKE:
        return _specs(named, where, True, icase)
    if sub == "grep":
        return _grep_reads(ops, where, icase)
    if sub == "archive":
        return _specs(ops[1:], where, True, icase)
    if sub in ("blame", "annotate"):
        return [_read(where, op.word, op.at) for op in named]  # `git blame [REV] FILE`
    if sub in _FILE_OPERANDS:
        return [_read(where, op.word, op.at) for op in ops]  # files, never revisions
    if sub == "add":
        return _add_reads(inv, ops, where, icase)
    if sub == "commit":
        return _specs(ops, where, False, icase)
    if sub == "stash":
        return _stash_reads(inv, ops, where, icase)
    if sub == "mv":
        return [_read(where, op.word, op.at, True) for op in ops[:-1]]  # like `mv`: its sources
    return []


def _grep_reads(ops: list[_Operand], where: _Where, icase: bool) -> list[FileUse]:
    """The trees `git grep` searches (its pattern left out): its pathspecs', else the working
    directory's (`git grep KEY`, or pathspecs that only exclude); a `REV:DIR` operand is read
    by `_object_reads`, a bare revision searches history (not modelled)."""
    scope = [op for op in ops if op.after_dashdash or object_path(op.word) is None or op.word[:1] == ":"]
    out = _specs(scope, where, True, icase)
    in_a_tree = any(object_path(op.word) is not None and op.word[:1] != ":" for op in ops)
    return out if out or in_a_tree else [_read(where, ".", None, True)]


def _object_or_revision(word: str) -> bool:
    """A word before `--` git reads as an object name or revision, not a path."""
    if ":" in word and not word.startswith(":"):
        return True
    return word not in ("..", "...") and bool(_REVISION.fullmatch(word) or _RANGE.search(word))


def _add_reads(inv: Invocation, ops: list[_Operand], where: _Where, icase: bool) -> list[FileUse]:
    force = "-f" in inv.options  # adds ignored files too: what it names is read as a tree
    out = _specs(ops, where, force, icase)
    everything = "-A" in inv.options or bool(ops)  # `add -Af`, or pathspecs that only exclude
    return out or ([_read(where, ".", None, True)] if force and everything else [])


def _stash_reads(inv: Invocation, ops: list[_Operand], where: _Where, icase: bool) -> list[FileUse]:
    action = ops[0].word if ops and not ops[0].after_dashdash else None
    if action not in (None, "push", "save"):
        return []  # `stash show|apply|pop|drop stash@{0}`
    every = "-a" in inv.options  # `--all` stashes ignored files too
    paths = ops[1:] if action == "push" else ops if action is None else []
    out = _specs(paths, where, every, icase)
    return out or ([_read(where, ".", None, True)] if every else [])


def _option_reads(inv: Invocation, words: Words, where: _Where) -> list[FileUse]:
    out = []
    for value, at in _values(inv, _FILE_OPTIONS):
        out.append(_STDIN_READ if value == "-" else _read(where, value, at))
    for value, at in _values(inv, ("-L",)):  # `log -L 1,5:FILE`, `-L :FUNC:FILE`, `-L /a:b/,+2:FILE`
        for path in {value.rpartition(":")[2], value.lstrip(":").partition(":")[2]}:
            if path:
                out.append(_read(where, path, at))
    if inv.subcommand == "notes":  # not in the option catalogue: `git notes add -F FILE`
        for i, word in enumerate(words):
            if word.startswith("--file="):
                out.append(_read(where, word[7:], i))
            elif word in ("-F", "--file") and i + 1 < len(words):
                out.append(_read(where, words[i + 1], i + 1))
    return out
