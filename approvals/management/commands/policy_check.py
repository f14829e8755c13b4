"""`manage.py policy_check`: evaluate requests against a policy file, offline.

Prints one JSON object {"decision", "reason", "rule", "segments"} per request and exits
0; an invalid policy, request or grant exits 2 with a message naming the field. Paths are
anchored to `--workspace` (default: each request's `cwd`), `~` is the server user's home
and Gatehouse's own directories are protected, as for a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from approvals import policy as core
from approvals.gate.paths import offline_path_context


def _read_json(path: str, what: str) -> Any:
    try:
        return core.parse_json_strict(Path(path).read_bytes())
    except OSError as exc:
        raise CommandError(f"cannot read {what} {path}: {exc.strerror}", returncode=2) from None
    except core.PolicyError as exc:
        raise CommandError(f"{what} {path}: {exc.message}", returncode=2) from None


class Command(BaseCommand):
    help = "Evaluate a request (or a JSONL file of requests) against a rule policy."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--policy", required=True, help="Rule policy JSON file.")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--request", help="One canonical request as a JSON file.")
        group.add_argument("--requests", help="A JSONL file: one canonical request per line.")
        parser.add_argument("--grants", help="A JSON file with a list of session grants.")
        parser.add_argument("--workspace", help="The run's workspace the paths are anchored to (default: the "
                                                "request's cwd).")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            compiled = core.compile_policy(_read_json(options["policy"], "policy"))
            grants = [core.validate_grant(g) for g in (_read_json(options["grants"], "grants") if options["grants"] else [])]
        except core.PolicyError as exc:
            raise CommandError(self._describe(exc), returncode=2) from None
        workspace = options["workspace"]
        if workspace is not None and not workspace.startswith("/"):
            workspace = str(Path(workspace).resolve())
        if options["request"]:
            requests = [(options["request"], _read_json(options["request"], "request"))]
        else:
            requests = self._lines(options["requests"])
        for where, raw in requests:
            try:
                request = core.validate_request(raw)
            except core.PolicyError as exc:
                raise CommandError(f"{where}: {self._describe(exc)}", returncode=2) from None
            anchor = workspace or request.get("cwd")
            paths = offline_path_context(anchor) if anchor else None
            verdict = core.evaluate(compiled, request, grants=grants, paths=paths)
            self.stdout.write(core.canonical_json(verdict.to_dict()))

    def _lines(self, path: str) -> list[tuple[str, Any]]:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"cannot read requests {path}: {exc}", returncode=2) from None
        out = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                out.append((f"{path}:{number}", core.parse_json_strict(line)))
            except core.PolicyError as exc:
                raise CommandError(f"{path}:{number}: {exc.message}", returncode=2) from None
        return out

    @staticmethod
    def _describe(exc: core.PolicyError) -> str:
        # The core's messages already name the field path.
        return exc.message

