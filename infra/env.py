"""Typed readers for the environment; a bad value stops the start with a clear message."""

from __future__ import annotations

import json
import os
import re
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_names(name: str, default: list[str]) -> list[str]:
    """A comma-separated list of environment variable names (e.g. `AWS_REGION,HTTPS_PROXY`)."""
    names = env_list(name, default)
    for item in names:
        if not _ENV_NAME.fullmatch(item):
            raise ImproperlyConfigured(f"{name}: {item!r} is not an environment variable name")
    return names


def env_json_object(name: str, default: dict[str, Any]) -> dict[str, Any]:
    """A JSON object (e.g. an MCP server map); anything else stops the start."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ImproperlyConfigured(f"{name} must be a JSON object, not {type(value).__name__}")
    return value


def email_url_settings(name: str, url: str) -> dict[str, Any]:
    """Django's EMAIL_* settings from an SMTP URL: `smtp://[user:password@]host[:port]`
    (plain, or STARTTLS with `?tls=1`), `smtp+tls://` (STARTTLS, port 587 by default) or
    `smtps://` (implicit TLS, port 465 by default). User and password are percent-decoded."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} is not a URL: {exc}") from None
    defaults = {"smtp": 25, "smtp+tls": 587, "smtps": 465}
    if parts.scheme not in defaults:
        raise ImproperlyConfigured(f"{name} must start with smtp://, smtp+tls:// or smtps://, not {parts.scheme!r}")
    if not parts.hostname:
        raise ImproperlyConfigured(f"{name} has no host")
    query = {key: values[-1].strip().lower() for key, values in parse_qs(parts.query).items()}
    tls = parts.scheme == "smtp+tls" or query.get("tls") in _TRUE
    return {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": parts.hostname,
        "EMAIL_PORT": port or defaults[parts.scheme],
        "EMAIL_HOST_USER": unquote(parts.username or ""),
        "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
        "EMAIL_USE_TLS": tls,
        "EMAIL_USE_SSL": parts.scheme == "smtps",
    }
