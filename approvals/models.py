"""Policies administrators edit, approvals people decide, and grants they give."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class Policy(models.Model):
    """A rule policy document (see README, "Policies"), versioned by its content hash."""

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    document = models.JSONField(default=dict, help_text="Rule policy JSON: commands, edits, tools, classes, limits, default.")
    run_policy = models.JSONField(
        null=True, blank=True, help_text="Run policy JSON (sandbox, web_search, browser, approvals); empty = inherit."
    )
    version = models.CharField(max_length=64, editable=False, blank=True)
    is_default = models.BooleanField(default=False, help_text="Used by runs that name no policy.")
    # Shadow mode: while this policy is live, every step of its runs also records what the
    # shadow policy would have decided (deciding nothing). How a stricter policy is rolled
    # out: attach it here, watch the agreement, then make it live.
    shadow_policy = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="shadowing",
        help_text="Also evaluate this policy on every step of this policy's runs, recording what it would "
        "have decided without affecting anything.",
    )
    # Who may name this policy for a run (console, API, hook gateway) although it is not at
    # least as strict as the default policy (issue 34). Naming a stricter one needs no entry;
    # `runs.override_policy` may name any.
    available_to_users = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="usable_policies",
        help_text="Who may start runs under this policy although it is looser than the default policy.",
    )
    available_to_groups = models.ManyToManyField(
        "auth.Group", blank=True, related_name="usable_policies",
        help_text="Groups whose members may start runs under this policy although it is looser than the default.",
    )
    # Who hears of this policy's approvals away from the console (e-mail, chat: issue 32.4),
    # each as their own preferences allow. Empty: nobody is notified.
    notify_group = models.ForeignKey(
        "auth.Group", null=True, blank=True, on_delete=models.SET_NULL, related_name="notified_policies",
        help_text="Members of this group are notified (e-mail, chat) of approvals under this policy, "
        "each as their notification preferences allow. Empty: nobody is notified.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "policies"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["is_default"], condition=models.Q(is_default=True), name="one_default_policy"
            )
        ]

    def __str__(self) -> str:
        return self.name


class PolicyVersion(models.Model):
    """One saved state of a policy: immutable, numbered per policy, written by `policy_save`.

    Runs and steps point at the version they ran under; a restore writes a new version
    with the old content, so history is only ever appended to.
    """

    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    document = models.JSONField()
    run_policy = models.JSONField(null=True, blank=True)
    # The rule document's identity (`core.policy_version`), as on Run and Step.
    version = models.CharField(max_length=64)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    comment = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["policy", "-number"]
        constraints = [models.UniqueConstraint(fields=["policy", "number"], name="policy_version_number_unique")]

    def __str__(self) -> str:
        return f"{self.policy} v{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # History is append-only: a version, once written, is never rewritten.
        if not self._state.adding:
            raise ValueError("policy versions are immutable")
        super().save(*args, **kwargs)


class Approval(models.Model):
    """A human decision a run waits on. Resolved once, by compare-and-set on `status`."""

    class Kind(models.TextChoices):
        PERMISSION = "permission"
        PLAN_REVIEW = "plan_review", "Plan review"
        QUESTION = "question"
        INTERRUPTED_SIDE_EFFECT = "interrupted_side_effect", "Interrupted side effect"
        # Push a run's result to its repository (repos/): Gatehouse pushes once approved.
        DELIVERY = "delivery"

    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        DENIED = "denied"
        ANSWERED = "answered"
        EXPIRED = "expired"
        CANCELLED = "cancelled"  # the run ended or moved on; nobody can decide it any more

    class Via(models.TextChoices):
        CONSOLE = "console"
        API = "api"
        POLICY = "policy"
        GRANT = "grant"
        MODE = "mode"
        TIMEOUT = "timeout"
        SYSTEM = "system"
        LINK = "link"  # a signed one-tap link from a notification (integrations/notifications)

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="approvals")
    step = models.ForeignKey("runs.Step", null=True, blank=True, on_delete=models.CASCADE, related_name="approvals")
    kind = models.CharField(max_length=32, choices=Kind.choices, default=Kind.PERMISSION)
    subtype = models.CharField(max_length=32, blank=True)
    # What is asked (capability), what the reviewer sees (presentation, agent text: untrusted)
    # and the exact canonical request; the hash binds a decision to all three.
    capability = models.JSONField(default=dict, blank=True)
    presentation = models.JSONField(default=dict, blank=True)
    request = models.JSONField(default=dict, blank=True)
    hash = models.CharField(max_length=64)
    # Edit before approve (issue 32.3): the input the reviewer approved instead of
    # `request["input"]` (the hash stays the original's: it is what the reviewer saw);
    # null when approved as asked.
    edited_input = models.JSONField(null=True, blank=True)
    suggested_grant = models.JSONField(null=True, blank=True)
    suggested_grant_label = models.CharField(max_length=300, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reason = models.TextField(blank=True)
    answers = models.JSONField(null=True, blank=True)
    plan_mode = models.CharField(max_length=16, blank=True)
    scope = models.CharField(max_length=16, default="once")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_via = models.CharField(max_length=16, choices=Via.choices, blank=True)
    # Decided by a session grant made while it waited ("always allow" settles what it covers).
    grant = models.ForeignKey("approvals.Grant", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    attempt = models.PositiveIntegerField(default=1)
    # What approving takes beyond Approve (the run policy's `approvals.confirm` for the
    # request's class, fixed when the approval opens): "typed" (type `confirmation_word`)
    # or "second-reviewer" (two different people: `Signoff` rows); "" nothing more.
    confirmation = models.CharField(max_length=16, blank=True)
    confirmation_word = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # The inbox (soonest deadline first) and the deadline sweep read pending approvals.
            models.Index(fields=["status", "deadline"], name="approval_status_deadline_idx"),
            # The API's pending list and the inbox's oldest/newest sorts: pending, in id order.
            models.Index(fields=["status", "id"], name="approval_status_id_idx"),
        ]

    def __str__(self) -> str:
        return f"Approval {self.pk} ({self.kind}, {self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == self.Status.PENDING

    APPROVALS_REQUIRED = 2  # of a second-reviewer approval

    @property
    def approvals_required(self) -> int:
        return self.APPROVALS_REQUIRED if self.confirmation == "second-reviewer" else 1

    @property
    def approvals_given(self) -> int:
        """People who approved so far (a second-reviewer approval's first approval is a `Signoff`)."""
        if self.confirmation != "second-reviewer":
            return 1 if self.status == self.Status.APPROVED else 0
        return self.signoffs.count()

    @property
    def title(self) -> str:
        return str(self.presentation.get("title") or self.request.get("tool") or self.kind)


class Signoff(models.Model):
    """One person's approval of a request that needs two different people (issue 32.2): the
    first is recorded here while the approval stays pending; the second also resolves it."""

    approval = models.ForeignKey(Approval, on_delete=models.CASCADE, related_name="signoffs")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    via = models.CharField(max_length=16, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["approval", "id"]
        constraints = [models.UniqueConstraint(fields=["approval", "user"], name="signoff_once_per_person")]

    def __str__(self) -> str:
        return f"Signoff {self.approval_id} by {self.user_id}"


class Grant(models.Model):
    """"Always allow" for the rest of a session: narrows an ask to an allow, never a deny."""

    session = models.ForeignKey("runs.AgentSession", on_delete=models.CASCADE, related_name="grants")
    rule = models.JSONField(help_text='{"tool": "bash", "match": "npm run build"}')
    label = models.CharField(max_length=300, blank=True)
    approval = models.ForeignKey(Approval, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.label or str(self.rule)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class SecretAnswer(models.Model):
    """A secret question's answer on its way to the agent: written with the answer, deleted
    in the transaction that hands it to the run (or when the run ends). Never in the
    approval, the step, an activity or any endpoint; no admin shows it."""

    approval = models.OneToOneField(Approval, on_delete=models.CASCADE, related_name="+")
    answers = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
