"""The git hooks a repository would run: read from the file system, never run.

An installed hook (`.git/hooks/pre-commit`, or a directory named by `core.hooksPath`, as
husky sets) runs on `git commit`, `merge`, `checkout`…; what it runs is often the
workspace's own files (`npm test`, `.husky/pre-commit`, `.pre-commit-config.yaml`,
lint-staged's settings), which the agent may edit without asking. The hook itself is a
protected path; what it calls is not, so a git command that runs hooks is asked about
when the repository has any (`script_eval`).
"""

from __future__ import annotations

import os
import posixpath
import re

_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_LEVELS = 64  # directories walked up from the working directory, at most


def git_hooks(start: str, ceilings: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The hooks of the repository that holds `start` (its names; `core.hooksPath` when
    that is set), or () outside a repository or without hooks. The search does not go up
    into a directory under `ceilings` (Gatehouse's var directory: agents run git with
    GIT_CEILING_DIRECTORIES there, see drivers/agent_env.py)."""
    git_dir = _git_dir(start, ceilings)
    if git_dir is None:
        return ()
    common = git_dir
    try:
        with open(posixpath.join(git_dir, "commondir")) as handle:
            common = posixpath.normpath(posixpath.join(git_dir, handle.read().strip()))
    except OSError:
        pass
    try:
        with open(posixpath.join(common, "config"), errors="replace") as handle:
            config = handle.read(1 << 20)
    except OSError:
        config = ""
    custom = [v.strip('"') for v in _HOOKS_PATH.findall(config)]
    if custom and custom[-1] not in ("", "/dev/null"):
        return ("core.hooksPath",)
    configured = _programs_of_the_workspace(config)
    if configured:
        return configured
    try:
        names = sorted(os.listdir(posixpath.join(common, "hooks")))
    except OSError:
        return ()
    return tuple(n for n in names if not n.endswith(".sample") and not n.startswith(".")
                 and os.access(posixpath.join(common, "hooks", n), os.X_OK))


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


def _git_dir(start: str, ceilings: tuple[str, ...]) -> str | None:
    """The git directory git finds from `start` (a `.git` directory, or the one a `.git`
    file points to), walking up."""
    directory = posixpath.normpath(start)
    roots = [c.rstrip("/") for c in ceilings if c]
    for _ in range(_LEVELS):
        candidate = posixpath.join(directory, ".git")
        if os.path.isdir(candidate):
            return candidate
        if os.path.isfile(candidate):
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


def repository_hooks(walk, inv) -> tuple[str, ...]:
    """The hooks of the repository a git command works in that it may run: installed ones
    (a hook can run any file of the workspace — `npm test`, `.husky/pre-commit`,
    `.pre-commit-config.yaml`), `core.hooksPath` set, or a setting naming a program in the
    workspace (`config:core.fsmonitor`: any git command). Only read with the file system.
    `walk` is the script's walk: its `cwds`, `resolver` and `remember` cache."""
    resolver = walk.resolver
    if not resolver.ctx.filesystem:
        return ()
    starts = [c for c in walk.cwds if c is not None]
    for value in inv.values.get("-C", ()):
        starts = [posixpath.join(c, value) for c in starts] if not value.startswith("/") else [value]
    found: list[str] = []
    for start in starts:
        for hook in walk.remember(("git-hooks", start), lambda s=start: git_hooks(s, resolver.ctx.protected_dirs)):
            if hook not in found:
                found.append(hook)
    if not found:
        return ()
    if _HOOKS_ON_ANY & set(found) or any(h.startswith("config:") for h in found) or inv.subcommand in _HOOKED:
        return tuple(found)
    return ()
