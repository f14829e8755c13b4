"""`manage.py policy_import FILE [--name N] [--comment C]`: create or update a policy from
a file — an export of `policy_export` (`{"name", "document", "run_policy", ...}`) or a
bare rule document. Validated as a save in the admin is; the change becomes a new version.
Exits 2 with every problem listed when the file is refused.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from approvals import policy as core
from approvals.policy_versions import PolicyInvalid, policy_import


class Command(BaseCommand):
    help = "Import a policy (an export, or a bare rule document) as a new version."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file", help="The policy file (JSON); - reads standard input.")
        parser.add_argument("--name", default="", help="The policy to create or update (default: the name in the file).")
        parser.add_argument("--comment", default="", help="Kept with the new version (default: 'Imported from FILE').")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        try:
            data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}", returncode=2) from None
        try:
            policy = policy_import(
                data=data, name=options["name"], comment=options["comment"] or f"Imported from {Path(path).name}."
            )
        except PolicyInvalid as exc:
            listed = "\n".join(f"  - {p.message}" for p in exc.problems)
            raise CommandError(f"{path} is refused:\n{listed}", returncode=2) from None
        except core.PolicyError as exc:
            raise CommandError(f"{path}: {exc.message}", returncode=2) from None
        latest = policy.versions.order_by("-number").first()
        self.stdout.write(f"{policy.name}: version {latest.number if latest else '?'} ({policy.version[:12]})")
