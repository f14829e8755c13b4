#!/usr/bin/env python3
"""The scaled shape on one machine: 2 web processes (Daphne) and 2 workers (runworker).

    scripts/scaled.py start [--port 8000]   # what `make run-scaled` runs
    scripts/scaled.py stop                  # what `make stop-scaled` runs
    scripts/scaled.py status

Every process gets the same settings (DATABASE_URL, REDIS_URL from the environment; the
defaults are the PostgreSQL and Redis on 127.0.0.1) — nothing in the code branches on the
shape. Web processes listen on PORT and PORT+1. Each process's id is written to
`$GATEHOUSE_VAR_DIR/scaled/<name>.pid` (web-1, web-2, worker-1, worker-2) and its output
to `<name>.log` beside it, so an operator (or a test) can signal one.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/gatehouse"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
NAMES = ("web-1", "web-2", "worker-1", "worker-2")


def var_dir() -> Path:
    return Path(os.environ.get("GATEHOUSE_VAR_DIR") or ROOT / "var").resolve()


def scaled_dir() -> Path:
    path = var_dir() / "scaled"
    path.mkdir(parents=True, exist_ok=True)
    return path


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("DATABASE_URL", DEFAULT_DATABASE_URL)
    env.setdefault("REDIS_URL", DEFAULT_REDIS_URL)
    env["GATEHOUSE_VAR_DIR"] = str(var_dir())
    return env


def ensure_database(url: str) -> None:
    """Create the PostgreSQL database of DATABASE_URL if it does not exist yet."""
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        return
    import psycopg

    name = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')  # the name comes from the operator's URL


def manage(*args: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stdout}{done.stderr}")
    return done.stdout


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def pids() -> dict[str, int]:
    found = {}
    for name in NAMES:
        path = scaled_dir() / f"{name}.pid"
        if path.exists() and path.read_text().strip().isdigit():
            pid = int(path.read_text())
            if alive(pid):
                found[name] = pid
    return found


def wait_for_port(port: int, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return True
        time.sleep(0.2)
    return False


def start(port: int) -> None:
    running = pids()
    if running:
        sys.exit(f"already running: {', '.join(f'{n} (pid {p})' for n, p in running.items())}; run `make stop-scaled` first")
    env = environment()
    ensure_database(env["DATABASE_URL"])
    manage("migrate", "--noinput", "-v", "0", env=env)
    manage("ensure_admin", env=env)
    daphne = [sys.executable, "-m", "daphne", "-b", "127.0.0.1"]
    commands = {
        "web-1": [*daphne, "-p", str(port), "project.asgi:application"],
        "web-2": [*daphne, "-p", str(port + 1), "project.asgi:application"],
        "worker-1": [sys.executable, "manage.py", "runworker", "drivers"],
        "worker-2": [sys.executable, "manage.py", "runworker", "drivers"],
    }
    for name, argv in commands.items():
        log = (scaled_dir() / f"{name}.log").open("ab")
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        (scaled_dir() / f"{name}.pid").write_text(str(proc.pid))
    for name, web_port in (("web-1", port), ("web-2", port + 1)):
        if not wait_for_port(web_port):
            stop()
            log = scaled_dir() / f"{name}.log"
            tail = log.read_text(errors="replace").splitlines()[-20:] if log.exists() else []
            sys.exit(f"{name} (port {web_port}) did not start; the end of {log}:\n" + "\n".join(tail))
    link = manage("login_link", "admin", "--base", f"http://127.0.0.1:{port}", env=env).strip()
    print(f"Gatehouse (scaled): http://127.0.0.1:{port}/ and http://127.0.0.1:{port + 1}/")
    print(f"  database {env['DATABASE_URL']}, channel layer {env['REDIS_URL']}")
    print(f"  processes: {', '.join(f'{n} (pid {p})' for n, p in pids().items())}; logs in {scaled_dir()}")
    print(f"Login link: {link}")
    print("Stop them all with `make stop-scaled`.")


def stop(timeout: float = 20) -> None:
    running = pids()
    for pid in running.values():
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(pid) for pid in running.values()):
        time.sleep(0.1)
    for pid in running.values():
        if alive(pid):
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for name in NAMES:
        (scaled_dir() / f"{name}.pid").unlink(missing_ok=True)
    print(f"stopped: {', '.join(running) or 'nothing was running'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["start", "stop", "status"])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT") or 8000))
    args = parser.parse_args()
    if args.command == "start":
        start(args.port)
    elif args.command == "stop":
        stop()
    else:
        running = pids()
        print(", ".join(f"{n} (pid {p})" for n, p in running.items()) or "not running")


if __name__ == "__main__":
    main()
