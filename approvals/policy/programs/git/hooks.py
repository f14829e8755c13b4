"""The git hooks a repository would run: read from the file system, never run.

An installed hook (`.git/hooks/pre-commit`, or a directory named by `core.hooksPath`, as
husky sets) runs on `git commit`, `merge`, `checkout`…; what it runs is often the
workspace's own files (`npm test`, `.husky/pre-commit`, `.pre-commit-config.yaml`,
lint-staged's settings), which the agent may edit without asking. The hook itself is a
protected path; what it calls is not, so a git command that runs hooks is asked about
when the repository has any (`script_eval`).
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import stat
from collections.abc import Callable
from typing import TypeVar, cast

from ..invocation import Invocation
from ..kit import Walk

T = TypeVar("T")

_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_LEVELS = 64  # directories walked up from the working directory, at most


def git_hooks(start: str, ceilings: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The hooks of the repository that holds `start` (its names; `core.hooksPath` when
    that is set), or () outside a repository or without hooks. The search does not go up
    into a directory under `ceilings` (Gatehouse's var directory: agents run git with
    GIT_CEILING_DIRECTORIES there, see drivers/agent_env.py)."""
    git_dir = _git_dir(start, ceilings)
    return () if git_dir is None else hooks_of(git_dir)


# What was read of a repository's files, kept while their stat says they are the same
# (modification time, size, inode): a git command is decided without reading its config
# and listing its hooks each time. Whether each hook is executable is asked every time.
_READ: dict[tuple[str, str], tuple[object, object]] = {}
_READ_LIMIT = 512


