"""`manage.py drivers_table`: the driver table of docs/drivers.md, printed from the descriptors."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from drivers import registry


def _values(values: Any) -> str:
    return ", ".join(sorted(values)) or "—"


def drivers_table() -> str:
    lines = [
        "| driver | sandbox | web search | browser | permission | plan review | question | retry | resumes, sleeps | edit before approve | isolation |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in registry.names():
        d = registry.descriptor(name)
        modes = d.approval_modes
        lines.append(
            f"| `{d.name}` | {_values(d.sandbox)} | {_values(d.web_search)} | {_values(d.browser)} | "
            f"{_values(modes.get('permission', ()))} | {_values(modes.get('plan_review', ()))} | "
            f"{_values(modes.get('question', ()))} | {'yes' if d.retry else 'no'} | "
            f"{'yes' if d.resumes else 'no'} | {_values(d.edits)} | {'; '.join(d.isolation) or '—'} |"
        )
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Print the table of driver capabilities (docs/drivers.md shows it)."

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(drivers_table())
