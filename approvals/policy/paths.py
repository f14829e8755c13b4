"""Paths anchored to the workspace: where a path a request names really is.

Every path is resolved against the directory it is used in (the request's `cwd`, or the
directory a `cd` moved to), `~` and `$HOME` standing for each home the context knows (the
server user's and the agent's isolated one), then `..` and symlinks are resolved
(`realpath`). What a rule, a class or a grant sees is the result:

- `inside` the workspace or not (by the resolved path: a symlink out of the workspace is
  outside), and the workspace-relative path edit and read globs match;
- `protected`: the agent's own control files anywhere (`.claude/settings*.json`,
  `.claude/hooks`, `.codex/`, `.opencode/`, `.gemini/`, `.mcp.json`, `.git/hooks`,
  `.git/config`), shell start-up files and `.ssh`, `.aws`, `.config/gh`, `.netrc`,
  `.gnupg`, `.gitconfig`, `.git-credentials`, `.docker/config.json`, `.kube/config` in a
  home, `/etc`, and the context's protected directories (Gatehouse's `var`: database,
  secret key, agent homes, other runs' workspaces); the run's own workspace is carved out
  of a protected directory that contains it. Both the path as written and the resolved
  path are checked, so a symlink to or from a protected place is protected;
- `secret`: a name that looks like a secret (`.env*`, private keys, `.netrc`, ...).

A context with `filesystem=False` resolves by text alone (`..` collapsed, no symlink read,
a glob matching no file): the same answer on every machine, as policy examples need.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import glob as globlib
import os
import posixpath
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import NamedTuple, TypeVar

from .programs.git.index import tracked_paths


@dataclass(frozen=True)
class PathContext:
    """Where a run works: its workspace, what `~` stands for, extra protected trees."""

    workspace: str  # absolute path of the run's workspace
    homes: tuple[str, ...] = ()  # what `~`/$HOME stand for: the server user's home and the agent's isolated home
    protected_dirs: tuple[str, ...] = ()  # extra protected trees (Gatehouse's var directory)
    # False: paths are resolved by their text alone (`..` collapsed, no symlink read, a glob
    # expands to no file), so a decision does not depend on the machine: policy examples.
    filesystem: bool = True


def default_context(cwd: str | None, workspace: str | None = None) -> PathContext:
    """The context of a caller that passes none: the request's cwd as the workspace and the
    process's HOME."""
    home = os.environ.get("HOME") or posixpath.expanduser("~")
    return PathContext(workspace=workspace or cwd or os.getcwd(), homes=(home,) if home.startswith("/") else ())


# Inside any home. Matched against the path relative to the home, lower-cased.
HOME_PROTECTED = (
    ".ssh", ".aws", ".config/gh", ".netrc", ".gnupg", ".gitconfig", ".config/git", ".git-credentials",
    ".docker/config.json", ".kube/config", ".claude.json", ".npmrc", ".pypirc", ".pgpass",
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile",
    ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".login", ".logout", ".kshrc", ".mkshrc", ".inputrc",
    ".config/fish", ".xprofile", ".xinitrc", ".config/autostart", ".config/systemd", ".local/bin",
)
# (and the secrets a container is given: Docker's and Kubernetes' service-account token)
SYSTEM_PROTECTED = ("/etc", "/private/etc", "/run/secrets", "/var/run/secrets")
# Anywhere: a sequence of path components (lower-cased) that marks an agent control file.
_CONTROL_DIRS = (".codex", ".opencode", ".gemini")
_SECRET_NAMES = (".env", ".env.*", "*.env", ".envrc", "*.pem", "*.key", "id_rsa*", "id_dsa*", "id_ecdsa*",
                 "id_ed25519*", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", ".netrc", ".pgpass",
                 ".git-credentials", ".npmrc", ".pypirc", ".htpasswd", "credentials", "credentials.json")
# Names a glob is tested against: could `*.pem`, `.e*` or `set*` name one of these?
_PROBES = (".env", ".env.local", "prod.env", "server.pem", "server.key", "id_rsa", "id_ed25519", "cert.p12",
           ".netrc", ".npmrc", ".bashrc", ".profile", ".zshrc", "settings.json", "settings.local.json",
           ".mcp.json", "hooks", "config", ".git", ".claude", ".codex", ".ssh", "credentials", "secret_key",
           "gatehouse.sqlite3", "authorized_keys")