def _signature(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _remembered(kind: str, path: str, read: Callable[[str], T]) -> T | None:
    signature = _signature(path)
    hit = _READ.get((kind, path))
    if hit is not None and hit[0] == signature and signature is not None:
        return cast("T | None", hit[1])  # what `read` gave for this kind
    value = read(path) if signature is not None else None
    if len(_READ) > _READ_LIMIT:
        _READ.clear()
    _READ[(kind, path)] = (signature, value)
    return value


def _read_text(path: str) -> str | None:
    try:
        with open(path, errors="replace") as handle:
            return handle.read(1 << 20)
    except OSError:
        return None


def _config_programs(path: str) -> tuple[str, ...]:
    """What a config file sets that runs the workspace's code (`core.hooksPath` set, or a
    program of the workspace: `_programs_of_the_workspace`)."""
    config = _read_text(path) or ""
    custom = [v.strip('"') for v in _HOOKS_PATH.findall(config)]
    if custom and custom[-1] not in ("", "/dev/null"):
        return ("core.hooksPath",)
    return _programs_of_the_workspace(config)


def _hook_names(path: str) -> tuple[str, ...]:
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return ()
    return tuple(n for n in names if not n.endswith(".sample") and not n.startswith("."))


def hooks_of(git_dir: str) -> tuple[str, ...]:
    """The hooks a repository's git directory installs or its config names (`git_hooks`)."""
    common = git_dir
    pointer = _remembered("text", posixpath.join(git_dir, "commondir"), _read_text)
    if pointer:
        common = posixpath.normpath(posixpath.join(git_dir, str(pointer).strip()))
    configured = _remembered("config", posixpath.join(common, "config"), _config_programs)
    if configured:
        return configured
    hooks = posixpath.join(common, "hooks")
    names = _remembered("hooks", hooks, _hook_names) or ()
    return tuple(n for n in names if os.access(posixpath.join(hooks, n), os.X_OK))


_SECTION = re.compile(r"^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+\"([^\"]*)\")?\s*\]", re.MULTILINE)
_PROGRAM_KEYS = re.compile(r"^(core\.(fsmonitor|pager|sshcommand|askpass|editor)|diff\.external|pager\..*|"
                           r"(diff|merge)\..*\.(command|textconv|driver)|filter\..*\.(clean|smudge|process)|"
                           r"gpg\.(.*\.)?program|credential\.(.*\.)?helper|sequence\.editor)$")


def _programs_of_the_workspace(config: str) -> tuple[str, ...]:
    """Settings of the repository (written by a person before the run: `.git/config` is
    protected) that name a program in the workspace (`core.fsmonitor = tools/watch.sh`,
    `filter.x.clean = ./scripts/clean`), or include another file: git runs such a program,
    which the agent can edit, on nearly any command (`git status` runs fsmonitor and clean
    filters). Named `config:KEY`."""
    found: list[str] = []
    section = ""
    for line in config.splitlines():
        head = _SECTION.match(line)
        if head is not None:
            section = head.group(1).lower() + (f".{head.group(2)}" if head.group(2) else "")
            if section.split(".", 1)[0] in ("include", "includeif"):
                found.append("config:include")
            continue
        key, eq, value = line.partition("=")
        if not eq or not section:
            continue
        name = f"{section}.{key.strip().lower()}"
        if _PROGRAM_KEYS.match(name) and any(_in_workspace(word) for word in re.split(r"[\s'\"!=;|&]+", value)):
            found.append(f"config:{name}")
    return tuple(dict.fromkeys(found))


def _in_workspace(word: str) -> bool:
    """A program path relative to where git runs: `./x`, `../x`, `tools/x.sh`."""
    return bool(word) and not word.startswith(("/", "~", "$")) and "/" in word


def _bare(directory: str) -> bool:
    """Whether a directory is a bare repository (git's own test: HEAD, objects, refs)."""
    try:
        if not stat.S_ISREG(os.stat(directory + "/HEAD").st_mode):
            return False
    except OSError:
        return False
    return os.path.isdir(directory + "/objects") and os.path.isdir(directory + "/refs")


def writable_git_dir(start: str, ceilings: tuple[str, ...], workspace: str) -> str | None:
    """The repository git works in from `start` when its settings and hooks are files the
    agent can write: a bare repository in the workspace, or one a `.git` file points to
    there (a `.git` directory's config and hooks are protected)."""
    return writable(_git_dir(start, ceilings), workspace)


def writable(git_dir: str | None, workspace: str) -> str | None:
    if git_dir is None or posixpath.basename(git_dir.rstrip("/")) == ".git":
        return None
    real = posixpath.realpath(git_dir)
    root = posixpath.realpath(workspace)
    return git_dir if real == root or real.startswith(root.rstrip("/") + "/") else None


def _git_dir(start: str, ceilings: tuple[str, ...]) -> str | None:
    """The git directory git finds from `start` (a `.git` directory, or the one a `.git`
    file points to), walking up."""
    directory = posixpath.normpath(start)
    roots = [c.rstrip("/") for c in ceilings if c]
    for _ in range(_LEVELS):
        candidate = posixpath.join(directory, ".git")
        try:
            mode: int | None = os.stat(candidate).st_mode
        except OSError:
            mode = None
        if mode is not None and stat.S_ISDIR(mode):
            return candidate
        if _bare(directory):
            return directory  # git takes a bare repository it is run in as the repository
        if mode is not None and stat.S_ISREG(mode):
            try:
                with open(candidate) as handle:
                    text = handle.read(4096)
            except OSError:
                return None
            if text.startswith("gitdir:"):
                return posixpath.normpath(posixpath.join(directory, text[len("gitdir:"):].strip()))
            return None
        parent = posixpath.dirname(directory)
        if parent == directory or any(parent == r or parent.startswith(r + "/") for r in roots):
            return None
        directory = parent
    return None


# git subcommands that run hooks of the repository (commit's, merge's, checkout's, push's,
# gc --auto's…); `reference-transaction` and `post-index-change` run on nearly any.
_HOOKED = frozenset({"commit", "merge", "pull", "rebase", "cherry-pick", "revert", "am", "checkout", "switch",
                     "worktree", "push", "fetch", "gc", "maintenance", "send-email", "stash", "reset", "restore"})
_HOOKS_ON_ANY = frozenset({"reference-transaction", "post-index-change"})


def repository_code(walk: Walk, inv: Invocation) -> str | None:
    """What of the workspace's a git command runs: the repository's hooks, or the settings
    of a repository the agent can write (`repository_hooks`, `writable_git_dir`)."""
    hooks = repository_hooks(walk, inv)
    if hooks:
        return f"runs the repository's git hooks ({', '.join(hooks)}), which can run files of the workspace"
    resolver = walk.resolver
    if not resolver.ctx.filesystem:
        return None
    for start in _starts(walk, inv):
        found = writable(_found_git_dir(walk, start), resolver.workspace)
        if found:
            return (f"works in the repository `{found}`, whose settings and hooks are files of the workspace the "
                    "agent can write (a bare repository, or one a `.git` file points to), and can name programs "
                    "git runs")
    return None


def _found_git_dir(walk: Walk, start: str) -> str | None:
    """The git directory found from `start`, looked for once per script."""
    ceilings = walk.resolver.ctx.protected_dirs
    return walk.remember(("git-dir", start), lambda: _git_dir(start, ceilings))


def _starts(walk: Walk, inv: Invocation) -> list[str]:
    starts = [c for c in walk.cwds if c is not None]
    for value in inv.values.get("-C", ()):
        starts = [posixpath.join(c, value) for c in starts] if not value.startswith("/") else [value]
    return starts


def repository_hooks(walk: Walk, inv: Invocation) -> tuple[str, ...]:
    """The hooks of the repository a git command works in that it may run: installed ones
    (a hook can run any file of the workspace — `npm test`, `.husky/pre-commit`,
    `.pre-commit-config.yaml`), `core.hooksPath` set, or a setting naming a program in the
    workspace (`config:core.fsmonitor`: any git command). Only read with the file system.
    `walk` is the script's walk: its `cwds`, `resolver` and `remember` cache."""
    resolver = walk.resolver
    if not resolver.ctx.filesystem:
        return ()
    found: list[str] = []
    for start in _starts(walk, inv):
        git_dir = _found_git_dir(walk, start)
        if git_dir is None:
            continue
        for hook in walk.remember(("git-hooks", git_dir), functools.partial(hooks_of, git_dir)):
            if hook not in found:
                found.append(hook)
    if not found:
        return ()
    if _HOOKS_ON_ANY & set(found) or any(h.startswith("config:") for h in found) or inv.subcommand in _HOOKED:
        return tuple(found)
    return ()
