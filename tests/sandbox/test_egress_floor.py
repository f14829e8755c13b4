"""The egress proxy seen from inside a real bubblewrap sandbox with no network of its own:
only the bridged proxy leads out, and only where the policy allows."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from drivers.sandbox.egress import EgressProxy, proxy_environment
from tests.sandbox.targets import HttpTarget
from tests.sandbox.test_egress import by_policy


@pytest.fixture
def target() -> Iterator[HttpTarget]:
    with HttpTarget() as server:
        yield server


def test_the_environment_points_every_tool_at_the_bridge() -> None:
    assert proxy_environment(3128)["HTTPS_PROXY"] == "http://127.0.0.1:3128"
    assert proxy_environment(3128)["https_proxy"] == "http://127.0.0.1:3128"
    assert proxy_environment(3128, token="t0k")["http_proxy"] == "http://run:t0k@127.0.0.1:3128"
    assert "127.0.0.1" in proxy_environment(3128)["NO_PROXY"].split(",")
    assert "NO_PROXY" not in proxy_environment(3128, no_proxy=())  # the host's loopback through the proxy


# ---- inside a real sandbox -------------------------------------------------------------------

FLOOR = ["bwrap", "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
         "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
         "--tmpfs", "/tmp"]
INSIDE = """
socat TCP-LISTEN:3128,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/tmp/egress/egress.sock &
for i in $(seq 200); do (exec 3<>/dev/tcp/127.0.0.1/3128) 2>/dev/null && break; sleep 0.05; done
echo "allowed: $(curl -s -m 10 http://127.0.0.1:$ALLOWED/from-inside)"
echo "tunnel: $(curl -s -m 10 -p http://127.0.0.1:$ALLOWED/tunnel-from-inside)"
echo "unlisted: $(curl -s -m 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:$UNLISTED/admin)"
curl -s -m 5 --noproxy '*' http://127.0.0.1:$ALLOWED/direct >/dev/null; echo "direct: $?"
(exec 3<>/dev/tcp/127.0.0.1/$UNLISTED) 2>/dev/null; echo "devtcp: $?"
python3 -c "import socket; socket.create_connection(('127.0.0.1', $UNLISTED), timeout=5)" 2>/dev/null; echo "python: $?"
"""


async def test_inside_the_floor_only_the_proxy_leads_out(tmp_path: Path, target: HttpTarget) -> None:
    with HttpTarget() as unlisted:
        decide = by_policy({"allow": [f"127.0.0.1:{target.port}"], "default": "deny"})
        sockets = tmp_path / "egress"
        sockets.mkdir()
        environment = [part for name, value in proxy_environment(3128, no_proxy=()).items() for part in ("--setenv", name, value)]
        async with EgressProxy(sockets / "egress.sock", decide) as proxy:
            process = await asyncio.create_subprocess_exec(
                *FLOOR, "--bind", str(sockets), "/tmp/egress", *environment, "--setenv", "ALLOWED", str(target.port),
                "--setenv", "UNLISTED", str(unlisted.port), "bash", "-c", INSIDE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(process.communicate(), 120)
        report = dict(line.split(": ", 1) for line in out.decode().splitlines() if ": " in line)
        assert json.loads(report["allowed"])["path"] == "/from-inside", (out, err)
        assert json.loads(report["tunnel"])["path"] == "/tunnel-from-inside"
        assert report["unlisted"] == "403"
        assert report["direct"] != "0" and report["devtcp"] != "0" and report["python"] != "0"
        assert unlisted.requests == []
        assert [r["path"] for r in target.requests] == ["/from-inside", "/tunnel-from-inside"]
        assert proxy.counts.refused == 1
