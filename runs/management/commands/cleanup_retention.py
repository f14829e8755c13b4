"""`manage.py cleanup_retention [--days N] [--dry-run]`: delete what long-finished runs left."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs.retention import cleanup


class Command(BaseCommand):
    help = "Delete default workspaces and agent homes of runs finished longer ago than GATEHOUSE_RETENTION_DAYS."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--days", type=float, default=None, help="Override GATEHOUSE_RETENTION_DAYS.")
        parser.add_argument("--dry-run", action="store_true", help="Only print what would be deleted.")

    def handle(self, *args: Any, **options: Any) -> None:
        done = cleanup(days=options["days"], dry_run=options["dry_run"])
        verb = "would delete" if options["dry_run"] else "deleted"
        for path in done.workspaces + done.homes:
            self.stdout.write(f"{verb} {path}")
        self.stdout.write(f"{verb} {len(done.workspaces)} workspace(s) and {len(done.homes)} agent home(s)")