_HOME_LIKE = ("/root", "/var/root")
_HOME_PARENTS = ("/home", "/Users")


class LinkedTree(NamedTuple):
    """What a recursive read that follows links reaches (Resolver.linked_tree)."""

    inside: tuple[str, ...]  # workspace-relative paths
    outside: tuple[tuple[str, str], ...]  # (a link, workspace-relative if inside it; its real target)
    cut: bool  # the walk stopped at its limit


_O_PATH = getattr(os, "O_PATH", 0)
_PROC_FDS = os.path.isdir("/proc/self/fd")


def _real(path: str) -> str:
    """`realpath`: where a path really is, its links resolved. An existing path is asked of
    the kernel (open it without reading, read back the name of what was opened: three
    system calls where realpath makes one per component); any other is walked."""
    if _O_PATH and _PROC_FDS and path.startswith("/"):
        try:
            fd = os.open(path, _O_PATH)
        except (OSError, ValueError):
            pass
        else:
            try:
                found = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                found = ""
            finally:
                os.close(fd)
            if found.startswith("/") and not found.endswith(" (deleted)"):
                return found
    try:
        return posixpath.realpath(path)
    except (OSError, ValueError):
        return posixpath.normpath(path)


def _single_root(path: str) -> str:
    return "/" + path.lstrip("/") if path.startswith("//") else path


def _lexical(path: str) -> str:
    """A path resolved by its text alone (`..` collapsed, `//x` is `/x`)."""
    return _single_root(posixpath.normpath(path))


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


_GIT_POINTERS = frozenset({"config", "config.worktree", "commondir", "gitdir"})


def control_file(path: str) -> str | None:
    """The agent control file or git hook a path names, wherever it lies."""
    parts = path.lower().strip("/").split("/")
    for i, part in enumerate(parts):
        rest = parts[i + 1:]
        if part == ".claude" and rest:
            if rest[0] == "hooks" or (len(rest) == 1 and fnmatch.fnmatchcase(rest[0], "settings*.json")):
                return ".claude/" + ("hooks" if rest[0] == "hooks" else "settings*.json")
        if part in _CONTROL_DIRS:
            return part + "/"
        if part == ".git" and rest and (rest[0] in ("hooks", "config") or "hooks" in rest[:-1]
                                        or rest[-1] in _GIT_POINTERS):
            # its settings and hooks, and the files that point git at settings elsewhere: a
            # `commondir` (`../x` reads `x/config`), a worktree's `gitdir`, a submodule's config
            return ".git/" + (rest[0] if rest[0] in ("hooks", "config") else
                              "hooks" if "hooks" in rest[:-1] else "…/" + rest[-1])
    if parts and parts[-1] == ".mcp.json":
        return ".mcp.json"
    return None


_CONTROL_DIRS_EXACT = ((".claude",), (".claude", "hooks"), (".codex",), (".opencode",), (".gemini",), (".git",),
                       (".git", "hooks"))


_CONTROL_TREE_LAST = frozenset(exact[-1] for exact in _CONTROL_DIRS_EXACT)


def control_tree(path: str) -> str | None:
    """A control directory a path *is* (replacing, moving or linking it replaces what is in it)."""
    low = path.lower().rstrip("/")
    if low[low.rfind("/") + 1:] not in _CONTROL_TREE_LAST:
        return None  # (the common case: its last name ends none of them)
    parts = tuple(low.split("/"))
    for exact in _CONTROL_DIRS_EXACT:
        if parts[-len(exact):] == exact:
            return "/".join(exact) + "/"
    return None


_PROC_SECRET = re.compile(r"^/proc/[^/]+/(task/[^/]+/)?(environ|mem|auxv|cmdline)$")
# A process's own view of the file system: its working directory, its root, the files it
# holds open. `/proc/<server>/cwd/var/secret_key` or `/proc/<server>/fd/7` (its database)
# reach what the path's text does not name, and `/proc/self/cwd/…` is resolved by the
# reading program, not by Gatehouse.
_PROC_LINKS = re.compile(r"^/proc/[^/]+/(task/[^/]+/)?(cwd|root|exe|fd|fdinfo|map_files)(/|$)")


def secret_path(path: str) -> str | None:
    if path.startswith("/proc/"):
        if _PROC_SECRET.match(path):
            return "a process's environment or memory"
        if _PROC_LINKS.match(path):
            return "a process's working directory, root or open files"
    return secret_name(posixpath.basename(path))


