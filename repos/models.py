"""Repositories runs may start on, and the deliveries of runs' results back to them."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Repository(models.Model):
    """A git repository registered by an administrator. Its credentials are stored encrypted
    (repos.crypto, Fernet) and never shown again, never put in a run's sandbox or environment:
    only Gatehouse's own git processes (mirror fetches, approved pushes) get them."""

    class Credential(models.TextChoices):
        NONE = "none", "None"
        TOKEN = "token", "Token (HTTPS)"
        SSH_KEY = "ssh-key", "SSH private key"

    name = models.SlugField(max_length=100, unique=True, help_text="What a run names: {\"repository\": NAME}.")
    url = models.CharField(max_length=1024, help_text="A local path, file://, https://, ssh:// or user@host:path URL, "
                           "without credentials (GATEHOUSE_REPOSITORY_URLS limits which).")
    default_ref = models.CharField(max_length=200, default="main", help_text="The ref a run starts from when it names none.")
    credential_kind = models.CharField(max_length=16, choices=Credential.choices, default=Credential.NONE)
    # The HTTPS user name given with a token (most hosts accept any; GitLab wants oauth2).
    credential_username = models.CharField(max_length=200, blank=True, default="x-access-token")
    # Fernet token of the secret (a token or a private key); empty = none.
    credential_encrypted = models.TextField(blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "repositories"

    def __str__(self) -> str:
        return self.name

    @property
    def has_credential(self) -> bool:
        return bool(self.credential_encrypted)


class Delivery(models.Model):
    """A request to push a run's result, decided by a person (an approval of kind `delivery`)
    and carried out by Gatehouse itself, outside the sandbox (repos.services.deliveries_perform)."""

    class Status(models.TextChoices):
        PENDING = "pending"  # waiting for the approval
        PUSHING = "pushing"  # approved; a worker is pushing
        PUSHED = "pushed"
        DENIED = "denied"
        FAILED = "failed"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="deliveries")
    approval = models.OneToOneField("approvals.Approval", on_delete=models.CASCADE, related_name="delivery")
    action = models.CharField(max_length=16, default="push")
    branch = models.CharField(max_length=255)
    # The commit offered for review (the working tree's state as one commit on the base), and
    # the one pushed (the same, unless the workspace changed in between: then it fails).
    commit = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "deliveries"

    def __str__(self) -> str:
        return f"Delivery {self.pk} of run {self.run_id} ({self.status})"
