"""A real SMTP server (aiosmtpd) on 127.0.0.1 and a free port, keeping what it receives."""

from __future__ import annotations

import email
import socket
from email.message import Message
from typing import Any

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class _Keep:
    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((list(envelope.rcpt_tos), email.message_from_bytes(envelope.content)))
        return "250 Message accepted for delivery"


class SMTPServer:
    def __init__(self) -> None:
        self.handler = _Keep()
        self.port = free_port()
        self.controller = Controller(self.handler, hostname="127.0.0.1", port=self.port)

    @property
    def messages(self) -> list[tuple[list[str], Message]]:
        return self.handler.messages

    def __enter__(self) -> SMTPServer:
        self.controller.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.controller.stop()


def parts(message: Message) -> dict[str, str]:
    """{content type: decoded text} of a message's parts."""
    found = {}
    for part in message.walk():
        if part.get_content_maintype() == "text":
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            found[part.get_content_type()] = payload.decode(part.get_content_charset() or "utf-8")
    return found
