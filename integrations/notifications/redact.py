"""What a notification may quote of agent text: likely secrets masked, then cut short.

A notification leaves Gatehouse (a mail server, a chat service, a phone's lock screen), so
the request it quotes is masked more eagerly than the console shows it: values of variables
and options named like credentials, credentials in URLs, bearer tokens, private keys and the
well-known token formats."""

from __future__ import annotations

import re

from approvals.policy.risks import secret_variable

MASK = "[redacted]"

_PRIVATE_KEY = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.DOTALL)
_TOKENS = re.compile(
    r"\b(gh[oprsu]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{16,}|sk-[A-Za-z0-9_-]{16,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|whsec_[A-Za-z0-9_-]{16,}|gh_[A-Za-z0-9_]{20,}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,})"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)(\s+)[A-Za-z0-9._~+/=-]{8,}")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@]*):[^\s/@]+@")
# NAME=value, NAME: value, --name=value, --name value, "name": "value"
_ASSIGNMENT = re.compile(r"""(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>["']?\s*[=:]\s*)(?P<value>"[^"]*"|'[^']*'|[^\s"',;&|]+)""")
_OPTION = re.compile(r"(?P<name>--?[A-Za-z][A-Za-z0-9_-]*)(?P<sep>\s+)(?P<value>\"[^\"]*\"|'[^']*'|[^\s\"'-][^\s\"']*)")


def _mask_named(match: re.Match[str]) -> str:
    name = match.group("name").lstrip("-")
    if not secret_variable(name.replace("-", "_")) or name.lower() in ("keyfile", "session-id"):
        return match.group(0)
    return f"{match.group('name')}{match.group('sep')}{MASK}"


def redact(text: str) -> str:
    text = _PRIVATE_KEY.sub(MASK, text)
    text = _URL_PASSWORD.sub(rf"\1:{MASK}@", text)
    text = _BEARER.sub(rf"\1\2{MASK}", text)
    text = _TOKENS.sub(MASK, text)
    text = _ASSIGNMENT.sub(_mask_named, text)
    return _OPTION.sub(_mask_named, text)


def preview(text: str, limit: int) -> tuple[str, bool]:
    """The redacted text cut to `limit` characters, and whether it was cut."""
    masked = redact(text)
    if len(masked) <= limit:
        return masked, False
    return masked[: max(limit - 1, 0)].rstrip() + "…", True


def one_line(text: str, limit: int) -> str:
    """Redacted, on one line (a mail subject, a chat heading), cut to `limit`."""
    return preview(" ".join(text.split()), limit)[0]
