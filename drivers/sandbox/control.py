"""The workspace's control files, which the floor binds read-only.

One list with the policy's `protected` class: a workspace path is a control file here
exactly when `approvals.policy.paths.control_file` says so (agents' settings, hooks and
MCP files, `.git/hooks`, `.git/config` and the files that point git elsewhere). The
candidate names below are where agents and git look for them at the workspace's top;
each is checked against the policy's predicate at import, so the two cannot drift apart.

What exists is bound read-only at spawn time. What does not exist yet is **not** created
(a bind needs a mount point; an empty `.mcp.json` or `.claude/` left in a user's
workspace would be a stray file, and a `/dev/null` over a missing `.git` would stop
`git init`): the policy denies writing such a path through every gated tool, the
drivers already keep their agents from loading workspace configuration, and the worker
says on the run's timeline which control files appeared or changed during the
run (`changed_since`). Directories holding control files (`.git`) are bound onto
themselves, which makes them mount points: inside the floor they cannot be renamed
or removed (`mv .git .git2; git init` cannot swap in fresh, writable hooks).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from approvals.policy.paths import control_file

# Where agents and git look for their control files at the top of a workspace.
CANDIDATES = (
    ".git/hooks", ".git/config", ".git/config.worktree", ".git/commondir",
    ".claude/settings.json", ".claude/settings.local.json", ".claude/hooks",
    ".codex", ".opencode", ".gemini", ".mcp.json",
)
# Directories whose control entries are bound: bound onto themselves first (immovable).
HOLDERS = (".git", ".claude")

for _candidate in CANDIDATES:  # the policy's predicate is the source of truth
    if control_file(_candidate) is None:
        raise AssertionError(f"{_candidate} is not a control file for approvals.policy.paths.control_file")


def _settings_files(workspace: str) -> list[str]:
    """`.claude/settings*.json` as they exist (the policy protects the whole glob)."""
    try:
        names = os.listdir(os.path.join(workspace, ".claude"))
    except OSError:
        return []
    return [f".claude/{name}" for name in sorted(names) if control_file(f".claude/{name}") == ".claude/settings*.json"]


def present(workspace: str) -> list[str]:
    """The control files and directories that exist in `workspace` now (relative paths,
    symlinks included as they are: a bind follows a link, so a link is reported, not bound)."""
    found = []
    for relative in dict.fromkeys([*CANDIDATES, *_settings_files(workspace)]):
        if os.path.lexists(os.path.join(workspace, relative)):
            found.append(relative)
    return found


def holders(workspace: str, protected: Iterable[str]) -> list[str]:
    """The holder directories (`.git`, `.claude`) of the protected entries that are real
    directories, not links (binding a link would bind what it points to)."""
    tops = {p.split("/", 1)[0] for p in protected if "/" in p}
    result = []
    for name in HOLDERS:
        path = os.path.join(workspace, name)
        if name in tops and os.path.isdir(path) and not os.path.islink(path):
            result.append(name)
    return result


def write_refusal(mode: str, workspace: str, path: str) -> str | None:
    """Why a write Gatehouse makes itself on an agent's behalf (a scripted step's write or
    edit, an ACP agent's `fs/write_text_file`) is refused, as the floor would refuse it to
    a process inside it; None when allowed. `path` is already known to be inside the
    workspace. Stricter than the mounts: a control file is refused whether or not it exists
    (such a write leaves no mount point behind)."""
    if mode == "read-only":
        return "the workspace is read-only in this run (sandbox read-only)"
    relative = os.path.relpath(os.path.realpath(path), os.path.realpath(workspace))
    protected = control_file(relative) or (relative.split("/", 1)[0] == ".git" and os.path.isfile(
        os.path.join(workspace, ".git")))
    if protected:
        return f"{relative} is a control file (git hooks or settings, agent settings or MCP servers) the sandbox floor keeps read-only"
    return None


def _signature(path: str) -> tuple[int, int, int, int]:
    st = os.lstat(path)
    return (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)


def snapshot(workspace: str) -> dict[str, tuple[int, int, int, int]]:
    """The control files of `workspace` and what each is (kind, inode, size, mtime)."""
    found = {}
    for relative in present(workspace):
        try:
            found[relative] = _signature(os.path.join(workspace, relative))
        except OSError:
            continue
    return found


def changed_since(before: dict[str, tuple[int, int, int, int]], workspace: str) -> list[str]:
    """Control files that appeared, or were replaced or changed, since `before` (the
    worker's after-run check: what the floor could not hold read-only, it reports)."""
    now = snapshot(workspace)
    return [relative for relative, signature in now.items() if before.get(relative) != signature]
