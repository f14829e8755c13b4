"""The bubblewrap command line of a floor.

The order of bwrap's file-system options is the order of the mounts, and a later mount
over a path wins over an earlier one. The plan:

1. namespaces: user, pid, ipc, uts, net (new), `--die-with-parent`, `--new-session`, every
   capability dropped (`--cap-drop ALL`; bwrap keeps them for uid 0, and with them a
   sandboxed process could `umount` a hidden tree and read what lies beneath); a server
   running as root is mapped to an ordinary uid inside (`INSIDE_UID`), which also lets an
   agent's own sandbox create its nested user namespace;
2. the whole system read-only (`--ro-bind / /`), a minimal /dev, a fresh /proc (only the
   floor's own processes), a private writable /tmp;
3. the trees to hide, the trees to show again and the writable ones, ordered from the
   shallowest path to the deepest, so the most specific wins whatever the nesting (the
   workspace inside Gatehouse's hidden var directory is shown again; Gatehouse's var
   directory inside a workspace that is its checkout is hidden again). A hidden tree is a
   tmpfs, made read-only once what it shows again is mounted (`--remount-ro`: sandbox-
   runtime's `--tmpfs` stayed writable, its issue #149);
4. the workspace's control files read-only (drivers/sandbox/control.py);
5. the bridges' Unix sockets (read-only binds under /tmp/.gatehouse; an ingress's
   directory, writable, for the socket made inside);
6. `--clearenv`, then the process's allow-listed environment (`--setenv`), `--chdir`.

Everything but the command goes through `--args FD` (drivers/sandbox/launch.py): the
environment (API keys) never appears in a command line that `ps` shows.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import control
from .spec import Floor, Ingress

BWRAP = "/usr/bin/bwrap"
# The uid (and gid) a server running as root has inside the floor: any ordinary one. Files
# it writes are the server user's outside (uid 0), as without a floor.
INSIDE_UID = 1000
# Where the bridges' sockets appear inside (the private /tmp: short, and invisible outside).
SOCKET_DIR = "/tmp/.gatehouse"

NAMESPACES = ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
              "--die-with-parent", "--new-session", "--cap-drop", "ALL")
SYSTEM = ("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")

_ORDER = {"hide": 0, "tmp": 0, "symlink": 1, "ro": 2, "rw": 3}


@dataclass(frozen=True)
class _Op:
    path: str  # where, inside (absolute, normalised)
    kind: str  # hide | tmp | ro | rw | symlink
    source: str = ""  # what is bound (ro/rw) or pointed at (symlink); `path` when empty


def _real(path: str) -> str:
    return os.path.realpath(path)


def _depth(path: str) -> int:
    return 0 if path == "/" else path.count("/")


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def socket_path(index: int) -> str:
    """Where bridge `index`'s Unix socket is inside the floor."""
    return f"{SOCKET_DIR}/bridge-{index}.sock"


def ingress_path(index: int, ingress: Ingress) -> str:
    """Where ingress `index`'s Unix socket is inside the floor (its directory is bound there)."""
    return f"{SOCKET_DIR}/in-{index}/{posixpath.basename(ingress.host_socket)}"


def _plan(floor: Floor) -> list[_Op]:
    """The mounts of step 3, shallowest first (ties: hide, then show read-only, then writable)."""
    ops = [_Op("/tmp", "tmp")]
    hidden = [_real(h) for h in floor.hidden if os.path.isdir(h)]
    ops += [_Op(h, "hide") for h in hidden]
    shown = [(r, "ro") for r in floor.readable]
    shown.append((floor.workspace, "rw" if floor.mode == "workspace-write" else "ro"))
    shown += [(w, "rw") for w in floor.writable]
    for given, kind in shown:
        if not os.path.exists(given):
            continue
        real = _real(given)
        ops.append(_Op(real, kind))
        lexical = posixpath.normpath(given)
        if lexical != real and any(_inside(lexical, h) and lexical != h for h in hidden):
            # The path as configured went through a link inside a hidden tree (a worktree's
            # `.agents` -> the main checkout's): the link is made again in the tmpfs.
            ops.append(_Op(lexical, "symlink", real))
    ops.sort(key=lambda op: (_depth(op.path), _ORDER[op.kind]))
    return _without_shadowed(ops)


