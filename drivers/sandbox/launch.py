"""Starting one process inside a floor: its bwrap command line, bridges and files.

`prepare` returns what `asyncio.create_subprocess_exec` needs (`Launch`) and starts the
host side of each bridge; `Launch.release` stops them once the process has exited. The
options travel through a memory file (`bwrap --args FD`), so the process's environment
(its API key) is in no command line; the only words `ps` shows are `bwrap --args N --`
and the command.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from . import bwrap
from .bridge import HostBridge, host_bridge, wrapped
from .spec import Floor


@dataclass
class Launch:
    argv: list[str]
    pass_fds: tuple[int, ...]
    env: dict[str, str]
    bridges: list[HostBridge] = field(default_factory=list)

    def close_fds(self) -> None:
        """The parent's copies of the files passed to bwrap (call once it has started)."""
        for fd in self.pass_fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.pass_fds = ()

    async def release(self) -> None:
        """Stop the bridges' host side (the process has exited)."""
        self.close_fds()
        for bridge in self.bridges:
            await bridge.close()


def _memfd(name: str, data: bytes) -> int:
    fd = os.memfd_create(name, 0)  # not inheritable: only pass_fds hands it to bwrap
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


async def prepare(
    floor: Floor, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], bridge_dir: Path
) -> Launch:
    """Everything to start `argv` inside `floor` (see the module docstring). The bridges'
    host sockets go in `bridge_dir` (the run's runtime directory)."""
    launch = Launch(argv=[], pass_fds=(), env={"PATH": os.defpath})
    fds: list[int] = []
    try:
        sockets: list[str] = []
        listeners: list[tuple[str, str, int, str]] = []
        for index, bridge in enumerate(floor.bridges):
            host = host_bridge(bridge, bridge_dir)
            launch.bridges.append(host)
            sockets.append(await host.start())
            listeners.append(("out", bridge.inside_host, bridge.inside_port, bwrap.socket_path(index)))
        for offset, extra in enumerate(floor.sockets, start=len(floor.bridges)):
            sockets.append(extra.socket_path)
            listeners.append(("out", "127.0.0.1", extra.inside_port, bwrap.socket_path(offset)))
        for index, ingress in enumerate(floor.ingress):
            listeners.append(("in", "-", ingress.inside_port, bwrap.ingress_path(index, ingress)))
        options = bwrap.options(floor, cwd=cwd, env=env, sockets=sockets)
        args_fd = _memfd("gatehouse-floor-args", b"".join(o.encode() + b"\0" for o in options))
        fds.append(args_fd)
    except BaseException:
        launch.pass_fds = tuple(fds)
        await launch.release()
        raise
    launch.pass_fds = tuple(fds)
    launch.argv = [bwrap_binary(), "--args", str(args_fd), "--", *wrapped(argv, listeners)]
    return launch


def bwrap_binary() -> str:
    return shutil.which("bwrap") or bwrap.BWRAP
