"""`manage.py policy_docs [--check]`: write `docs/programs.md`, the catalogue of what each
program model says, generated from the models (`approvals/policy/programs/`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from approvals.policy.programs.catalogue_doc import programs_markdown


def programs_doc_path() -> Path:
    return Path(settings.BASE_DIR) / "docs" / "programs.md"


class Command(BaseCommand):
    help = "Write docs/programs.md from the program models (--check: only say whether it is up to date)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--check", action="store_true", help="Fail when docs/programs.md is not up to date.")
        parser.add_argument("--output", help="Write here instead of docs/programs.md ('-': standard output).")

    def handle(self, *args: Any, **options: Any) -> None:
        text = programs_markdown()
        target = options.get("output")
        if target == "-":
            self.stdout.write(text, ending="")
            return
        path = Path(target) if target else programs_doc_path()
        if options["check"]:
            if not path.exists() or path.read_text() != text:
                raise CommandError(f"{path} is not up to date: run `manage.py policy_docs`", returncode=1)
            self.stdout.write(f"{path} is up to date.")
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        self.stdout.write(f"Wrote {path} ({text.count(chr(10))} lines).")
