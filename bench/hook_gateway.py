"""The hook gateway's throughput beside a bare Django JSON view, in one `serve` process.

Starts `manage.py serve` on a fresh database (SQLite, WAL, the embedded default), then
drives two endpoints of that one process at the same concurrency, alternating rounds so
both see the same machine:

- bare:    GET /healthz — a plain Django JSON view (no auth; one `SELECT 1`, and the
           channel layer's state, in memory here);
- gateway: POST /api/v1/hooks/claude-code/pre-tool-use/ — an auto-allowed PreToolUse call
           (`ls`), token-authenticated, recorded as a step with its activity, answered.

Each of CONCURRENCY clients keeps one HTTP/1.1 connection open and sends its next request
when the answer arrives. Prints requests per second (median of the rounds) and the ratio
(the target is at least 70 %). Not a test: figures depend on the machine.

    .venv/bin/python bench/hook_gateway.py [--concurrency 8] [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POLICY = {"commands": {"allow": ["ls"]}, "default": "ask"}
CREATE_POLICY = (
    "from approvals.models import Policy; from approvals.services import policy_save; import json; "
    f"policy_save(policy=Policy(name='bench', document=json.loads({json.dumps(json.dumps(POLICY))})))"
)


def manage(env: dict[str, str], *args: str, capture: bool = True) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=capture, text=True, check=True)
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def client(port: int, request: bytes, stop_at: float) -> int:
    """One keep-alive connection sending `request` back to back; returns answers counted."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    done = 0
    try:
        while time.monotonic() < stop_at:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
            if status != 200:
                raise RuntimeError(f"HTTP {status}: {body[:300]!r}")
            done += 1
    finally:
        writer.close()
    return done


def gateway_request(port: int, token: str, session: str) -> bytes:
    body = json.dumps({
        "session_id": session, "cwd": "/work/app", "hook_event_name": "PreToolUse", "permission_mode": "default",
        "tool_name": "Bash", "tool_input": {"command": "ls -la", "description": "List"}, "tool_use_id": f"toolu_{session}",
    }).encode()
    return (
        f"POST /api/v1/hooks/claude-code/pre-tool-use/?policy=bench HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Authorization: Token {token}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body


async def measure(port: int, requests: list[bytes], seconds: float) -> float:
    stop_at = time.monotonic() + seconds
    started = time.monotonic()
    counts = await asyncio.gather(*(client(port, r, stop_at) for r in requests))
    return sum(counts) / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()

    var = tempfile.mkdtemp(prefix="gatehouse-bench-")
    env = {**os.environ, "GATEHOUSE_VAR_DIR": var, "GATEHOUSE_API_RATE": "", "GATEHOUSE_LOG_LEVEL": "WARNING"}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    manage(env, "migrate", "--noinput", "-v", "0")
    manage(env, "shell", "-c", CREATE_POLICY)
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--no-demo", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        assert server.stdout is not None
        for line in server.stdout:
            if line.startswith("Login link: "):
                break
        token = manage(env, "create_api_token", "admin", "--scopes", "hooks").strip().splitlines()[-1]
        bare = [f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()] * options.concurrency
        gateway = [gateway_request(port, token, f"bench-{i}") for i in range(options.concurrency)]
        asyncio.run(measure(port, bare + gateway, 1.0))  # warm up both paths (and create the sessions)
        results: dict[str, list[float]] = {"bare": [], "gateway": []}
        for _ in range(options.rounds):
            results["bare"].append(asyncio.run(measure(port, bare, options.seconds)))
            results["gateway"].append(asyncio.run(measure(port, gateway, options.seconds)))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=20)
    bare_rps, gateway_rps = statistics.median(results["bare"]), statistics.median(results["gateway"])
    print(f"concurrency {options.concurrency}, {options.rounds} rounds of {options.seconds:g} s each, one serve process")
    print(f"bare Django JSON view (GET /healthz):              {bare_rps:8.0f} req/s  (rounds: {', '.join(f'{r:.0f}' for r in results['bare'])})")
    print(f"hook gateway, auto-allowed PreToolUse (a step):    {gateway_rps:8.0f} req/s  (rounds: {', '.join(f'{r:.0f}' for r in results['gateway'])})")
    print(f"gateway / bare:                                    {gateway_rps / bare_rps:8.0%}  (target >= 70 %)")


if __name__ == "__main__":
    main()
