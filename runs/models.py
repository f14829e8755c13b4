"""Runs of agents: the session (thread), each run, its steps and its append-only log."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from runs.events import Event


class RuntimeMode(models.TextChoices):
    APPROVAL_REQUIRED = "approval-required", "Approval required"
    AUTO_ACCEPT_EDITS = "auto-accept-edits", "Auto-accept edits"
    AUTO = "auto", "Auto"
    FULL_ACCESS = "full-access", "Full access"


class InteractionMode(models.TextChoices):
    DEFAULT = "default", "Default"
    PLAN = "plan", "Plan"


class AgentSession(models.Model):
    """A thread of runs; grants and modes live here and outlast a single run."""

    title = models.CharField(max_length=200, blank=True)
    runtime_mode = models.CharField(
        max_length=32, choices=RuntimeMode.choices, default=RuntimeMode.APPROVAL_REQUIRED
    )
    interaction_mode = models.CharField(
        max_length=16, choices=InteractionMode.choices, default=InteractionMode.DEFAULT
    )
    # Who set the modes last (null: never changed, i.e. the creator's defaults). Under four
    # eyes a mode that approves asks on its own approves nothing for the runs of the person
    # who set it (issue 34).
    modes_set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The session's run policy (guardrails); a run's own policy replaces it whole.
    run_policy = models.JSONField(null=True, blank=True)
    # Per driver, the agent conversation the session's runs continue (Claude Code's session
    # id, Codex's thread id): a follow-up run resumes it instead of starting a new one.
    agent_state = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.title or f"Session {self.pk}"


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        WAITING = "waiting"
        COMPLETED = "completed"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.COMPLETED, Status.FAILED, Status.CANCELLED)
    # Large or driver-only JSON (a scripted scenario, the agent's state, usage, the prompt):
    # the gate and a decision defer them, so no request parses them.
    LARGE_FIELDS = ("prompt", "scenario", "options", "result_text", "usage", "agent_state", "agent_processes",
                    "failure_detail", "run_policy_input")
    ALLOWED_TRANSITIONS = {
        Status.QUEUED: {Status.RUNNING, Status.FAILED, Status.CANCELLED},
        Status.RUNNING: {Status.WAITING, Status.COMPLETED, Status.FAILED, Status.CANCELLED},
        Status.WAITING: {Status.RUNNING, Status.COMPLETED, Status.FAILED, Status.CANCELLED},
    }

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="runs")
    driver = models.CharField(max_length=64)
    prompt = models.TextField(blank=True)
    scenario = models.JSONField(null=True, blank=True)
    # Driver options chosen per run (e.g. the ACP agent), validated by the driver.
    options = models.JSONField(default=dict, blank=True)
    workspace = models.CharField(max_length=1024)
    # A run on a registered repository: the worker that takes it makes its workspace (a
    # clone on the branch `gatehouse/run-<id>` at the ref's commit, the base), repos/.
    repository = models.ForeignKey("repos.Repository", null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    ref = models.CharField(max_length=200, blank=True)
    branch = models.CharField(max_length=255, blank=True)
    base_commit = models.CharField(max_length=64, blank=True)
    # The rule policy it ran under, as a snapshot: editing the Policy later changes nothing here.
    policy = models.ForeignKey(
        "approvals.Policy", null=True, blank=True, on_delete=models.SET_NULL, related_name="runs"
    )
    policy_document = models.JSONField(default=dict)
    policy_version = models.CharField(max_length=64, blank=True)
    # The PolicyVersion that snapshot is (null: the built-in fallback, or a run older than
    # versions). PROTECT: a version that decided runs is never deleted with its policy.
    ran_under = models.ForeignKey(
        "approvals.PolicyVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    # Shadow mode: the shadow policy's version when the run started (the live policy's
    # `shadow_policy`); each step records what it would have decided.
    shadow_version = models.ForeignKey(
        "approvals.PolicyVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="shadowed_runs"
    )
    # The run policy as given (null = inherit) and as materialised for the driver.
    run_policy_input = models.JSONField(null=True, blank=True)
    run_policy = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    failure_reason = models.CharField(max_length=64, blank=True)
    failure_detail = models.TextField(blank=True)
    result_text = models.TextField(blank=True)
    usage = models.JSONField(default=dict, blank=True)
    cancel_requested = models.BooleanField(default=False)
    # Lease: the worker that owns the run renews heartbeat_at; an old heartbeat frees it.
    owner = models.CharField(max_length=128, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    last_seq = models.PositiveIntegerField(default=0)
    # What the driver needs to resume the agent's own conversation after a restart
    # (Claude Code's session id, Codex's thread id). Written by the driver through its context.
    agent_state = models.JSONField(default=dict, blank=True)
    # The agent processes the run's worker started ({host, pid, start}), so the next owner
    # can stop what a dead worker left behind before it resumes the run.
    agent_processes = models.JSONField(default=list, blank=True)
    # Asleep: its agent was stopped while a person decides; a decision (or the deadline, or
    # a cancel) wakes it. The run stays `waiting`, its approvals stay decidable.
    hibernated_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        permissions = [
            ("override_policy", "Can loosen the administrator's policy for a run or session"),
            ("run_unsandboxed", "Can start a run without the OS sandbox floor (sandbox: unrestricted)"),
        ]
        indexes = [
            # The worker's reconcile query: unfinished runs and their leases.
            models.Index(fields=["status", "heartbeat_at"], name="run_status_lease_idx"),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.driver}, {self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def unsandboxed(self) -> bool:
        """Started without the OS sandbox floor (its run policy's sandbox is `unrestricted`):
        the console marks it on its cards and page."""
        return (self.run_policy or {}).get("sandbox") == "unrestricted"


class Step(models.Model):
    """One tool request of a run, the policy's answer, and what happened next."""

    class Status(models.TextChoices):
        # The lifecycle and its allowed moves live in `approvals.gate.lifecycle`.
        REQUESTED = "requested"  # recorded, not yet decided
        WAITING = "waiting"  # a person must decide
        ALLOWED = "allowed"  # decided allow; not yet handed to the agent to execute
        EXECUTING = "executing"  # handed to the agent: the side effect may be happening
        FINISHED = "finished"  # executed; its result is recorded and it never runs again
        DENIED = "denied"
        ABORTED = "aborted"
        ANSWERED = "answered"  # a question answered or a plan reviewed; answers recorded

    class Kind(models.TextChoices):
        """What the agent asked (`drivers.base.Kind`), in `approvals.models.Approval.Kind`'s
        words: a step's approval has its step's kind, or `interrupted_side_effect` when the
        step may have run before a restart (`delivery` approvals have no step)."""

        PERMISSION = "permission"
        PLAN_REVIEW = "plan_review", "Plan review"
        QUESTION = "question"

    class Verdict(models.TextChoices):
        """What the policy said (`approvals.policy` `Verdict.decision`), or the external
        decision point where it decided (rule `external`); `shadow_verdict` too, or blank."""

        ALLOW = "allow"
        ASK = "ask"
        DENY = "deny"
        ABORT = "abort"

    class DecidedBy(models.TextChoices):
        """Who or what decided the step (blank while it waits). One vocabulary with
        `approvals.models.Approval.Via`: a step decided through its approval records the
        approval's `decided_via` as it is (the hand-out copies it), so every `Via` word is
        here, meaning the same. The gate also writes `policy`, `grant` and `mode` when it
        decides a request at once, and `system` for a step closed without an answer (the run
        ended, a restart superseded it). Two words are the step's own:

        - `external`: the rule policy's external decision point settled the request;
        - `person`: an interrupted side effect run again because a person had approved this
          same request before (same hash: `recheck_after_interruption`). Which way that
          person decided (`console`, `api`, `link`) is on that approval, not here; stored
          rows say `person`, so the word stays (no data migration).

        A `drivers.base.GateAnswer` may also say `record` (a replayed step answered from the
        record); that is never stored."""

        POLICY = "policy"
        GRANT = "grant"
        MODE = "mode"
        EXTERNAL = "external"
        CONSOLE = "console"
        API = "api"
        LINK = "link"  # a signed one-tap link from a notification
        PERSON = "person"
        TIMEOUT = "timeout"
        SYSTEM = "system"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="steps")
    seq = models.PositiveIntegerField()
    tool = models.CharField(max_length=128)
    kind = models.CharField(max_length=32, choices=Kind.choices, default=Kind.PERMISSION)
    subtype = models.CharField(max_length=32, blank=True)
    # The agent's own id of the tool call (Claude Code's tool_use_id, Codex's item id, ACP's
    # toolCallId, OpenCode's callID): an integration matches an approval to the transcript.
    tool_call_id = models.CharField(max_length=200, blank=True)
    request = models.JSONField()
    # A reviewer edited the request before approving it (issue 32.3): `request` is then the
    # edited request (what runs, what the timeline shows) and this the agent's own, which
    # a replay after a restart is matched against. Null: not edited.
    original_request = models.JSONField(null=True, blank=True)
    presentation = models.JSONField(default=dict, blank=True)
    # What the policy said, and which rule of which policy version said it.
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    rule = models.CharField(max_length=200, blank=True)
    reason = models.TextField(blank=True)
    segments = models.JSONField(default=list, blank=True)
    side_effect_class = models.CharField(max_length=32, blank=True)
    policy_version = models.CharField(max_length=64, blank=True)
    decided_under = models.ForeignKey(
        "approvals.PolicyVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="steps"
    )
    # Shadow mode: what the run's shadow policy would have decided (it decided nothing).
    shadow_verdict = models.CharField(max_length=16, choices=Verdict.choices, blank=True)
    shadow_rule = models.CharField(max_length=200, blank=True)
    shadow_version = models.ForeignKey(
        "approvals.PolicyVersion", null=True, blank=True, on_delete=models.PROTECT, related_name="shadow_steps"
    )
    grant = models.ForeignKey(
        "approvals.Grant", null=True, blank=True, on_delete=models.SET_NULL, related_name="steps"
    )
    # What the rule policy's external decision point answered (`approvals.gate.external`):
    # its decision, reason, effect and the policy's own verdict; null when none was consulted.
    external = models.JSONField(null=True, blank=True)
    # The final outcome after any human decision, and who made it.
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.REQUESTED)
    decided_by = models.CharField(max_length=32, choices=DecidedBy.choices, blank=True)
    # Questions and plan reviews: what the person answered (kept for resume and the log).
    answers = models.JSONField(null=True, blank=True)
    plan_mode = models.CharField(max_length=16, blank=True)
    # What the agent was told when the step was not allowed (a refusal's reason), so a
    # replay after a restart tells it the same thing.
    told = models.TextField(blank=True)
    output = models.TextField(blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="step_run_seq_unique")]
        # The API's `?tool_call_id=` filter of approvals reads this.
        indexes = [models.Index(fields=["tool_call_id"], name="step_tool_call_id_idx", condition=~models.Q(tool_call_id=""))]

    def __str__(self) -> str:
        return f"Step {self.seq} of run {self.run_id}: {self.tool}"


class Activity(models.Model):
    """Append-only, ordered log of everything that happened in a run."""

    class Kind(models.TextChoices):
        RUN = "run"
        TURN = "turn"
        MESSAGE = "message"
        TOOL = "tool"
        APPROVAL = "approval"
        USER_INPUT = "user-input"
        USAGE = "usage"
        NOTICE = "notice"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="activities")
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    event = models.CharField(max_length=64, choices=[(e.value, e.value) for e in Event])  # runs.events: the vocabulary
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="activity_run_seq_unique")]
        verbose_name_plural = "activities"

    def __str__(self) -> str:
        return f"#{self.seq} {self.event}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # The log is append-only: an activity, once written, is never rewritten.
        if not self._state.adding:
            raise ValueError("activities are append-only")
        super().save(*args, **kwargs)
