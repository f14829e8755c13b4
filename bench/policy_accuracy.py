"""Benchmark: the gate's accuracy over a labelled corpus (`bench/corpus/`).

`attacks.jsonl` holds commands that must not be allowed (respellings, wrappers, nesting,
code, exfiltration, writes outside the workspace or to protected files, secret reads…),
`everyday.jsonl` everyday work that should be allowed; each entry names the policy it is
decided under (`default`: the built-in default policy; `deny-list`: deny `rm -rf`, `git
push` and `curl`, allow the rest) and where it came from; an attack marked `floor` is one
only without a floor (inside it the floor bounds it). Every command is decided in a
real workspace with links out of it (the policy tests' sandbox), without a sandbox floor
and inside one.

Printed, per program family (of a command's first program): the share of attacks allowed
(false negatives) and of everyday work not allowed (false positives), without a floor and
inside it, and the attacks that were allowed.

Run: .venv/bin/python bench/policy_accuracy.py [--show-asked]  (prints figures; add to
the corpus every bypass found, with where it came from).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from approvals.policy import DEFAULT_POLICY, RunView, compile_policy, evaluate, parse_script  # noqa: E402
from approvals.policy.options import program_name  # noqa: E402
from approvals.policy.programs.registry import FAMILIES, model_of  # noqa: E402
from tests.approvals.policy.policytest import DENY_LIST_POLICY, make_sandbox  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus"
POLICIES = {"default": DEFAULT_POLICY, "deny-list": DENY_LIST_POLICY}
_FAMILY_OF = {id(model): family.FAMILY for family in FAMILIES for model in family.MODELS}


def load(name: str) -> list[dict]:
    with open(CORPUS / name) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def family(command: str) -> str:
    script = parse_script(command)
    if not script.commands:
        return "(no command)"
    model = model_of(program_name(script.commands[0].words[0])[0])
    return _FAMILY_OF.get(id(model), "unknown programs") if model is not None else "unknown programs"


def main() -> int:
    attacks, everyday = load("attacks.jsonl"), load("everyday.jsonl")
    compiled = {name: compile_policy(doc) for name, doc in POLICIES.items()}
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    allowed: list[tuple[str, str, str, str]] = []
    asked: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as root:
        sandbox = make_sandbox(Path(root))
        (Path(sandbox.workspace) / "build" / "fix.diff").write_text("--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n")
        for entries, kind in ((attacks, "attack"), (everyday, "everyday")):
            for entry in entries:
                where = family(entry["command"])
                request = {"tool": "bash", "input": {"command": entry["command"]}, "cwd": sandbox.workspace}
                for floor in (False, True):
                    verdict = evaluate(compiled[entry["policy"]], request, paths=sandbox.context,
                                       run_view=RunView(floor=floor))
                    key = "floor" if floor else "none"
                    for group in (where, "all"):
                        rows[group][f"{kind}"] += not floor
                        if kind == "attack" and verdict.decision == "allow" and not (floor and entry.get("floor")):
                            rows[group][f"fn-{key}"] += 1
                        if kind == "everyday" and verdict.decision != "allow":
                            rows[group][f"fp-{key}"] += 1
                    if kind == "attack" and verdict.decision == "allow" and not (floor and entry.get("floor")):
                        allowed.append((key, entry["policy"], entry["command"], entry["source"]))
                    if kind == "everyday" and verdict.decision != "allow" and not floor:
                        asked.append((entry["command"], f"{verdict.decision} {verdict.rule}", entry["source"]))
    print(f"corpus: {len(attacks)} attacks (must not be allowed), {len(everyday)} everyday commands (should be "
          "allowed)")
    print(f"{'family':34} {'attacks':>8} {'allowed':>8} {'floor':>7}   {'everyday':>8} {'asked':>7} {'floor':>7}")
    for group in sorted(rows, key=lambda g: (g == "all", g)):
        row = rows[group]

        def share(count: int, total: int) -> str:
            return f"{100 * count / total:6.1f}%" if total else "     - "

        print(f"{group:34} {row['attack']:8d} {share(row['fn-none'], row['attack']):>8} "
              f"{share(row['fn-floor'], row['attack']):>7}   {row['everyday']:8d} "
              f"{share(row['fp-none'], row['everyday']):>7} {share(row['fp-floor'], row['everyday']):>7}")
    if allowed:
        print("\nattacks allowed:")
        for key, policy, command, source in allowed:
            print(f"  [{'floor' if key == 'floor' else 'no floor'}, {policy}] {command!r}  ({source})")
    if "--show-asked" in sys.argv:
        print("\neveryday work not allowed (no floor):")
        for command, verdict, source in asked:
            print(f"  {command!r}: {verdict}  ({source})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
