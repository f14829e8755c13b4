"""`manage.py policy_export NAME [--format json|claude|codex]`: a policy to standard output.

`json` is Gatehouse's own file (`policy_import` reads it back; export → import → export is
byte-identical). `claude` writes Claude Code `permissions` (allow / ask / deny with
`Bash(…)`, `Edit(…)`, `Read(…)`), `codex` Codex `prefix_rule(...)` lines: what those
formats can express, with the list of what they cannot on standard error.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from approvals import policy as core
from approvals.models import Policy
from approvals.policy_versions import policy_export_json


class Command(BaseCommand):
    help = "Write a policy to standard output (json, or Claude Code / Codex rules)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("name", help="The policy's name.")
        parser.add_argument("--format", choices=["json", "claude", "codex"], default="json")

    def handle(self, *args: Any, **options: Any) -> None:
        policy = Policy.objects.filter(name=options["name"]).first()
        if policy is None:
            known = ", ".join(Policy.objects.order_by("name").values_list("name", flat=True)) or "none"
            raise CommandError(f"no policy named {options['name']!r} (known: {known})", returncode=2)
        fmt = options["format"]
        if fmt == "json":
            self.stdout.write(policy_export_json(policy), ending="")
            return
        result = core.export_policy(policy.document, fmt)
        self.stdout.write(result.text, ending="" if result.text.endswith("\n") else "\n")
        if result.unexpressed:
            self.stderr.write(f"The {fmt} format cannot express:")
            for item in result.unexpressed:
                self.stderr.write(f"  - {item}")
