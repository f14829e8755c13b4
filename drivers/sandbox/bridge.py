"""The bridges: how a process inside the floor reaches its model endpoint, and nothing else.

As sandbox-runtime does on Linux: outside, Gatehouse listens on a Unix socket (one per
bridge, per process, in the run's runtime directory) and forwards each connection to the
endpoint (`HostBridge`, asyncio, in the worker's loop); inside, the socket is bound into the
floor and `socat TCP-LISTEN:<port>,bind=<loopback>,fork UNIX-CONNECT:<socket>` listens on
the endpoint's address, started by `WRAPPER`, the floor's first process, before it `exec`s
the agent. Nothing else has a route out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Sequence
from pathlib import Path

from .endpoints import Bridge

logger = logging.getLogger(__name__)

# A Unix socket path is at most 107 bytes: a longer one is bound through its directory's
# file descriptor (/proc/self/fd/N/name), which the kernel resolves like the real path.
_SUN_PATH_MAX = 107
_CHUNK = 65536

# The floor's first process (bash, builtins only but socat): start each bridge's listener,
# wait until every one listens (at most 2 s, reading /proc/net/tcp{,6}), then run the
# agent. The floor falls the moment its first process exits (bubblewrap's init, dying
# with it, takes the pid namespace along), so the wrapper outlives the agent by up to
# LINGER_S while other processes of the floor finish: claude-code-acp exits at once on
# SIGTERM, while the Claude Code it started still flushes its transcript. It ignores the
# group's SIGTERM itself (the agent gets it); SIGKILL to bubblewrap still ends all at once. Arguments: "<address> <port> <socket>" triples, "--", the agent's argv.
WRAPPER = r"""
listening() {
  local table address state
  for table in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$table" ] || continue
    while read -r _ address _ state _; do
      [[ $state == 0A && ${address##*:} == "$1" ]] && return 0
    done < "$table"
  done
  return 1
}
ready() { if [[ $1 == /* ]]; then [ -S "$1" ]; else listening "$1"; fi; }
now() { echo $(( ${EPOCHREALTIME//[.,]/} )); }
others() {  # a process of the floor's but its init, this wrapper and the listeners
  local p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [[ $p == 1 || $p == "$$" || " ${listeners[*]} " == *" $p "* ]] || return 0
  done
  return 1
}
waits=(); listeners=()
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  if [ "$1" = in ]; then
    socat "UNIX-LISTEN:$4,fork,unlink-early,mode=600" "TCP4:127.0.0.1:$3" 2>/dev/null </dev/null &
    waits+=("$4")
  else
    if [[ $2 == *:* ]]; then listen="TCP6-LISTEN:$3,bind=[$2]"; else listen="TCP4-LISTEN:$3,bind=$2"; fi
    socat "$listen,fork,reuseaddr" "UNIX-CONNECT:$4" 2>/dev/null </dev/null &
    printf -v hex '%04X' "$3"; waits+=("$hex")
  fi
  listeners+=("$!"); shift 4
done
shift
deadline=$(( $(now) + 2000000 ))
for wait in "${waits[@]}"; do
  until ready "$wait" || (( $(now) > deadline )); do :; done
done
trap : TERM INT HUP
"$@" <&0 &
agent=$!
while :; do wait "$agent"; status=$?; kill -0 "$agent" 2>/dev/null || break; done
deadline=$(( $(now) + LINGER_US ))
while others && (( $(now) < deadline )); do sleep 0.02; done
exit "$status"
"""


LINGER_S = 3.0


def wrapped(argv: Sequence[str], listeners: Sequence[tuple[str, str, int, str]]) -> list[str]:
    """`argv` started by the wrapper, after its listeners ((direction, address, port, inside socket))."""
    if not listeners:
        return list(argv)
    words = [str(part) for listener in listeners for part in listener]
    script = WRAPPER.replace("LINGER_US", str(int(LINGER_S * 1_000_000)))
    return ["/bin/bash", "-c", script, "gatehouse-floor", *words, "--", *argv]


class HostBridge:
    """One Unix socket outside the floor, forwarding each connection to `target`."""

    def __init__(self, directory: Path, target_host: str, target_port: int) -> None:
        self.directory = directory
        self.target = (target_host, target_port)
        self.path = str(directory / f"bridge-{uuid.uuid4().hex[:12]}.sock")
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        """Listen; returns the socket's path (outside)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if len(self.path.encode()) <= _SUN_PATH_MAX:
                sock.bind(self.path)
            else:
                fd = os.open(self.directory, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    sock.bind(f"/proc/self/fd/{fd}/{os.path.basename(self.path)}")
                finally:
                    os.close(fd)
            self._server = await asyncio.start_unix_server(self._serve, sock=sock)
        except BaseException:
            sock.close()
            raise
        return self.path

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            try:
                up_reader, up_writer = await asyncio.open_connection(*self.target)
            except OSError as exc:
                logger.warning("sandbox bridge: cannot reach %s:%s: %s", *self.target, exc)
                return
            try:
                await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
            finally:
                up_writer.close()
        finally:
            writer.close()
            self._tasks.discard(task)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(OSError):
            os.unlink(self.path)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction until EOF, then pass the EOF on (HTTP clients half-close)."""
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


async def open_unix(path: str, *, limit: int = 2**16) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """`asyncio.open_unix_connection`, also for a path longer than a socket address allows
    (an ingress socket in a deep runtime directory)."""
    if len(path.encode()) <= _SUN_PATH_MAX:
        return await asyncio.open_unix_connection(path, limit=limit)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    fd = os.open(os.path.dirname(path), os.O_RDONLY | os.O_DIRECTORY)
    try:
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, f"/proc/self/fd/{fd}/{os.path.basename(path)}")
    except BaseException:
        sock.close()
        raise
    finally:
        os.close(fd)
    return await asyncio.open_unix_connection(sock=sock, limit=limit)


def host_bridge(bridge: Bridge, directory: Path) -> HostBridge:
    return HostBridge(directory, bridge.target_host, bridge.target_port)
