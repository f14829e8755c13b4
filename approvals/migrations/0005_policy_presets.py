"""Versions for the policies that exist, and the four presets of a fresh install.

Every existing policy gets its version 1 (its current content), and the runs and steps
recorded under that content point at it. Then the presets are created (those missing by
name), each with its version 1; "Standard review" becomes the default policy when no
policy is marked default. The preset documents are frozen here, as a migration must be;
the README describes them.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

from approvals.policy import policy_version

_CLASSES = {
    "read-only": "allow", "local-mutation": "allow", "outside-workspace": "ask",
    "remote-mutation": "ask", "destructive": "deny", "protected": "deny",
}
# The presets' run policy is empty (inherit): GATEHOUSE_DEFAULT_RUN_POLICY if the server
# sets one, else the built-in defaults, which are humane — approvals wait an hour,
# questions are asked, a denial or an unanswered request is told to the agent and the run
# goes on. An explicit routing value would also make drivers that do not model it refuse
# every run (check_capabilities), which a default policy must never do.
# Reads through the agent's read tools: anywhere in the workspace (globs are workspace-
# relative), elsewhere asked. Secret and protected reads are asked whatever the rules say.
READS_IN_WORKSPACE = {"allow": ["**"], "default": "ask"}

PRESETS: list[dict[str, Any]] = [
    {
        "name": "Read-only review",
        "description": "The agent reads and runs read-only commands in the workspace; every change, "
        "every other command and every read outside the workspace is asked. Destructive commands "
        "and protected paths are denied.",
        "document": {
            "edits": {"default": "ask"},
            "reads": READS_IN_WORKSPACE,
            "classes": {**_CLASSES, "local-mutation": "ask"},
            "default": "ask",
        },
    },
    {
        "name": "Accept edits",
        "description": "As Claude Code's acceptEdits: file edits inside the workspace are allowed, "
        "commands that change anything are asked (read-only ones run). Destructive commands and "
        "protected paths are denied.",
        "document": {
            "edits": {"default": "allow"},
            "reads": READS_IN_WORKSPACE,
            "classes": {**_CLASSES, "local-mutation": "ask"},
            "default": "ask",
        },
    },
    {
        "name": "Standard review",
        "description": "Reads and read-only commands inside the workspace are allowed, and so are local "
        "edits; other commands and remote mutations are asked; destructive commands and protected "
        "paths are denied. The default policy of a fresh install.",
        "document": {
            "edits": {"default": "allow"},
            "reads": READS_IN_WORKSPACE,
            "classes": _CLASSES,
            "default": "ask",
        },
    },
    {
        "name": "Full access (audited)",
        "description": "Everything is allowed and recorded, except what no policy can allow: protected "
        "paths are denied, and writes outside the workspace, secret reads and code the policy cannot "
        "read are still asked.",
        "document": {
            "classes": {**{name: "allow" for name in _CLASSES}, "protected": "deny"},
            "default": "allow",
        },
    },
]
DEFAULT_PRESET = "Standard review"


def record_existing_versions(apps: Any, schema_editor: Any) -> None:
    Policy = apps.get_model("approvals", "Policy")
    PolicyVersion = apps.get_model("approvals", "PolicyVersion")
    Run = apps.get_model("runs", "Run")
    Step = apps.get_model("runs", "Step")
    for policy in Policy.objects.all():
        if PolicyVersion.objects.filter(policy=policy).exists():
            continue
        digest = policy_version(policy.document or {})
        version = PolicyVersion.objects.create(
            policy=policy, number=1, document=policy.document or {}, run_policy=policy.run_policy, version=digest,
            comment="Recorded when policy versions were introduced.",
        )
        Policy.objects.filter(pk=policy.pk).update(version=digest)
        # Runs and steps recorded under exactly this content ran under this version.
        Run.objects.filter(policy=policy, policy_version=digest, ran_under__isnull=True).update(ran_under=version)
        Step.objects.filter(run__policy=policy, policy_version=digest, decided_under__isnull=True).update(decided_under=version)


def create_presets(apps: Any, schema_editor: Any) -> None:
    """Idempotent: a preset whose name is taken is left alone (the tests call it again
    after a transactional test flushed the database, to start from a fresh install)."""
    Policy = apps.get_model("approvals", "Policy")
    PolicyVersion = apps.get_model("approvals", "PolicyVersion")
    has_default = Policy.objects.filter(is_default=True).exists()
    for preset in PRESETS:
        if Policy.objects.filter(name=preset["name"]).exists():
            continue
        digest = policy_version(preset["document"])
        policy = Policy.objects.create(
            name=preset["name"], description=preset["description"], document=preset["document"],
            run_policy=None, version=digest,
            is_default=preset["name"] == DEFAULT_PRESET and not has_default,
        )
        PolicyVersion.objects.create(
            policy=policy, number=1, document=preset["document"], run_policy=None, version=digest,
            comment="Preset, created by the migration.",
        )


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0004_policy_versions_and_shadow"),
        ("runs", "0007_policy_versions_and_shadow"),
    ]

    operations = [
        migrations.RunPython(record_existing_versions, migrations.RunPython.noop),
        migrations.RunPython(create_presets, migrations.RunPython.noop),
    ]
