"""Benchmark: how many prompts the rules learned from approvals spare (issue 32, item 1).

A recorded day of scripted agents: 50 runs of about 40 requests each (~2,000), drawn with a
fixed seed from an everyday session (`bench/corpus/everyday_session.jsonl`: reading, tests,
builds, edits under src/, git) and, one request in twelve, from the attack corpus
(`attacks.jsonl`). Each is decided under the "Standard review" preset without a floor; a
simulated reviewer approves the everyday requests it is asked about in 1–4 s and denies
the attacks after 20–60 s. The policy core then suggests rules (approvals/policy/insights.py,
the same code the console's insights page and the API use), all are accepted, and the same
day is decided again.

Printed: prompts per run before and after (target: half or fewer), the share of prompts
that were rubber-stamp candidates (approved in under 3 s), the rules, and how many attacks
the learned rules let through (must be 0). Pure policy core: no database.

Run: .venv/bin/python bench/insights.py   (figures, never pass/fail)
"""

from __future__ import annotations

import importlib
import json
import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from approvals.policy import compile_policy, evaluate  # noqa: E402
from approvals.policy import insights as learn  # noqa: E402
from approvals.policy.grants import suggest_grant  # noqa: E402
from tests.approvals.policy.policytest import make_sandbox  # noqa: E402

CORPUS = Path(__file__).resolve().parent / "corpus"
STANDARD = next(p for p in importlib.import_module("approvals.migrations.0005_policy_presets").PRESETS
                if p["name"] == "Standard review")
RUNS, PER_RUN, ATTACK_EVERY, SEED = 50, 40, 12, 20261203


def load(name: str) -> list[dict]:
    with open(CORPUS / name) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def day() -> list[list[tuple[dict, bool]]]:
    """Runs of (request, is_attack)."""
    rng = random.Random(SEED)
    everyday = load("everyday_session.jsonl")
    attacks = [{"tool": "bash", "input": {"command": a["command"]}} for a in load("attacks.jsonl")
               if a.get("label") == "must not be allowed"]
    runs = []
    for _ in range(RUNS):
        n = rng.randint(PER_RUN - 10, PER_RUN + 10)
        runs.append([(rng.choice(attacks), True) if rng.randrange(ATTACK_EVERY) == 0 else (rng.choice(everyday), False)
                     for _ in range(n)])
    return runs


def main() -> int:
    runs = day()
    rng = random.Random(SEED + 1)
    with tempfile.TemporaryDirectory() as root:
        box = make_sandbox(Path(root))

        def decide(policy, request: dict):
            return evaluate(policy, {"tool": request["tool"], "input": request["input"], "cwd": box.workspace},
                            paths=box.context)

        before = compile_policy(STANDARD["document"])
        records, asked_before = [], 0
        for run in runs:
            for request, attack in run:
                verdict = decide(before, request)
                if verdict.decision != "ask":
                    continue
                asked_before += 1
                grant = suggest_grant({"tool": request["tool"], "input": request["input"], "cwd": box.workspace},
                                      verdict, paths=box.context)
                exact = bool(grant and grant[1].startswith("Always allow exactly"))
                seconds = rng.uniform(20, 60) if attack else rng.uniform(1, 4)
                records.append(learn.Record(grant[0] if grant else None, verdict.side_effect_class or "",
                                            "denied" if attack else "approved", "reviewer", seconds, exact))
        suggested = learn.suggest(records)
        document = STANDARD["document"]
        for s in suggested:
            document = learn.with_rule(document, s.section, s.rule, s.up_to)
        after = compile_policy(document)
        asked_after, attacks_let_through = 0, 0
        for run in runs:
            for request, attack in run:
                was, now = decide(before, request).decision, decide(after, request).decision
                asked_after += now == "ask"
                if attack and now == "allow" and was != "allow":
                    attacks_let_through += 1
                    if "--show" in sys.argv:
                        print("  let through:", request["input"], decide(after, request).rule)
        stamps = sum(1 for r in records if r.outcome == "approved" and r.seconds is not None and r.seconds < learn.RUBBER_STAMP_S)
        total = sum(len(r) for r in runs)
        print(f"recorded day: {RUNS} runs, {total} requests, policy '{STANDARD['name']}', no floor")
        print(f"prompts per run, before: {asked_before / RUNS:.1f}   after accepting {len(suggested)} learned rules: "
              f"{asked_after / RUNS:.1f}   ratio {asked_after / max(asked_before, 1):.2f} (target <= 0.50)")
        print(f"rubber-stamp candidates (approved in < {learn.RUBBER_STAMP_S:g} s): {stamps} of {asked_before} prompts "
              f"({100 * stamps / max(asked_before, 1):.0f} %)")
        print(f"attacks the learned rules let through: {attacks_let_through} (must be 0)")
        for s in suggested:
            print(f"  {s.section:9} {s.rule!r:40} approved {s.approved}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
