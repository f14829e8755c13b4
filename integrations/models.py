"""What integrations store: API tokens, idempotency keys, hook sessions, webhooks."""

from __future__ import annotations

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from runs.events import Event as ActivityEvent


class Scope(models.TextChoices):
    """What a token may do, checked on every endpoint on top of the user's permissions."""

    READ = "read", "Read runs, approvals, sessions, drivers and streams"
    RUNS_WRITE = "runs:write", "Start and cancel runs, change session modes"
    APPROVALS_DECIDE = "approvals:decide", "Approve, deny, answer; revoke grants"
    HOOKS = "hooks", "Call the agent hook gateway"
    WEBHOOKS_MANAGE = "webhooks:manage", "Register and remove webhook endpoints"


ALL_SCOPES: tuple[str, ...] = tuple(Scope.values)


class ApiToken(models.Model):
    """A bearer token for the API. Only its SHA-256 is stored; `prefix` identifies it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, help_text="The token's first characters, for recognising it.")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires.")
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Converted from a plain-text DRF token of the first API: full scope until revoked.
    legacy = models.BooleanField(default=False)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class IdempotencyKey(models.Model):
    """The first response to a POST sent with `Idempotency-Key`, replayed to its retries."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of the method, path and body.")
    # Null while the first request is still being answered.
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    body = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="idempotency_user_key_unique")]
        # The purge of keys past their 24 h reads this.
        indexes = [models.Index(fields=["created_at"], name="idempotency_created_idx")]

    def __str__(self) -> str:
        return f"{self.key} ({self.status_code or 'in progress'})"


class HookSession(models.Model):
    """A Claude Code session that calls the hook gateway: its Gatehouse session and run."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    agent = models.CharField(max_length=32, default="claude-code")
    external_id = models.CharField(max_length=200, help_text="The agent's own session id.")
    session = models.ForeignKey("runs.AgentSession", on_delete=models.CASCADE, related_name="+")
    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "agent", "external_id"], name="hook_session_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.agent} {self.external_id}"


class HookStep(models.Model):
    """Which step a native tool call became (so PostToolUse finds it)."""

    hook_session = models.ForeignKey(HookSession, on_delete=models.CASCADE, related_name="steps")
    tool_use_id = models.CharField(max_length=200)
    step = models.OneToOneField("runs.Step", on_delete=models.CASCADE, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["hook_session", "tool_use_id"], name="hook_step_tool_use_idx")]


class WebhookEndpoint(models.Model):
    """Where Gatehouse posts signed events."""

    class Event(models.TextChoices):
        """A webhook's event: an approval's two are the activity events of the same name
        (a question's `user-input.*` are sent as them), `run.finished` any run's end."""

        APPROVAL_REQUESTED = ActivityEvent.APPROVAL_REQUESTED.value
        APPROVAL_RESOLVED = ActivityEvent.APPROVAL_RESOLVED.value
        RUN_FINISHED = "run.finished"

    url = models.URLField(max_length=2000)
    events = models.JSONField(default=list, help_text='e.g. ["approval.requested", "run.finished"]')
    # The HMAC key has to be read to sign, so it is stored as given. A generated one is shown
    # once, then by its prefix; a custom one (its owner already has it) is never shown.
    secret = models.CharField(max_length=200)
    secret_generated = models.BooleanField(default=False, editable=False)
    active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.url

    @property
    def secret_prefix(self) -> str | None:
        """`whsec_` and 4 random characters, to recognise a generated secret. None for a
        custom one: its first characters may be most of what someone chose."""
        return self.secret[:10] if self.secret_generated else None


class WebhookDelivery(models.Model):
    """One event for one endpoint (the outbox row, written with the event)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        DELIVERED = "delivered"
        FAILED = "failed"  # retried for the whole retry window; no more attempts

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=64)
    # The exact bytes that are signed and sent.
    body = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    # A sender holds a delivery while it sends it (several workers share the outbox).
    locked_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        ordering = ["-id"]
        # The sender's query: pending deliveries that are due.
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due_idx")]

    def __str__(self) -> str:
        return f"{self.event} → {self.endpoint_id} ({self.status})"


class WebhookAttempt(models.Model):
    """One try at sending a delivery: what came back, how long it took, what failed."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_rows")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    response_excerpt = models.TextField(blank=True)

    class Meta:
        ordering = ["delivery", "number"]

    def __str__(self) -> str:
        return f"attempt {self.number}: {self.status_code or self.error[:40]}"


class NotificationPreference(models.Model):
    """How a person wants to hear of approvals away from the console (their page, /me/).
    No row: both on (being in a policy's `notify_group` is the opt-in)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference")
    email = models.BooleanField(default=True, help_text="E-mail me approvals I may decide, with one-tap links.")
    chat = models.BooleanField(default=True, help_text="Name me in the chat message of approvals I may decide.")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"notifications of {self.user}"


class Notification(models.Model):
    """One message about one approval (the outbox row, written with the approval): an e-mail
    to one person, or the chat message. Rendered and sent by the worker, retried like a
    webhook delivery; skipped when the approval was decided before it went out."""

    class Channel(models.TextChoices):
        EMAIL = "email"
        CHAT = "chat"

    class Status(models.TextChoices):
        PENDING = "pending"
        SENT = "sent"
        SKIPPED = "skipped"  # decided (or gone) before it was sent: nothing to ask any more
        FAILED = "failed"

    approval = models.ForeignKey("approvals.Approval", on_delete=models.CASCADE, related_name="+")
    channel = models.CharField(max_length=8, choices=Channel.choices)
    # The person an e-mail goes to (its links are theirs); the chat message has none.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # The people a chat message names.
    mentions = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    locked_until = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="notification_due_idx")]

    def __str__(self) -> str:
        return f"{self.channel} for approval {self.approval_id} ({self.status})"


class UsedLink(models.Model):
    """A one-tap link that decided (or settled) its approval: never accepted again. Only a
    digest of what the link says is kept, never the link."""

    digest = models.CharField(max_length=64, unique=True)
    approval = models.ForeignKey("approvals.Approval", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    used_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"link for approval {self.approval_id} used {self.used_at:%Y-%m-%d %H:%M}"
