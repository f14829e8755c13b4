"""Just enough HTTP/1.1 for a forward proxy: read a request or response head strictly, read
its target (`host:port`, an absolute `http://` URL), frame a body (Content-Length or
chunked, RFC 9112 §6–7), copy it without reading past its end, and write small error
responses.

Strict on purpose: a proxy that reads a message one way while the server behind it reads
it another (two Content-Lengths, Content-Length beside chunked, a folded header, a bare CR)
lets a second request ride inside the first one's body. Such messages are refused.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\r\n]*)?")
# Headers that describe one hop; the proxy never forwards them (RFC 9110 §7.6.1).
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "proxy-authorization",
                        "proxy-authenticate", "te", "trailer", "upgrade"})


class BadMessage(Exception):
    """A message the proxy refuses to read; `status` is what the client is answered."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Head:
    start: tuple[str, str, str]  # request: method, target, version; response: version, status, reason
    headers: tuple[tuple[str, str], ...]  # (name as sent, value), in order

    def values(self, name: str) -> list[str]:
        return [v for n, v in self.headers if n.lower() == name]

    def tokens(self, name: str) -> set[str]:
        """The comma-separated tokens of every `name` header, in lower case."""
        return {t.strip().lower() for v in self.values(name) for t in v.split(",") if t.strip()}


async def read_head(reader: asyncio.StreamReader, *, max_headers: int, request: bool) -> Head | None:
    """The next message head, None when the peer closed before sending a byte of it.
    BadMessage for a malformed or oversized one (the reader's limit bounds its size)."""
    try:
        raw = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise BadMessage(400, "the message head ended before its blank line") from None
    except asyncio.LimitOverrunError:
        raise BadMessage(431, "the message head is too large") from None
    lines = raw[:-4].split(b"\r\n")
    while request and lines and not lines[0]:
        lines.pop(0)  # RFC 9112 §2.2: empty lines before a request line are ignored
    if not lines:
        raise BadMessage(400, "empty message head")
    start = _start_line(lines[0], request)
    if len(lines) - 1 > max_headers:
        raise BadMessage(431, f"more than {max_headers} header fields")
    return Head(start, tuple(_header(line) for line in lines[1:]))


def _start_line(line: bytes, request: bool) -> tuple[str, str, str]:
    if b"\r" in line or b"\n" in line or b"\x00" in line:
        raise BadMessage(400, "a control character in the start line")
    text = line.decode("latin-1")
    if request:
        parts = text.split(" ")
        if len(parts) != 3 or not all(parts) or not _TOKEN.fullmatch(line.split(b" ")[0]):
            raise BadMessage(400, "the request line is not `METHOD target HTTP/1.1`")
        if parts[2] not in ("HTTP/1.1", "HTTP/1.0"):
            raise BadMessage(505, f"unsupported HTTP version {parts[2][:16]!r}")
        return parts[0], parts[1], parts[2]
    version, _, rest = text.partition(" ")
    status, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or len(status) != 3 or not status.isdigit():
        raise BadMessage(502, "the server's status line is malformed")
    return version, status, reason


def _header(line: bytes) -> tuple[str, str]:
    name, colon, value = line.partition(b":")
    if not colon or not _TOKEN.fullmatch(name):
        # also a folded line (starts with a space) and `Name :` (a space before the colon)
        raise BadMessage(400, "a malformed header field")
    value = value.strip(b" \t")
    if _BAD_VALUE.search(value):
        raise BadMessage(400, f"a control character in the {name.decode('latin-1')[:40]} header")
    return name.decode("latin-1"), value.decode("latin-1")


@dataclass(frozen=True)
class Framing:
    kind: str  # "none", "length", "chunked" or "close" (a response read until the server closes)
    length: int = 0


def request_framing(head: Head) -> Framing:
    """How a request's body ends; BadMessage for ambiguous framing."""
    coding = head.tokens("transfer-encoding")
    lengths = head.values("content-length")
    if coding:
        if lengths:
            raise BadMessage(400, "both Transfer-Encoding and Content-Length")
        if coding != {"chunked"}:
            raise BadMessage(501, "only the chunked transfer coding is supported")
        return Framing("chunked")
    return _length(lengths, 400) if lengths else Framing("none")


def response_framing(head: Head, method: str) -> Framing:
    status = int(head.start[1])
    if method == "HEAD" or status < 200 or status in (204, 304):
        return Framing("none")
    coding = [t.strip().lower() for v in head.values("transfer-encoding") for t in v.split(",")]
    if coding:
        return Framing("chunked" if coding[-1] == "chunked" else "close")
    lengths = head.values("content-length")
    return _length(lengths, 502) if lengths else Framing("close")


