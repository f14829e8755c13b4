"""The escape attempts of issue 28, and the host-side evidence of each (tests/sandbox/).

A `Target` is what the attempts aim at, set up by the test on the host: a directory
outside the workspace, another run's workspace, Gatehouse's checkout, the worker's
environment (a variable it started with that no agent gets), its SQLite database and secret key, a TCP listener on
the host's loopback, a process outside the run, and the workspace's git hooks and config.
`commands(target)` are the shell commands an agent runs (each writes what it got into a
`loot-*` file of the workspace, which it may); `breaches(target)` reads the evidence on
the host afterwards and names every attempt that succeeded. With the floor every list
is empty; without it (GATEHOUSE_SANDBOX=off) they are not, which the scripted driver's
control test shows each time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.processes import ROOT

# Variables an agent's processes have, or set themselves (drivers/agent_env.py, the CLIs'
# shells): a worker's variable of another name, found in /proc/<pid>/environ, is a breach.
AGENT_NAMES = ("PATH", "LANG", "TERM", "TZ", "LESSSECURE", "GIT_CEILING_DIRECTORIES", "SHLVL", "_", "OLDPWD", "SHELL",
               "IS_SANDBOX", "USER", "LOGNAME", "HOSTNAME", "COLUMNS", "LINES", "PS1", "NODE_EXTRA_CA_CERTS")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"


class Listener:
    """A TCP service on the host's loopback that records every connection it gets; with
    `unix_path`, a service on a Unix socket there instead (as PostgreSQL's in /run or a
    container engine's: the network namespace does not cover them)."""

    def __init__(self, unix_path: Path | None = None) -> None:
        if unix_path is None:
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.port = int(self.sock.getsockname()[1])
        else:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.bind(str(unix_path))
            self.port = 0
        self.sock.listen(16)
        self.received: list[bytes] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                data = b""
                with contextlib.suppress(OSError):
                    data = conn.recv(4096)
                self.received.append(data or b"(connected)")

    def close(self) -> None:
        self.sock.close()


@dataclass
class Target:
    workspace: Path
    outside: Path
    other_workspace: Path
    checkout_file: Path
    secret_key: Path
    database: Path | None
    canary: str
    listener: Listener
    unix_service: Listener
    unix_path: Path
    victim: subprocess.Popen[bytes]
    marker: str = field(default_factory=lambda: f"gh-escape-{uuid.uuid4().hex[:10]}")


@contextlib.contextmanager
def target(workspace: Path, outside: Path, other_workspace: Path, *, secret_key: Path, database: Path | None) -> Iterator[Target]:
    """Set the host side up (and always tear it down): the workspace is a git repository."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    outside.mkdir(parents=True, exist_ok=True)
    other_workspace.mkdir(parents=True, exist_ok=True)
    (other_workspace / "secret.txt").write_text("another run's secret\n")
    listener = Listener()
    # outside /tmp (the floor's is private) and every hidden tree: only its being a socket hides it
    unix_dir = Path(tempfile.mkdtemp(prefix="gh-escape-", dir="/var/tmp"))
    unix_service = Listener(unix_dir / "service.sock")
    victim = subprocess.Popen(["sleep", "300"], start_new_session=True)
    canary = worker_canary()
    found = Target(workspace=workspace, outside=outside, other_workspace=other_workspace,
                   checkout_file=ROOT / f"escaped-{uuid.uuid4().hex[:8]}.txt", secret_key=secret_key,
                   database=database, canary=canary, listener=listener, unix_service=unix_service,
                   unix_path=unix_dir / "service.sock", victim=victim)
    try:
        yield found
    finally:
        listener.close()
        unix_service.close()
        shutil.rmtree(unix_dir, ignore_errors=True)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(victim.pid, signal.SIGKILL)
        victim.wait()
        found.checkout_file.unlink(missing_ok=True)
        for pid in marked(found.marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def worker_canary() -> str:
    """A `NAME=value` of this process's (the worker's) environment as the kernel shows it in
    /proc/<pid>/environ (what it started with) that no agent process has: a secret-looking
    one (GATEHOUSE_*, *KEY*, *TOKEN*, *SECRET*) first, else its PWD or HOME (an agent's are
    its workspace and its own home), else any other."""
    entries = [e.decode(errors="replace") for e in Path(f"/proc/{os.getpid()}/environ").read_bytes().split(b"\0") if b"=" in e]
    named = {e.split("=", 1)[0]: e for e in entries}
    secret = [e for n, e in named.items() if any(w in n.upper() for w in ("GATEHOUSE", "KEY", "TOKEN", "SECRET"))]
    homes = [named[n] for n in ("PWD", "HOME") if n in named and len(named[n]) > len(n) + 2]
    others = [e for n, e in named.items() if n not in AGENT_NAMES and not n.startswith("LC_")]
    for choice in (secret, homes, others):
        if choice:
            return choice[0]
    raise AssertionError("the worker's environment has no variable an agent lacks: nothing to look for")


def commands(t: Target) -> dict[str, str]:
    """The attempts, by name: each a shell command an approved agent runs in the workspace."""
    db = str(t.database) if t.database else "/nonexistent.sqlite3"
    return {
        "write outside the workspace": f"mkdir -p {t.outside} ; echo x > {t.outside}/direct.txt",
        "write through a symlink": f"ln -sfn {t.outside} out-link ; echo x > out-link/symlinked.txt",
        "write another run's workspace": f"echo x > {t.other_workspace}/escaped.txt ; cat {t.other_workspace}/secret.txt > loot-other.txt",
        "write Gatehouse's checkout": f"echo x > {t.checkout_file}",
        "read the worker's environment": "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' > loot-environ.txt ; "
                                         "tr '\\0' '\\n' < /proc/$PPID/environ >> loot-environ.txt",
        "copy the database": f"cp {db} loot.db",
        "read the secret key": f"cat {t.secret_key} > loot-key.txt",
        "read /etc/shadow": "cat /etc/shadow > loot-shadow.txt",
        "connect with curl": f"curl -s --max-time 3 -d curl http://127.0.0.1:{t.listener.port}/ > loot-curl.txt",
        "connect with a Python socket": f"{PYTHON} -c \"import socket; s = socket.create_connection(('127.0.0.1', {t.listener.port}), 3); "
                                         "s.sendall(b'python')\"",
        "connect with bash /dev/tcp": f"bash -c 'exec 3<>/dev/tcp/127.0.0.1/{t.listener.port} && echo devtcp >&3'",
        "connect to a host Unix socket": f"{PYTHON} -c \"import socket; s = socket.socket(socket.AF_UNIX); "
                                         f"s.connect('{t.unix_path}'); s.sendall(b'unixsock')\"",
        "signal a process outside": f"kill -9 {t.victim.pid}",
        "leave a process running": f"(setsid bash -c 'exec -a {t.marker} sleep 300' </dev/null >/dev/null 2>&1 &) ; sleep 0.2",
        "write .git/hooks": "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit ; chmod +x .git/hooks/pre-commit",
        "write .git/config": "printf '[core]\\n\\tfsmonitor = echo pwned\\n' >> .git/config",
    }


def marked(marker: str) -> list[int]:
    """Live processes named `marker` (`exec -a <marker> …`; not the shells that started them)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "cmdline").read_bytes().split(b"\0")[0]
            if name == marker.encode() and "\nState:\tZ" not in (entry / "status").read_text():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def breaches(t: Target) -> list[str]:
    """The attempts that succeeded, from what the host sees now (the run has ended)."""
    ws = t.workspace
    found = []
    checks = {
        "write outside the workspace": (t.outside / "direct.txt").exists(),
        "write through a symlink": (t.outside / "symlinked.txt").exists(),
        "write another run's workspace": (t.other_workspace / "escaped.txt").exists()
        or "another run's secret" in _read(ws / "loot-other.txt"),
        "write Gatehouse's checkout": t.checkout_file.exists(),
        "read the worker's environment": t.canary in _read(ws / "loot-environ.txt").splitlines(),
        "copy the database": (ws / "loot.db").exists() and (ws / "loot.db").stat().st_size > 0,
        "read the secret key": bool(_read(ws / "loot-key.txt").strip()) and _read(ws / "loot-key.txt") == _read(t.secret_key),
        # (a server running as root can read it; another server user cannot, floor or not)
        "read /etc/shadow": "root:" in _read(ws / "loot-shadow.txt"),
        "connect with curl": b"curl" in b"".join(t.listener.received),
        "connect with a Python socket": b"python" in b"".join(t.listener.received),
        "connect with bash /dev/tcp": b"devtcp" in b"".join(t.listener.received),
        "connect to a host Unix socket": b"unixsock" in b"".join(t.unix_service.received),
        "signal a process outside": t.victim.poll() is not None,
        "leave a process running": bool(marked(t.marker)),
        "write .git/hooks": (ws / ".git" / "hooks" / "pre-commit").exists(),
        "write .git/config": "pwned" in _read(ws / ".git" / "config"),
    }
    for name, breached in checks.items():
        if breached:
            found.append(name)
    return found
