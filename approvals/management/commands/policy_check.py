"""`manage.py policy_check`: evaluate requests against a policy file, offline.

Prints one JSON object {"decision", "reason", "rule", "segments"} per request and exits
0; an invalid policy, request or grant exits 2 with a message naming the field. Paths are
anchored to `--workspace` (default: each request's `cwd`), `~` is the server user's home
and Gatehouse's own directories are protected, as for a run.

`--sandbox workspace-write|read-only|unrestricted` judges the requests as a run with that
sandbox would have them judged: inside the OS sandbox floor (the first two) the policy's
`in_floor` section applies; without `--policy` the policy is the default a run gets (the
installation's default policy, "Sandboxed" on a fresh install).

`--test` runs the file's examples instead (each rule's `match`/`not_match` and the
top-level `examples`, in the fixed example context, see `approvals.policy.examples`):
it prints each failing example (where, the request, what it got, what was expected), then
a summary line (`12 examples, 2 failing`), and exits 1 when an example fails or the policy
is invalid (every problem is printed), 0 otherwise; a file it cannot read exits 2.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from approvals import policy as core
from approvals.gate.paths import offline_path_context
from approvals.selectors import policy_for_run


def _read_json(path: str, what: str) -> Any:
    try:
        return core.parse_json_strict(Path(path).read_bytes())
    except OSError as exc:
        raise CommandError(f"cannot read {what} {path}: {exc.strerror}", returncode=2) from None
    except core.PolicyError as exc:
        raise CommandError(f"{what} {path}: {exc.message}", returncode=2) from None


SANDBOXES = ("workspace-write", "read-only", "unrestricted")
FLOORED = ("workspace-write", "read-only")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


class Command(BaseCommand):
    help = "Evaluate a request (or a JSONL file of requests) against a rule policy."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--policy", help="Rule policy JSON file (default with --sandbox: the installation's "
                                             "default policy).")
        parser.add_argument("--sandbox", choices=SANDBOXES,
                            help="Judge as a run with this sandbox would be judged (workspace-write and read-only: "
                                 "inside the OS sandbox floor).")
        group = parser.add_mutually_exclusive_group(required=True)
        group.add_argument("--request", help="One canonical request as a JSON file.")
        group.add_argument("--requests", help="A JSONL file: one canonical request per line.")
        group.add_argument("--test", action="store_true",
                           help="Run the policy's examples; exit 1 when one fails or the policy is invalid.")
        parser.add_argument("--grants", help="A JSON file with a list of session grants.")
        parser.add_argument("--workspace", help="The run's workspace the paths are anchored to (default: the "
                                                "request's cwd).")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["policy"] is None and (options["test"] or not options["sandbox"]):
            raise CommandError("--policy FILE is required (or --sandbox MODE, to judge under the default policy a "
                               "run gets)", returncode=2)
        if options["test"]:
            if options["grants"] or options["workspace"] or options["sandbox"]:
                raise CommandError("--test runs the examples in the fixed example context: --grants, "
                                   "--workspace and --sandbox do not apply", returncode=2)
            self._test(options["policy"])
            return
        try:
            document = _read_json(options["policy"], "policy") if options["policy"] else policy_for_run()[1]
            compiled = core.compile_policy(document)
            grants = [core.validate_grant(g) for g in (_read_json(options["grants"], "grants") if options["grants"] else [])]
        except core.PolicyError as exc:
            raise CommandError(self._describe(exc), returncode=2) from None
        workspace = options["workspace"]
        if workspace is not None and not workspace.startswith("/"):
            workspace = str(Path(workspace).resolve())
        view = core.RunView(floor=options["sandbox"] in FLOORED)
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
            verdict = core.evaluate(compiled, request, grants=grants, paths=paths, run_view=view)
            self.stdout.write(core.canonical_json(verdict.to_dict()))

    def _test(self, path: str) -> None:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read policy {path}: {exc.strerror}", returncode=2) from None
        try:
            document = core.parse_json_strict(data)
        except core.PolicyError as exc:
            raise CommandError(f"policy {path}: {exc.message}", returncode=1) from None
        problems = core.policy_problems(document)
        if problems:
            for problem in problems:
                self.stdout.write(f"INVALID {problem.message}")
            raise CommandError(f"policy {path} is invalid: {_count(len(problems), 'problem')}", returncode=1)
        total = len(core.examples_of(document))
        failures = core.check_examples(document)
        for failure in failures:
            self.stdout.write(f"FAIL {failure.where}")
            self.stdout.write(f"  request:  {core.canonical_json(failure.request)}")
            self.stdout.write(f"  got:      {failure.got}")
            self.stdout.write(f"  expected: {failure.expected}")
            self.stdout.write(f"  {failure.message}")
        self.stdout.write(f"{_count(total, 'example')}, {len(failures)} failing")
        if failures:
            raise CommandError(f"{_count(len(failures), 'example')} of {path} failing", returncode=1)

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

