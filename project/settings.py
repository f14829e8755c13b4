"""Gatehouse settings: one module, every knob read from the environment.

The embedded default needs nothing: SQLite under var/ and the in-memory channel layer.
DATABASE_URL (PostgreSQL) and REDIS_URL (channels-redis) switch to the scale-out shape.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONCE, NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from drivers.agent_env import is_forbidden
from drivers.mcp_servers import validate_mcp_servers
from infra.env import email_url_settings, env_bool, env_float, env_int, env_json_object, env_list, env_names, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("GATEHOUSE_VAR_DIR", str(BASE_DIR / "var"))).resolve()

DEBUG = env_bool("GATEHOUSE_DEBUG", False)
SECRET_KEY = env_str("GATEHOUSE_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG and env_bool("GATEHOUSE_PRODUCTION", False):
        raise ImproperlyConfigured("GATEHOUSE_SECRET_KEY must be set in production")
    # A per-checkout key, created once under var/, so the embedded default needs no setup
    # and no key is ever committed.
    _key_file = VAR_DIR / "secret_key"
    if not _key_file.exists():
        from django.core.management.utils import get_random_secret_key

        VAR_DIR.mkdir(parents=True, exist_ok=True)
        _key_file.write_text(get_random_secret_key())
        _key_file.chmod(0o600)
    SECRET_KEY = _key_file.read_text().strip()

ALLOWED_HOSTS = env_list("GATEHOUSE_ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("GATEHOUSE_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    # Before "channels": its `runworker` command replaces channels' own.
    "drivers",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    "csp",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "template_partials",
    "channels",
    "runs",
    "approvals",
    "integrations",
    "repos",
]

MIDDLEWARE = [
    "project.middleware.BodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "project.csp.ConsoleCSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lock-out page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "project.urls"
ASGI_APPLICATION = "project.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "project.health.context",
                "project.csp.nonce",
            ],
        },
    }
]

# --- Database -------------------------------------------------------------------------
# WAL lets the console read while the worker writes; IMMEDIATE makes a write transaction
# take the lock at BEGIN, so concurrent writers queue instead of failing half-way through.
_SQLITE_OPTIONS = {
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
}
_database_url = env_str("DATABASE_URL")
if _database_url:
    try:
        DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=0)}
    except Exception as exc:  # dj_database_url raises several types for a bad URL
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from None
    if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
        DATABASES["default"]["OPTIONS"] = dict(_SQLITE_OPTIONS)
else:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(VAR_DIR / "gatehouse.sqlite3"),
            "OPTIONS": dict(_SQLITE_OPTIONS),
            # A file, not memory: tests that start a worker process share it.
            # One per test process, so parallel test runs never share a file.
            "TEST": {"NAME": env_str("GATEHOUSE_TEST_DB", str(VAR_DIR / f"test-gatehouse-{os.getpid()}.sqlite3"))},
        }
    }
# Connections are kept between requests and worker calls (checked before reuse): opening
# one per call cost a PostgreSQL connect, or SQLite's WAL pragmas, on every gate.
DATABASES["default"]["CONN_MAX_AGE"] = env_int("GATEHOUSE_DB_CONN_MAX_AGE", 300)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# On PostgreSQL a pool (psycopg_pool) keeps the connections instead: under ASGI Django runs
# each request's sync code on a thread of its own, so a kept per-thread connection was a
# new PostgreSQL connection (a backend process forked) for every API request. Django hands
# a connection back to the pool when a request or a worker call ends; the pool checks one
# before lending it. GATEHOUSE_DB_POOL_MAX per process (2 web + 2 workers: 4 times that).
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env_bool("GATEHOUSE_DB_POOL", True):
    DATABASES["default"]["CONN_MAX_AGE"] = 0  # the pool keeps them (Django refuses both)
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1, "max_size": env_int("GATEHOUSE_DB_POOL_MAX", 10), "timeout": 30.0,
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Channels -------------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 reads with a 5 s socket timeout by default, the same 5 s channels-redis
            # blocks in BZPOPMIN: an idle worker's receive then fails with "Timeout reading".
            # Read timeouts longer than the blocking pop keep idle receives alive.
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": 30, "socket_connect_timeout": 2}],
                "prefix": env_str("GATEHOUSE_CHANNEL_PREFIX", "gatehouse"),
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Auth, sessions, security -----------------------------------------------------------
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "inbox"
LOGOUT_REDIRECT_URL = "login"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
CSRF_FAILURE_VIEW = "project.api.csrf_failure"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG and env_bool("GATEHOUSE_PRODUCTION", False):
    SECURE_SSL_REDIRECT = env_bool("GATEHOUSE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("GATEHOUSE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("GATEHOUSE_HSTS_PRELOAD", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content-Security-Policy (django-csp; docs/security.md). Scripts and styles come from
# /static/ (htmx and its ws extension included) or carry the response's nonce; no eval, no
# inline style; fetches and sockets only to this host (project.csp adds ws:// and wss://
# of the request's host to connect-src). `data:` images: the console's empty favicon.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Login links printed by `make run` work once and expire after this many seconds.
GATEHOUSE_LOGIN_LINK_MAX_AGE = env_int("GATEHOUSE_LOGIN_LINK_MAX_AGE", 15 * 60)

# Password logins (console and admin) are throttled by django-axes: after this many
# failures for one username from one client address, that pair is refused for the cool-off
# (each attempt meanwhile restarts it). The one-time login link is not a password login.
# Counts live in the database (SQLite or PostgreSQL alike). Behind a proxy, run Daphne with
# --proxy-headers so the address is the browser's, not the proxy's (docs/security.md).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
GATEHOUSE_LOGIN_FAILURE_LIMIT = env_int("GATEHOUSE_LOGIN_FAILURE_LIMIT", 5)
GATEHOUSE_LOGIN_COOLOFF_MINUTES = env_float("GATEHOUSE_LOGIN_COOLOFF_MINUTES", 15.0)
if GATEHOUSE_LOGIN_FAILURE_LIMIT < 1:
    raise ImproperlyConfigured(f"GATEHOUSE_LOGIN_FAILURE_LIMIT={GATEHOUSE_LOGIN_FAILURE_LIMIT} must be at least 1")
if GATEHOUSE_LOGIN_COOLOFF_MINUTES <= 0:
    raise ImproperlyConfigured(f"GATEHOUSE_LOGIN_COOLOFF_MINUTES={GATEHOUSE_LOGIN_COOLOFF_MINUTES} must be more than 0")
AXES_ENABLED = env_bool("GATEHOUSE_LOGIN_THROTTLE", True)
AXES_FAILURE_LIMIT = GATEHOUSE_LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=GATEHOUSE_LOGIN_COOLOFF_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "project.login_throttle.lockout_response"

# --- REST framework ---------------------------------------------------------------------
REST_FRAMEWORK = {
    # Hashed, scoped, expiring tokens (integrations.tokens); first-API tokens still work.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "integrations.tokens.ScopedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Views that name their own permission_classes list TokenScope too (a test checks).
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated", "integrations.tokens.TokenScope"],
    "DEFAULT_THROTTLE_CLASSES": ["integrations.throttling.TokenRateThrottle"],
    "DEFAULT_PAGINATION_CLASS": "project.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "project.api.exception_handler",
    "DEFAULT_PARSER_CLASSES": ["project.api.StrictJSONParser"],
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Gatehouse API",
    "DESCRIPTION": "Runs of AI coding agents and the human decisions they wait on.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "integrations.schema.add_hook_paths",
        "project.api.document_errors",
    ],
}

# --- Static files -------------------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Gatehouse ------------------------------------------------------------------------------
GATEHOUSE_WORKSPACES_DIR = Path(env_str("GATEHOUSE_WORKSPACES_DIR", str(VAR_DIR / "workspaces"))).resolve()
# Where a run may name its workspace: empty = any existing directory the server can reach
# (the embedded default, one trusted operator); set it when several people start runs.
GATEHOUSE_WORKSPACE_ROOTS = [Path(p).resolve() for p in env_list("GATEHOUSE_WORKSPACE_ROOTS", [])]
GATEHOUSE_RUNTIME_DIR = Path(env_str("GATEHOUSE_RUNTIME_DIR", str(VAR_DIR / "runtime"))).resolve()
# Repositories (docs/repositories.md): which URLs an administrator may register (globs,
# fnmatch; empty = any), the key of their stored credentials (default: derived from
# SECRET_KEY), where a worker keeps its mirrors, and how often it fetches one at most.
GATEHOUSE_REPOSITORY_URLS = env_list("GATEHOUSE_REPOSITORY_URLS", [])
GATEHOUSE_REPOSITORY_KEY = env_str("GATEHOUSE_REPOSITORY_KEY", "")
GATEHOUSE_REPOSITORY_CACHE_DIR = Path(env_str("GATEHOUSE_REPOSITORY_CACHE_DIR", str(VAR_DIR / "repositories"))).resolve()
GATEHOUSE_REPOSITORY_FETCH_MINUTES = env_float("GATEHOUSE_REPOSITORY_FETCH_MINUTES", 5.0)
# How often a waiting run re-reads its approval row when no doorbell rings (seconds).
GATEHOUSE_WAIT_POLL_S = env_float("GATEHOUSE_WAIT_POLL_S", 1.0)
# On PostgreSQL a decision also rings its run's worker from the database itself (a trigger's
# NOTIFY at commit; infra/pg_doorbell.py), ahead of the channel layer's doorbell.
GATEHOUSE_PG_DOORBELL = env_bool("GATEHOUSE_PG_DOORBELL", True)
# A worker renews its lease on each run this often; a lease older than the TTL is free.
GATEHOUSE_LEASE_HEARTBEAT_S = env_float("GATEHOUSE_LEASE_HEARTBEAT_S", 5.0)
GATEHOUSE_LEASE_TTL_S = env_float("GATEHOUSE_LEASE_TTL_S", 30.0)
# A worker looks for queued runs and expired leases this often (the doorbell's backstop).
GATEHOUSE_RECONCILE_S = env_float("GATEHOUSE_RECONCILE_S", 5.0)
# Runs one worker process executes at once (a run waiting on a person holds a slot until it
# hibernates); more stay queued and are taken as slots free up, by any worker.
GATEHOUSE_WORKER_MAX_RUNS = env_int("GATEHOUSE_WORKER_MAX_RUNS", max(8, 8 * (os.cpu_count() or 1)))
# Workspaces and agent homes of runs finished longer ago than this are deleted (daily).
GATEHOUSE_RETENTION_DAYS = env_float("GATEHOUSE_RETENTION_DAYS", 30.0)
# A run waiting on a person longer than this hibernates: its agent process is stopped and
# woken by the decision (0 = never).
GATEHOUSE_HIBERNATE_AFTER_S = env_float("GATEHOUSE_HIBERNATE_AFTER_S", 60.0)
# Bytes of a command's output kept on a step and in the timeline.
GATEHOUSE_OUTPUT_LIMIT = env_int("GATEHOUSE_OUTPUT_LIMIT", 64 * 1024)
# An agent CLI that writes nothing this long while no decision is pending fails its run.
GATEHOUSE_AGENT_IDLE_TIMEOUT_S = env_float("GATEHOUSE_AGENT_IDLE_TIMEOUT_S", 300.0)
# API request bodies larger than this are refused with 413 before they are read.
GATEHOUSE_MAX_BODY_BYTES = env_int("GATEHOUSE_MAX_BODY_BYTES", 2 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = GATEHOUSE_MAX_BODY_BYTES
GATEHOUSE_COMMAND_TIMEOUT_S = env_float("GATEHOUSE_COMMAND_TIMEOUT_S", 600.0)
GATEHOUSE_CLAUDE_BIN = env_str("GATEHOUSE_CLAUDE_BIN")
GATEHOUSE_CODEX_BIN = env_str("GATEHOUSE_CODEX_BIN")
GATEHOUSE_AGENTS_DIR = Path(env_str("GATEHOUSE_AGENTS_DIR", str(BASE_DIR / ".agents"))).resolve()
GATEHOUSE_ALLOW_BYPASS_PERMISSIONS = env_bool("GATEHOUSE_ALLOW_BYPASS_PERMISSIONS", False)
# The OS sandbox floor under every run (docs/sandbox.md): each process Gatehouse starts
# for a run runs inside bubblewrap. "off" is the administrator's explicit opt-out: runs
# then start with no floor at all, as before it existed.
GATEHOUSE_SANDBOX = env_str("GATEHOUSE_SANDBOX", "on").strip().lower() or "on"
if GATEHOUSE_SANDBOX not in ("on", "off"):
    raise ImproperlyConfigured(f"GATEHOUSE_SANDBOX={GATEHOUSE_SANDBOX!r} must be on or off")
# Trees shown read-only inside the floor although they lie in one it hides (the server
# user's home, Gatehouse's checkout): e.g. a node or python installed under the home, or
# an MCP server's program. Comma-separated absolute paths.
GATEHOUSE_SANDBOX_READ_PATHS = [os.path.abspath(os.path.expanduser(p)) for p in env_list("GATEHOUSE_SANDBOX_READ_PATHS", [])]
# Names the egress proxy resolves to fixed addresses instead of asking DNS (a package mirror
# on the internal network, split-horizon names): JSON {"name": ["address", ...]}. The
# network section still decides them by these addresses (docs/network.md).
GATEHOUSE_EGRESS_HOSTS = env_json_object("GATEHOUSE_EGRESS_HOSTS", {})
for _name, _addresses in GATEHOUSE_EGRESS_HOSTS.items():
    if not isinstance(_addresses, list) or not _addresses or not all(isinstance(a, str) for a in _addresses):
        raise ImproperlyConfigured(f"GATEHOUSE_EGRESS_HOSTS: {_name!r} must map to a non-empty list of addresses")
# Four eyes when off: a reviewer cannot decide the approvals of runs they started (403
# own_run). On by default, so a single operator can still review their own runs.
GATEHOUSE_REVIEW_OWN_RUNS = env_bool("GATEHOUSE_REVIEW_OWN_RUNS", True)
GATEHOUSE_CODEX_BASE_URL = env_str("GATEHOUSE_CODEX_BASE_URL")
GATEHOUSE_CODEX_MODEL = env_str("GATEHOUSE_CODEX_MODEL", "gpt-5-codex")
GATEHOUSE_CODEX_ENV_KEY = env_str("GATEHOUSE_CODEX_ENV_KEY", "OPENAI_API_KEY")
GATEHOUSE_CLAUDE_MODEL = env_str("GATEHOUSE_CLAUDE_MODEL")
if is_forbidden(GATEHOUSE_CODEX_ENV_KEY):
    raise ImproperlyConfigured(
        f"GATEHOUSE_CODEX_ENV_KEY={GATEHOUSE_CODEX_ENV_KEY!r}: Gatehouse's own variables never reach an agent; "
        "name the model key something else (e.g. OPENAI_API_KEY)"
    )
# Agents get an allow-listed environment (drivers/agent_env.py), never the server's whole
# environment. GATEHOUSE_AGENT_ENV adds names taken from the server's environment
# (comma-separated, e.g. "AWS_REGION,HTTPS_PROXY"); GATEHOUSE_*, DJANGO_*, DATABASE_URL and
# REDIS_URL are never passed, even when listed.
GATEHOUSE_AGENT_ENV = env_names("GATEHOUSE_AGENT_ENV", [])
# Values set for every agent process, e.g. a model proxy URL (settings only; tests use it to
# point the CLIs at fake model servers).
GATEHOUSE_AGENT_ENV_VALUES: dict[str, str] = {}
# MCP servers Claude Code may start, in Claude's `mcpServers` shape (a JSON object:
# {"name": {"command": ..., "args": [...], "env": {...}}} or {"name": {"type": "http", "url": ...}}).
# Only these run (--mcp-config + --strict-mcp-config); a workspace's .mcp.json never does,
# and every MCP tool call still goes through the gate.
try:
    GATEHOUSE_CLAUDE_MCP_SERVERS = validate_mcp_servers(env_json_object("GATEHOUSE_CLAUDE_MCP_SERVERS", {}))
except ValueError as exc:
    raise ImproperlyConfigured(f"GATEHOUSE_CLAUDE_MCP_SERVERS: {exc}") from None
# MCP servers Codex may start, in the same shape (stdio and http; Codex has no SSE). Each tool
# call is asked of the gate (Codex's own question before it, `mcp__<server>__<tool>`), and a
# server's forms (MCP elicitation) reach a person as questions.
try:
    GATEHOUSE_CODEX_MCP_SERVERS = validate_mcp_servers(env_json_object("GATEHOUSE_CODEX_MCP_SERVERS", {}))
except ValueError as exc:
    raise ImproperlyConfigured(f"GATEHOUSE_CODEX_MCP_SERVERS: {exc}") from None
# ACP agents by name: {"name": "command line" | ["argv", ...] | {"command": ..., "profile": ...}}.
# Added to (or replacing) the built-in entries for the agents `make agents` installs.
GATEHOUSE_ACP_AGENTS = env_json_object("GATEHOUSE_ACP_AGENTS", {})
# OpenCode, for the `opencode` driver and the ACP agent `opencode`: the binary, an
# OpenAI-compatible chat-completions endpoint, its model, and the variable holding the key.
GATEHOUSE_OPENCODE_BIN = env_str("GATEHOUSE_OPENCODE_BIN")
GATEHOUSE_OPENCODE_BASE_URL = env_str("GATEHOUSE_OPENCODE_BASE_URL")
GATEHOUSE_OPENCODE_MODEL = env_str("GATEHOUSE_OPENCODE_MODEL", "gpt-4.1")
GATEHOUSE_OPENCODE_ENV_KEY = env_str("GATEHOUSE_OPENCODE_ENV_KEY", "OPENAI_API_KEY")
if is_forbidden(GATEHOUSE_OPENCODE_ENV_KEY):
    raise ImproperlyConfigured(
        f"GATEHOUSE_OPENCODE_ENV_KEY={GATEHOUSE_OPENCODE_ENV_KEY!r}: Gatehouse's own variables never reach an agent; "
        "name the model key something else (e.g. OPENAI_API_KEY)"
    )

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("GATEHOUSE_LOG_LEVEL", "INFO")},
    "loggers": {
        "daphne": {"level": "WARNING"},
        "django.channels.server": {"level": "WARNING"},
        # django-axes: its warnings (repeated failures, lock-outs) stay; its start banner and
        # per-attempt housekeeping lines would be noise in every command.
        "axes": {"level": "WARNING"},
    },
}
# --- Integrations (README, "Integrations") ----------------------------------------------------
_PRODUCTION = not DEBUG and env_bool("GATEHOUSE_PRODUCTION", False)
# Requests per token: N/s, N/m, N/h or N/d; empty = no rate limit.
GATEHOUSE_API_RATE = env_str("GATEHOUSE_API_RATE", "100/s").strip()
if GATEHOUSE_API_RATE and not re.fullmatch(r"[1-9][0-9]*/(s|m|h|d)", GATEHOUSE_API_RATE):
    raise ImproperlyConfigured(f"GATEHOUSE_API_RATE={GATEHOUSE_API_RATE!r} is not a rate such as 100/s (or empty for none)")
# How long an Idempotency-Key is remembered.
GATEHOUSE_IDEMPOTENCY_TTL_S = env_int("GATEHOUSE_IDEMPOTENCY_TTL_S", 24 * 3600)
# The hook gateway waits this long for a reviewer before answering the timeout fallback;
# keep it below the hook's own `timeout` (60 s in the README's settings.json).
GATEHOUSE_HOOK_WAIT_S = env_float("GATEHOUSE_HOOK_WAIT_S", 55.0)
# The gateway's own database threads per web process (each keeps a connection): SQLite
# takes one writer at a time, so one; PostgreSQL lets a few overlap their round trips.
GATEHOUSE_HOOK_DB_THREADS = env_int(
    "GATEHOUSE_HOOK_DB_THREADS", 1 if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3" else 4
)
if GATEHOUSE_HOOK_DB_THREADS < 1:
    raise ImproperlyConfigured(f"GATEHOUSE_HOOK_DB_THREADS={GATEHOUSE_HOOK_DB_THREADS} must be at least 1")
# A hook session with no call for this many hours (and no SessionEnd) ends `completed`; 0 = never.
GATEHOUSE_HOOK_IDLE_CLOSE_H = env_float("GATEHOUSE_HOOK_IDLE_CLOSE_H", 12.0)
# Webhooks: targets on loopback or private addresses only when allowed (off in production).
GATEHOUSE_WEBHOOK_ALLOW_PRIVATE = env_bool("GATEHOUSE_WEBHOOK_ALLOW_PRIVATE", not _PRODUCTION)
GATEHOUSE_WEBHOOK_TIMEOUT_S = env_float("GATEHOUSE_WEBHOOK_TIMEOUT_S", 10.0)
# The first retry waits this long, each next one twice as long (at most 15 min) ...
GATEHOUSE_WEBHOOK_BACKOFF_S = env_float("GATEHOUSE_WEBHOOK_BACKOFF_S", 5.0)
# ... and no attempt starts later than this after the event (then the delivery failed).
GATEHOUSE_WEBHOOK_RETRY_FOR_S = env_float("GATEHOUSE_WEBHOOK_RETRY_FOR_S", 6 * 3600.0)
# How often the worker's sender looks for due deliveries.
GATEHOUSE_WEBHOOK_POLL_S = env_float("GATEHOUSE_WEBHOOK_POLL_S", 1.0)
# Server-Sent Events: a comment line this often keeps idle streams open; a stream ends
# after GATEHOUSE_SSE_MAX_S (the client reconnects with Last-Event-ID and loses nothing).
GATEHOUSE_SSE_KEEPALIVE_S = env_float("GATEHOUSE_SSE_KEEPALIVE_S", 15.0)
GATEHOUSE_SSE_POLL_S = env_float("GATEHOUSE_SSE_POLL_S", 1.0)
GATEHOUSE_SSE_MAX_S = env_float("GATEHOUSE_SSE_MAX_S", 3600.0)
# /metrics (Prometheus text format) answers only `Authorization: Bearer <this token>`;
# empty = the endpoint is off (404). docs/operations.md, "Metrics".
GATEHOUSE_METRICS_TOKEN = env_str("GATEHOUSE_METRICS_TOKEN", "").strip()

# --- Notifications (docs/notifications.md) ---------------------------------------------------
# E-mail through Django's mail framework: GATEHOUSE_EMAIL_URL (smtp://, smtp+tls://, smtps://,
# e.g. smtp://user:pass@mail.example:587?tls=1) sets EMAIL_HOST, _PORT, _USE_TLS/_SSL, _HOST_USER
# and _HOST_PASSWORD; without it e-mail is off.
GATEHOUSE_EMAIL_URL = env_str("GATEHOUSE_EMAIL_URL").strip()
GATEHOUSE_EMAIL_ENABLED = bool(GATEHOUSE_EMAIL_URL)
if GATEHOUSE_EMAIL_ENABLED:
    globals().update(email_url_settings("GATEHOUSE_EMAIL_URL", GATEHOUSE_EMAIL_URL))
DEFAULT_FROM_EMAIL = env_str("GATEHOUSE_DEFAULT_FROM_EMAIL", "Gatehouse <gatehouse@localhost>")
EMAIL_TIMEOUT = env_float("GATEHOUSE_EMAIL_TIMEOUT_S", 10.0)
# An incoming-webhook URL of Slack or Teams (its path is a secret: never logged or shown);
# empty = no chat message. Sent from the worker, as webhooks are, under the same address rules.
GATEHOUSE_CHAT_WEBHOOK_URL = env_str("GATEHOUSE_CHAT_WEBHOOK_URL").strip()
# Add Slack's Block Kit buttons to the chat message (off: `text` only, which Teams and Slack both show).
GATEHOUSE_CHAT_SLACK_BLOCKS = env_bool("GATEHOUSE_CHAT_SLACK_BLOCKS", False)
# The console's address as people reach it: the one-tap links in notifications start with it.
GATEHOUSE_BASE_URL = env_str("GATEHOUSE_BASE_URL", "http://127.0.0.1:8000").strip().rstrip("/")
# A one-tap link expires with its approval's deadline; one without a deadline after this.
GATEHOUSE_LINK_MAX_AGE_S = env_float("GATEHOUSE_LINK_MAX_AGE_S", 24 * 3600.0)

# The server's default run policy (the farthest layer); None = the built-in defaults.
GATEHOUSE_DEFAULT_RUN_POLICY = None
