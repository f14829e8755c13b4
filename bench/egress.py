"""Benchmark: one connection through the egress proxy to an allowed host vs direct.

Each sample opens a new connection and makes one `GET` (`Connection: close`) to a local
HTTP server, reading the whole answer:

- direct: TCP to the server;
- proxy (socket): the proxy's Unix socket, absolute-form request (the proxy's own cost:
  parse, `decide` by a network section, connect, relay);
- proxy (bridged): TCP to a socat bridge in front of the socket, as a process inside the
  floor reaches it (adds socat's fork per connection);
- CONNECT (bridged): a tunnel through the bridge, then the same GET inside it.

The proxy runs in a process of its own (its event loop is not the client's). Prints p50 and
p90 of each and the p50 added to direct; never pass/fail.

Run: .venv/bin/python bench/egress.py [samples]
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from approvals.policy.network import network_decide, network_policy  # noqa: E402
from drivers.sandbox.egress import EgressProxy  # noqa: E402
from tests.sandbox.targets import Bridge, HttpTarget  # noqa: E402


def _serve_proxy(socket_path: str, target_port: int, ready: multiprocessing.synchronize.Event) -> None:
    policy = network_policy({"allow": [f"127.0.0.1:{target_port}"], "default": "deny"})

    async def decide(host: str, port: int, addresses: tuple[str, ...]) -> tuple[bool, str]:
        verdict = network_decide(policy, host, port, addresses)
        return verdict.decision == "allow", verdict.reason

    async def main() -> None:
        async with EgressProxy(socket_path, decide):
            ready.set()
            await asyncio.Event().wait()

    asyncio.run(main())


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def direct(port: int) -> Callable[[], bytes]:
    def sample() -> bytes:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(b"GET /bench HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return _read_all(sock)
    return sample


def through_socket(path: str, port: int) -> Callable[[], bytes]:
    def sample() -> bytes:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(path)
            sock.sendall(f"GET http://127.0.0.1:{port}/bench HTTP/1.1\r\nConnection: close\r\n\r\n".encode())
            return _read_all(sock)
    return sample


def through_bridge(bridge_port: int, port: int) -> Callable[[], bytes]:
    def sample() -> bytes:
        with socket.create_connection(("127.0.0.1", bridge_port)) as sock:
            sock.sendall(f"GET http://127.0.0.1:{port}/bench HTTP/1.1\r\nConnection: close\r\n\r\n".encode())
            return _read_all(sock)
    return sample


def tunnel(bridge_port: int, port: int) -> Callable[[], bytes]:
    def sample() -> bytes:
        with socket.create_connection(("127.0.0.1", bridge_port)) as sock:
            sock.sendall(f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
            answer = b""
            while not answer.endswith(b"\r\n\r\n"):
                answer += sock.recv(1)
            sock.sendall(b"GET /bench HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return _read_all(sock)
    return sample


def measure(samples: int, kinds: dict[str, Callable[[], bytes]]) -> dict[str, list[float]]:
    for run in kinds.values():  # warm up, and check each answers 200
        for _ in range(20):
            assert run().startswith(b"HTTP/1.1 200"), "the benchmark's request failed"
    times: dict[str, list[float]] = {name: [] for name in kinds}
    for _ in range(samples):  # interleaved, so drift on a shared machine hits every kind alike
        for name, run in kinds.items():
            start = time.perf_counter()
            run()
            times[name].append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    with HttpTarget() as target, tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "egress.sock")
        ready = multiprocessing.get_context("fork").Event()
        proxy = multiprocessing.get_context("fork").Process(target=_serve_proxy, args=(path, target.port, ready),
                                                            daemon=True)
        proxy.start()
        ready.wait(10)
        bridge = Bridge(Path(path))
        try:
            times = measure(samples, {
                "direct": direct(target.port),
                "proxy (socket)": through_socket(path, target.port),
                "proxy (bridged)": through_bridge(bridge.port, target.port),
                "CONNECT (bridged)": tunnel(bridge.port, target.port),
            })
        finally:
            bridge.close()
            proxy.terminate()
            proxy.join(5)
    base = statistics.median(times["direct"])
    print(f"egress proxy: one new connection + GET to an allowed host, {samples} samples each (ms)")
    for name, values in times.items():
        p50 = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        added = "" if name == "direct" else f"   +{p50 - base:.2f} ms p50 over direct"
        print(f"  {name:<18} p50 {p50:6.2f}   p90 {p90:6.2f}{added}")


if __name__ == "__main__":
    main()