# All the secret-looking names as one expression, a group per pattern (the first that
# matches names it): one match per path instead of a match per pattern.
_SECRET_NAME = re.compile("|".join(f"(?P<p{i}>{fnmatch.translate(p)})" for i, p in enumerate(_SECRET_NAMES)))


def secret_name(name: str) -> str | None:
    found = _SECRET_NAME.match(name.lower())
    if found is None:
        return None
    return _SECRET_NAMES[int(str(found.lastgroup)[1:])]


def _glob_could_name(pattern: str, name: str) -> bool:
    # bash: a leading `.` is never matched by `*`, `?` or `[...]`
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pattern)


@dataclass(frozen=True, slots=True)
class Location:
    """Where one path of a request is."""

    written: str  # as the request wrote it
    path: str | None  # absolute, `..` resolved (None: only known at run time)
    real: str | None  # symlinks resolved
    relative: str | None  # workspace-relative (of the resolved path) when inside
    inside: bool
    protected: str | None  # what protects it (`~/.ssh`, `/etc`, `.git/hooks`, "Gatehouse's var directory")
    secret: str | None  # the secret-looking name it matches (`.env*`, `*.pem`)
    unknown: bool = False  # depends on a value known only at run time

    @property
    def sensitive(self) -> str | None:
        """Why reading it needs a person (protected or secret-looking), or None."""
        return self.protected or self.secret

    def severity(self, access: str) -> int:
        if self.protected:
            return 4
        if access == "read":
            return 3 if self.secret else (2 if self.unknown else 0)
        if self.unknown or not self.inside:
            return 2
        return 1


_VAR_LABEL = "Gatehouse's var directory"


@functools.lru_cache(maxsize=64)
def _root_index(roots: tuple[tuple[str, str], ...]
                ) -> tuple[dict[str, tuple[tuple[int, str], ...]], dict[str, str]]:
    """The protected roots by path ((order, label) of each root there), and the label of the
    first root below each directory that holds one: a path is checked by walking up its own
    directories instead of against every root (homes give dozens), once per run's roots."""
    at: dict[str, list[tuple[int, str]]] = {}
    above: dict[str, str] = {}
    for index, (root, label) in enumerate(roots):
        at.setdefault(root, []).append((index, label))
        parent = root
        while posixpath.dirname(parent) != parent:
            parent = posixpath.dirname(parent)
            above.setdefault(parent, label)
    return {root: tuple(hits) for root, hits in at.items()}, above


T = TypeVar("T")
_MISSING = object()


# A context's own places (its workspace, homes and protected directories, where they really
# are, and the protected roots they give) are read once per context for this long: they
# are Gatehouse's directories, which the agent does not move.
_CONTEXT_SECONDS = 5.0
# (workspace, its real path, homes, their real paths, protected directories, protected roots
# (path, label), what protects a path (filled as paths are met), the roots' index)
_Places = tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[tuple[str, str], ...],
                dict[str, "str | None"], tuple[dict[str, tuple[tuple[int, str], ...]], dict[str, str]]]
_CONTEXTS: dict[PathContext, tuple[float, _Places]] = {}


def _context_places(ctx: PathContext) -> _Places:
    now = time.monotonic()
    hit = _CONTEXTS.get(ctx)
    if hit is not None and now - hit[0] < _CONTEXT_SECONDS:
        return hit[1]
    real = _real if ctx.filesystem else _lexical
    workspace = posixpath.normpath(ctx.workspace)
    homes = tuple(dict.fromkeys(posixpath.normpath(h) for h in ctx.homes if h and h.startswith("/")))
    real_homes = tuple(dict.fromkeys(h2 for h in homes for h2 in (h, real(h))))
    protected_dirs = tuple(dict.fromkeys(
        d2 for d in ctx.protected_dirs if d and d.startswith("/") for d2 in (posixpath.normpath(d), real(d))))
    roots = [(p, p) for p in SYSTEM_PROTECTED]
    for home in real_homes:  # lower-cased: on a case-insensitive file system `~/.SSH` is `~/.ssh`
        roots += [(f"{home}/{name}".lower(), f"~/{name}") for name in HOME_PROTECTED]
    roots += [(d.lower(), _VAR_LABEL) for d in protected_dirs]
    # (the roots' index with them: hashing the roots to find it costs more than finding it)
    places: _Places = (workspace, real(workspace), homes, real_homes, protected_dirs, tuple(roots), {},
                     _root_index(tuple(roots)))
    if len(_CONTEXTS) > 256:
        _CONTEXTS.clear()
    _CONTEXTS[ctx] = (now, places)
    return places


