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
    try:
        names = sorted(os.listdir(posixpath.join(common, "hooks")))
    except OSError:
        return ()
    return tuple(n for n in names if not n.endswith(".sample") and not n.startswith(".")
                 and os.access(posixpath.join(common, "hooks", n), os.X_OK))


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
