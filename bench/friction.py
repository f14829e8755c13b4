"""Benchmark: how often each preset asks a person during an everyday session (issue 28).

`bench/corpus/everyday_session.jsonl` is an ordinary session: reading code, tests, builds,
linters, formatters, git add/commit, edits under src/, running the code, installs from the
package registries. Each request is decided in a real workspace (the policy tests'
sandbox) under each preset, without the OS sandbox floor and inside it, and the share that
asks a person (or is denied) is printed, with the requests that do.

For "Sandboxed" inside the floor it also prints how many commands of the attack corpus
(`attacks.jsonl`, those not marked as bounded by a floor) its policy allows: inside the
floor those run, bounded by it — what they could still do is what `tests/sandbox/` tries.

Run: .venv/bin/python bench/friction.py [--show]   (figures, never pass/fail; the test
`tests/approvals/policy/test_sandboxed_preset.py` holds the 5 % line for Sandboxed).
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from approvals.policy import RunView, compile_policy, evaluate  # noqa: E402
from tests.approvals.policy.policytest import make_sandbox  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus"
PRESETS = [*importlib.import_module("approvals.migrations.0005_policy_presets").PRESETS,
           importlib.import_module("approvals.migrations.0010_sandboxed_preset").SANDBOXED]


def load(name: str) -> list[dict]:
    with open(CORPUS / name) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def main() -> int:
    session = load("everyday_session.jsonl")
    show = "--show" in sys.argv
    with tempfile.TemporaryDirectory() as root:
        box = make_sandbox(Path(root))

        def decide(policy, tool: str, tool_input: dict, floor: bool):
            return evaluate(policy, {"tool": tool, "input": tool_input, "cwd": box.workspace}, paths=box.context,
                            run_view=RunView(floor=floor))

        print(f"everyday session: {len(session)} requests")
        print(f"{'preset':24} {'asked, no floor':>16} {'asked, in floor':>16}")
        for preset in PRESETS:
            policy = compile_policy(preset["document"])
            counts = []
            for floor in (False, True):
                asked = [(step, verdict) for step in session
                         for verdict in [decide(policy, step["tool"], step["input"], floor)] if verdict.decision != "allow"]
                counts.append(asked)
            print(f"{preset['name']:24} " + " ".join(
                f"{len(a):>5} ({100 * len(a) / len(session):5.1f} %)" for a in counts))
            if show:
                for step, verdict in counts[1]:
                    what = step["input"].get("command") or step["input"].get("file_path") or step["input"]
                    print(f"    in floor: {step['tool']} {what!s:60.60} {verdict.decision} {verdict.rule}")
        sandboxed = compile_policy(PRESETS[-1]["document"])
        attacks = [a for a in load("attacks.jsonl") if not a.get("floor")]
        allowed = [a for a in attacks
                   if decide(sandboxed, "bash", {"command": a["command"]}, True).decision == "allow"]
        print(f"\nattack corpus under Sandboxed inside the floor: {len(allowed)} of {len(attacks)} allowed "
              f"({100 * len(allowed) / len(attacks):.1f} %), each bounded by the floor (tests/sandbox/)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