class Resolver:
    """Resolves the paths of one request against one PathContext (real paths cached)."""

    def __init__(self, ctx: PathContext) -> None:
        self.ctx = ctx
        self._real: Callable[[str], str] = _real if ctx.filesystem else _lexical
        (self.workspace, self.real_workspace, self.homes, self.real_homes, self.protected_dirs, self.roots,
         self._protected_of, (self._at_root, self._above_root)) = _context_places(ctx)
        # the trees walked for this request, by (walk, path, limit): the same tree read by
        # several commands of a script (or the suffixes of an unknown program's words) is
        # walked once
        self._walked: dict[tuple[str, str, int], object] = {}

    def _once(self, kind: str, real: str, limit: int, walk: Callable[[str, int], T]) -> T:
        key = (kind, real, limit)
        if key not in self._walked:
            self._walked[key] = walk(real, limit)
        return self._walked[key]  # type: ignore[return-value]

    # --- expanding what a word stands for -------------------------------------------------

    def expand(self, word: str, cwds: Sequence[str | None], *, dynamic: bool = False) -> list[str | None]:
        """Absolute candidates of a path word (None: known only at run time)."""
        text = word
        bases: list[str | None] = []
        if text == "~" or text.startswith("~/"):
            bases = list(self.homes) or [None]
            text = text[2:] if text.startswith("~/") else ""
        elif text.startswith("~") and not dynamic:
            return [None]  # another user's home
        for var in ("$HOME", "${HOME}"):
            if text == var or text.startswith(var + "/"):
                bases = list(self.homes) or [None]
                text = text[len(var) + 1:]
                break
        for var in ("$PWD", "${PWD}"):
            if text == var or text.startswith(var + "/"):
                bases = list(cwds)
                text = text[len(var) + 1:]
                break
        if dynamic and ("$" in text or "`" in text or "{" in text):
            return [None]
        if not bases:
            if text.startswith("/"):
                return [text]
            bases = list(cwds)
        # Joined, not normalised: `link/..` is the parent of the link's *target*, which only
        # realpath (walking the components) gets right.
        out: list[str | None] = []
        for base in bases:
            if base is None:
                out.append(None)
            else:
                out.append(posixpath.join(base, text) if text else base)
        return out

    # --- classifying a candidate -------------------------------------------------------------

    def protected(self, path: str) -> str | None:
        """What protects a path (a pure function of the path and the context's places:
        remembered for the context)."""
        known = self._protected_of.get(path, _MISSING)
        if known is not _MISSING:
            return known  # type: ignore[return-value]
        found = self._protected(path)
        if len(self._protected_of) > 8192:
            self._protected_of.clear()
        self._protected_of[path] = found
        return found

    def _protected(self, path: str) -> str | None:
        hit = control_file(path)
        if hit:
            return hit
        inside = _under(path, self.real_workspace) or _under(path, self.workspace)
        low = path.lower()
        found: tuple[int, str] | None = None
        while True:  # the path and each directory above it: the first root (in order) it is under
            for index, label in self._at_root.get(low, ()):
                if label == _VAR_LABEL and inside:
                    continue  # the run's own workspace inside var/workspaces
                if found is None or index < found[0]:
                    found = (index, label)
                break
            parent = posixpath.dirname(low)
            if parent == low:  # `/`, `` — and `//`, which dirname keeps as it is
                break
            low = parent
        if found is not None:
            return found[1]
        # someone else's home: /root/.ssh, /home/x/.bashrc
        for home in self._home_of(path):
            relative = path[len(home) + 1:].lower()
            for name in HOME_PROTECTED:
                if relative == name or relative.startswith(name + "/"):
                    return f"~/{name}"
        return None

    def _home_of(self, path: str) -> list[str]:
        out = [h for h in _HOME_LIKE if path.startswith(h + "/")]
        for parent in _HOME_PARENTS:
            if path.startswith(parent + "/"):
                name = path[len(parent) + 1:].split("/", 1)[0]
                out.append(f"{parent}/{name}")
        return out

    def contains_protected(self, path: str) -> str | None:
        """A protected root that lies inside `path` (reading or deleting `path` recursively
        reaches it), or the control directory `path` is."""
        label = self._above_root.get(path.lower())
        if label is not None:
            return label
        hit = control_tree(path)
        if hit:
            return hit
        if path in ("/", "/home", "/Users", "/root"):
            return "a home directory"
        return None

    def real_path(self, path: str) -> str:
        return self._real(path)

    def workspace_entries_under(self, real: str, limit: int) -> tuple[list[str], bool]:
        return self._once("tree", real, limit, self._workspace_entries_under)

    def _workspace_entries_under(self, real: str, limit: int) -> tuple[list[str], bool]:
        """The workspace-relative paths of the files and directories a recursive read of
        `real` reaches inside the workspace (all of it when `real` contains the workspace),
        without following links; and whether the walk stopped at `limit` entries. Nothing
        when `real` is outside the workspace or the context reads no file system."""
        if not self.ctx.filesystem:
            return [], False
        ws = self.real_workspace
        if _under(real, ws):
            top = real
        elif _under(ws, real):
            top = ws  # `grep -r KEY ..`: the workspace is part of the tree
        else:
            return [], False
        found: list[str] = []
        prefix = len(ws.rstrip("/")) + 1
        for directory, dirs, files in os.walk(top):
            for name in (*dirs, *files):
                found.append(posixpath.join(directory, name)[prefix:])
                if len(found) >= limit:
                    return found, True
        return found, False

    def tracked_entries(self, real: str, limit: int) -> tuple[list[str], bool] | None:
        return self._once("tracked", real, limit, self._tracked_entries)

    def _tracked_entries(self, real: str, limit: int) -> tuple[list[str], bool] | None:
        """The workspace-relative paths git tracks in the repository a git command run in
        `real` works in (its index: `programs/git/index.py`), and whether there were more than
        `limit`. The repository is found as git finds it, from `real` up, but not above
        the workspace (agents run with GIT_CEILING_DIRECTORIES there); none found: nothing
        is tracked. None when the index cannot be read or the `.git` is a file naming a
        repository elsewhere: the caller walks the tree instead."""
        if not self.ctx.filesystem:
            return [], False
        ws = self.real_workspace
        directory = real
        while True:
            git = posixpath.join(directory, ".git")
            if os.path.isdir(git):
                break
            if os.path.lexists(git):
                return None
            if directory == ws or not _under(directory, ws) or posixpath.dirname(directory) == directory:
                return [], False
            directory = posixpath.dirname(directory)
        paths = tracked_paths(posixpath.join(git, "index"))
        if paths is None:
            return None
        top = directory[len(ws.rstrip("/")) + 1:] if directory != ws else ""
        found = [posixpath.join(top, path) if top else path for path in paths[:limit]]
        return found, len(paths) > limit

    def linked_tree(self, real: str, limit: int) -> LinkedTree:
        return self._once("linked", real, limit, self._linked_tree)

    def _linked_tree(self, real: str, limit: int) -> LinkedTree:
        """What a recursive read of `real` that follows links (`grep -R`, `rg -L`, `zip -r`)
        reaches: the workspace-relative paths inside the workspace, including files reached
        through a link, and the links whose target lies outside both the workspace and
        `real`, each with that target (the read reaches everything under it, and the walk
        goes on there for links further out). Each directory is walked once however many
        links lead to it; the walk stops at `limit` entries (`cut`). Nothing without a
        file system."""
        if not self.ctx.filesystem:
            return LinkedTree((), (), False)
        ws = self.real_workspace
        prefix = len(ws.rstrip("/")) + 1
        inside: list[str] = []
        outside: list[tuple[str, str]] = []
        seen = {real}
        pending = [real]
        count = 0
        while pending:
            directory = pending.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                count += 1
                if count > limit:
                    return LinkedTree(tuple(inside), tuple(outside), True)
                path = entry.path
                if _under(path, ws):
                    inside.append(path[prefix:])
                if entry.is_symlink():
                    path = self._real(path)
                    if not os.path.exists(path):
                        continue  # a dangling link reads nothing
                    if _under(path, ws) and path != ws:
                        inside.append(path[prefix:])  # `src/x` -> `.env` reads `.env`
                    elif not (_under(path, ws) or _under(path, real)):
                        outside.append((entry.path[prefix:] if _under(entry.path, ws) else entry.path, path))
                    is_dir = os.path.isdir(path)
                else:
                    is_dir = entry.is_dir(follow_symlinks=False)  # from the directory listing: no stat
                if is_dir and path not in seen:
                    seen.add(path)
                    pending.append(path)
        return LinkedTree(tuple(inside), tuple(outside), False)

    def inside(self, real: str) -> bool:
        return _under(real, self.real_workspace)

    def locate(self, word: str, cwds: Sequence[str | None], *, dynamic: bool = False, glob: bool = False, access: str = "write",
               tree: bool = False, follow: bool = True) -> Location:
        """The Location of a path word: of all it may stand for, the most severe for `access`.

        `tree`: the command reads or changes everything under the path (`rm -r`, `grep -r`,
        `mv`, a link to it). `follow`: the command acts on a symlink's target (not `rm`,
        `mv` or `ln`'s link name, unless the path ends in `/`).
        """
        best: Location | None = None
        follow = follow or word.endswith("/")
        # the latest directory a `cd` moved to comes first: it names the path on a tie
        for candidate in reversed(self.expand(word, cwds, dynamic=dynamic)):
            for loc in self._candidates(word, candidate, glob, tree, follow):
                if best is None or loc.severity(access) > best.severity(access):
                    best = loc
        assert best is not None
        if access != "read" and best.protected is None and any(
                p and posixpath.basename(p.rstrip("/")).lower() == ".git" for p in (word, best.path, best.real)):
            # A `.git` written as a file points git at a repository elsewhere (`gitdir: ../x`),
            # whose settings, unlike `.git/config`, the agent could write: `git status` there
            # would run its `core.fsmonitor`, `diff.external`...
            best = dataclasses.replace(best, protected=".git")
        return best

    def _candidates(self, word: str, path: str | None, glob: bool, tree: bool, follow: bool) -> list[Location]:
        if path is None:
            return [self._unknown(word)]
        if glob:
            return self._glob(word, path, tree, follow)
        return [self._one(word, path, tree, follow)]

    def _unknown(self, word: str) -> Location:
        # Known only at run time: what a relative tail would mean in a home still counts.
        protected = control_file(word)
        tail = word.split("/", 1)[1] if "/" in word else ""
        for name in HOME_PROTECTED:
            if tail and (tail.lower() == name or tail.lower().startswith(name + "/")):
                protected = protected or f"~/{name}"
        return Location(word, None, None, None, False, protected, secret_name(posixpath.basename(word)), True)

    def _one(self, word: str, raw: str, tree: bool, follow: bool = True) -> Location:
        # (`//x` is `/x` on Linux; normpath keeps a leading `//`, which POSIX leaves open)
        path = _single_root(posixpath.normpath(raw))
        head, name = posixpath.split(raw.rstrip("/") or "/")
        if follow or path == "/" or name in ("", ".", ".."):
            real = self._real(raw)
        else:
            real = posixpath.join(self._real(head), name)
        same = real == path  # (no link on the way: each check below once, not twice)
        protected = self.protected(real) or (None if same else self.protected(path))
        if tree and not protected:
            protected = self.contains_protected(real) or (None if same else self.contains_protected(path))
        inside = self.inside(real)
        relative = None
        if inside:
            relative = real[len(self.real_workspace.rstrip("/")) + 1:] if real != self.real_workspace else "."
        secret = secret_path(real) or (None if same else secret_path(path))
        return Location(word, path, real, relative, inside, protected, secret)

    def _glob(self, word: str, path: str, tree: bool, follow: bool) -> list[Location]:
        directory, pattern = posixpath.split(path)
        if any(ch in directory for ch in "*?["):
            return [self._unknown(word)]  # a glob in a directory: it may reach anywhere below
        out = []
        here = self._one(word, directory or "/", False)
        names = [p for p in _PROBES if _glob_could_name(pattern, p)]
        protected = here.protected
        secret = None
        for name in names:
            probe = self._one(word, posixpath.join(directory, name), tree, follow)
            protected = protected or probe.protected
            secret = secret or probe.secret
        relative = f"{here.relative}/{pattern}" if here.relative not in (None, ".") else (
            pattern if here.relative == "." else None)
        out.append(Location(word, path, posixpath.join(here.real or directory, pattern), relative, here.inside,
                            protected, secret))
        if self.ctx.filesystem:
            for match in islice(globlib.iglob(path), 32):
                out.append(self._one(word, match, tree, follow))
        return out