def _without_shadowed(ops: list[_Op]) -> list[_Op]:
    """Drop an op whose path a later op at the same path replaces (hide + show: show)."""
    last = {op.path: i for i, op in enumerate(ops)}
    return [op for i, op in enumerate(ops) if last[op.path] == i]


def _mount_args(ops: Sequence[_Op]) -> list[str]:
    args: list[str] = []
    for op in ops:
        if op.kind in ("hide", "tmp"):
            args += ["--tmpfs", op.path]
        elif op.kind == "symlink":
            args += ["--symlink", op.source, op.path]
        else:
            args += ["--ro-bind" if op.kind == "ro" else "--bind", op.source or op.path, op.path]
    return args


def _protection_args(floor: Floor) -> list[str]:
    """Step 4: the workspace's control files read-only, their holders immovable."""
    if floor.mode != "workspace-write":
        return []  # the whole workspace is read-only already
    workspace = _real(floor.workspace)
    entries = control.present(workspace)
    args: list[str] = []
    dot_git = os.path.join(workspace, ".git")
    if os.path.isfile(dot_git) and not os.path.islink(dot_git):
        args += ["--ro-bind", dot_git, dot_git]  # a worktree's pointer to its git directory
    linked_holders = set()
    for relative in entries:
        top = relative.split("/", 1)[0]
        if "/" in relative and os.path.islink(os.path.join(workspace, relative)):
            linked_holders.add(top)  # a link could be swapped for a writable file: the holder is read-only
    for holder in control.holders(workspace, entries):
        path = os.path.join(workspace, holder)
        args += ["--ro-bind" if holder in linked_holders else "--bind", path, path]
    for relative in entries:
        path = os.path.join(workspace, relative)
        if relative.split("/", 1)[0] in linked_holders:
            continue
        if os.path.islink(path):
            target = _real(path)
            if _inside(target, workspace) and os.path.exists(target):
                args += ["--ro-bind", target, target]
            continue
        args += ["--ro-bind", path, path]
    return args


def _hidden_file_args(floor: Floor, hidden: Sequence[str]) -> list[str]:
    args: list[str] = []
    for given in floor.hidden_files:
        if not os.path.exists(given) or os.path.isdir(given):  # (a file, or a Unix socket)
            continue
        real = _real(given)
        if not any(_inside(real, h) for h in hidden):
            args += ["--ro-bind", "/dev/null", real]
    return args


def options(
    floor: Floor, *, cwd: str, env: Mapping[str, str], sockets: Sequence[str] = ()
) -> list[str]:
    """bwrap's options for one process (everything before `--` and the command).

    `sockets`: the host paths of the bridges' Unix sockets, in the order of
    `floor.bridges + floor.sockets` (each appears inside at `socket_path(i)`)."""
    args = list(NAMESPACES)
    if os.getuid() == 0:
        args += ["--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID)]
    args += SYSTEM
    ops = _plan(floor)
    args += _mount_args(ops)
    args += _hidden_file_args(floor, [op.path for op in ops if op.kind == "hide"])
    args += _protection_args(floor)
    for index, host_socket in enumerate(sockets):
        args += ["--ro-bind", host_socket, socket_path(index)]
    for index, ingress in enumerate(floor.ingress):
        args += ["--bind", posixpath.dirname(ingress.host_socket), posixpath.dirname(ingress_path(index, ingress))]
    for op in ops:
        if op.kind == "hide":
            args += ["--remount-ro", op.path]
    args.append("--clearenv")
    for key, value in {**env, **floor.env}.items():
        args += ["--setenv", key, value]
    args += ["--chdir", cwd]
    return args


def visible(floor: Floor, path: str) -> bool:
    """Whether `path` (a program, a working directory) can be seen inside the floor: the
    deepest hidden or shown tree that holds it decides."""
    real = _real(path)
    verdict = True
    depth = -1
    for op in _plan(floor):
        if op.kind in ("hide", "tmp", "ro", "rw") and _inside(real, op.path) and _depth(op.path) >= depth:
            depth = _depth(op.path)
            verdict = op.kind in ("ro", "rw")
    if any(_inside(real, _real(f)) for f in floor.hidden_files if os.path.exists(f)):
        return False
    return verdict
