"""The floor of one run, as a value: what its processes may see, write and reach.

A `Floor` says nothing about how it is built (drivers/sandbox/bwrap.py does that); the
worker makes one per run from the settings and the run (drivers/runfloor.py), each driver
adds the model endpoints its agent must reach (`reaching`), and `drivers.processes.spawn`
starts every process of the run inside it.
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from .endpoints import Bridge, reach

Mode = Literal["workspace-write", "read-only"]
MODES: tuple[Mode, ...] = ("workspace-write", "read-only")


@dataclass(frozen=True)
class SocketBridge:
    """The seam for the egress proxy: a Unix socket some Gatehouse component already listens
    on (`socket_path`, on the host), reached inside the floor at 127.0.0.1:`inside_port`."""

    socket_path: str
    inside_port: int


@dataclass(frozen=True)
class Ingress:
    """The other way round: a server inside the floor that Gatehouse talks to (OpenCode's
    `opencode serve`). Inside, a listener on the Unix socket `host_socket` (its directory
    bound into the floor) forwards each connection to 127.0.0.1:`inside_port`; outside,
    Gatehouse connects to `host_socket`."""

    inside_port: int
    host_socket: str


@dataclass(frozen=True)
class Floor:
    """Everything a run's processes get from the OS (see docs/sandbox.md).

    - `mode`: `workspace-write` (the workspace writable) or `read-only` (nothing of the
      host writable but the agent's own directories and a private /tmp);
    - `workspace`: the run's workspace (bound at its own path);
    - `writable`: the agent's own home/runtime directories (always writable);
    - `readable`: trees shown read-only even where they lie inside a hidden one (the pinned
      agent CLIs, an operator's extra paths);
    - `hidden`: trees replaced by an empty read-only directory (Gatehouse's var directory,
      workspaces and runtime directories, workspace roots, its checkout, the server user's
      home); `hidden_files`: files replaced by an empty one (a database outside them);
    - `bridges` / `sockets`: the only network there is inside (loopback model endpoints;
      the egress proxy's socket); `ingress`: servers inside that Gatehouse reaches (a Unix
      socket each); `model_hosts`: the remote model endpoints (`host:port`) the agent must
      reach, which only the egress proxy can carry (it should let them through unasked);
      `own_hosts`: hosts the agent program calls on its own, never for the task (Codex's
      chatgpt.com), which the proxy refuses without asking anyone unless a rule allows them;
    - `env`: variables set inside over the process's own (the proxy variables);
    - `bridge_dir`: where the bridges' Unix sockets are made outside (the run's runtime
      directory; empty: the system's temporary directory).
    """

    mode: Mode
    workspace: str
    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    hidden_files: tuple[str, ...] = ()
    bridges: tuple[Bridge, ...] = ()
    sockets: tuple[SocketBridge, ...] = ()
    ingress: tuple[Ingress, ...] = ()
    model_hosts: tuple[str, ...] = ()
    own_hosts: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    bridge_dir: str = ""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"floor mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        for path in (self.workspace, *self.writable, *self.readable, *self.hidden, *self.hidden_files):
            if not posixpath.isabs(path):
                raise ValueError(f"floor paths must be absolute: {path!r}")

    def replace(self, **changes: object) -> Floor:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def reaching(self, urls: Iterable[str]) -> Floor:
        """This floor with each model endpoint in `urls`: a bridge to a loopback one, a
        model host for the egress proxy (drivers/sandbox/endpoints.py)."""
        bridges, remote = reach(urls)
        added = tuple(dict.fromkeys(b for b in bridges if b not in self.bridges))
        hosts = tuple(h for h in dict.fromkeys(remote) if h not in self.model_hosts)
        if not added and not hosts:
            return self
        return self.replace(bridges=self.bridges + added, model_hosts=self.model_hosts + hosts)

    def exposing(self, inside_port: int, host_socket: str) -> Floor:
        """This floor with a server inside on 127.0.0.1:`inside_port` reachable outside at
        the Unix socket `host_socket` (its directory must exist)."""
        return self.replace(ingress=(*self.ingress, Ingress(inside_port, host_socket)))

    def with_proxy(self, socket_path: str, *, inside_port: int = 3128) -> Floor:
        """The egress proxy's seam: its Unix socket bridged to 127.0.0.1:`inside_port` and the
        proxy variables set inside; loopback (the bridged endpoints) bypasses it (`NO_PROXY`).
        The proxy lets `model_hosts` through without asking (docs/sandbox.md)."""
        url = f"http://127.0.0.1:{inside_port}"
        direct = ["127.0.0.1", "::1", "localhost"]
        proxy_env = {"HTTPS_PROXY": url, "HTTP_PROXY": url, "https_proxy": url, "http_proxy": url,
                     "NO_PROXY": ",".join(direct), "no_proxy": ",".join(direct)}
        return self.replace(sockets=(*self.sockets, SocketBridge(socket_path, inside_port)),
                            env={**self.env, **proxy_env})