def _length(values: list[str], status: int) -> Framing:
    found = {v.strip() for value in values for v in value.split(",")}
    if len(found) != 1 or not next(iter(found)).isdigit() or len(next(iter(found))) > 18:
        raise BadMessage(status, "a malformed or conflicting Content-Length")
    return Framing("length", int(found.pop()))


async def copy_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, framing: Framing,
                    *, max_line: int) -> None:
    """Copy one body as framed, and nothing after it (a pipelined next request stays unread)."""
    if framing.kind == "length":
        await _copy_exactly(reader, writer, framing.length)
    elif framing.kind == "chunked":
        await _copy_chunked(reader, writer, max_line)
    elif framing.kind == "close":
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()


async def _copy_exactly(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, length: int) -> None:
    while length > 0:
        chunk = await reader.read(min(length, 65536))
        if not chunk:
            raise asyncio.IncompleteReadError(b"", length)
        length -= len(chunk)
        writer.write(chunk)
        await writer.drain()


async def _line(reader: asyncio.StreamReader, max_line: int) -> bytes:
    try:
        line = await reader.readuntil(b"\r\n")
    except asyncio.LimitOverrunError:
        raise BadMessage(400, "a chunk line is too long") from None
    if len(line) > max_line:
        raise BadMessage(400, "a chunk line is too long")
    return line


async def _copy_chunked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, max_line: int) -> None:
    while True:
        line = await _line(reader, max_line)
        size = _CHUNK_SIZE.fullmatch(line[:-2])
        if size is None:
            raise BadMessage(400, "a malformed chunk size")
        writer.write(line)
        length = int(size.group(1), 16)
        if length == 0:
            break
        await _copy_exactly(reader, writer, length)
        if await reader.readexactly(2) != b"\r\n":
            raise BadMessage(400, "a chunk does not end with CRLF")
        writer.write(b"\r\n")
    while True:  # trailer fields, then the blank line
        line = await _line(reader, max_line)
        writer.write(line)
        if line == b"\r\n":
            break
    await writer.drain()


def parse_authority(text: str, default_port: int | None) -> tuple[str, int]:
    """(host, port) of `host:port` or `[v6]:port`; BadMessage 400 otherwise."""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise BadMessage(400, "an IPv6 address's bracket is not closed")
        host, rest = text[1:end], text[end + 1:]
    else:
        host, colon, port_text = text.rpartition(":")
        host, rest = (host, ":" + port_text) if colon else (text, "")
        if ":" in host:
            raise BadMessage(400, "an IPv6 address is written in brackets: [address]:port")
    if not rest and default_port is not None:
        return host, default_port
    port_text = rest[1:] if rest.startswith(":") else ""
    if not port_text.isdigit() or not 1 <= int(port_text) <= 65535 or len(port_text) > 5:
        raise BadMessage(400, f"{printable(text, 80)!r} is not host:port with a port from 1 to 65535")
    return host, int(port_text)


def parse_absolute(target: str) -> tuple[str, int, str]:
    """(host, port, path) of an absolute `http://` URL; BadMessage 400 for any other target."""
    scheme, sep, rest = target.partition("://")
    if not sep or scheme.lower() != "http":
        what = "an https URL goes through CONNECT" if scheme.lower() == "https" else (
            "this is a proxy: a request names an absolute http:// URL")
        raise BadMessage(400, what)
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    authority, path = rest[:cut], rest[cut:].partition("#")[0]
    if "@" in authority:
        raise BadMessage(400, "credentials in the URL are not forwarded")
    host, port = parse_authority(authority, 80)
    return host, port, path if path.startswith("/") else "/" + path


def serialize(start: str, headers: Iterable[tuple[str, str]]) -> bytes:
    lines = [start, *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def forwarded_headers(head: Head) -> list[tuple[str, str]]:
    """A message's headers without the hop-by-hop ones (and those its Connection names)."""
    named = head.tokens("connection") | HOP_BY_HOP
    return [(n, v) for n, v in head.headers if n.lower() not in named]


def printable(text: str, limit: int = 300) -> str:
    """`text` safe in a header value and a log line: printable ASCII only, bounded."""
    cleaned = "".join(c if " " <= c <= "~" else "?" for c in text)
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 3] + "..."


STATUS_TEXT = {400: "Bad Request", 403: "Forbidden", 405: "Method Not Allowed", 407: "Proxy Authentication Required",
               408: "Request Timeout", 413: "Content Too Large", 431: "Request Header Fields Too Large",
               501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
               505: "HTTP Version Not Supported"}


def error_response(status: int, message: str, extra: Iterable[tuple[str, str]] = ()) -> bytes:
    body = (message + "\n").encode("utf-8")
    headers = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body))),
               ("Connection", "close"), *extra]
    return serialize(f"HTTP/1.1 {status} {STATUS_TEXT.get(status, 'Error')}", headers) + body
