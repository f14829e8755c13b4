"""Benchmark: evaluating a one-line command against a 30-rule policy vs tree-sitter alone.

Run: .venv/bin/python bench/policy_eval.py  (prints figures; the target is evaluate median
<= 3x the parse median, both measured in this run).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tree_sitter_bash  # noqa: E402
from tree_sitter import Language, Parser  # noqa: E402

from approvals.policy import compile_policy, evaluate  # noqa: E402

POLICY = {
    "commands": {
        "allow": ["ls", "cat", "head", "tail", "grep", "rg", "git status", "git diff", "git log",
                  "npm run test:*", "npm run lint", "pytest", "python -m pytest", "make test", "pwd", "echo"],
        "ask": ["git commit", "npm install", "pip install", "docker build", "make"],
        "deny": [{"match": "git push", "reason": "The application publishes the changes."}, "rm -rf",
                 "git reset --hard", "chmod -R 777", "sudo", "dd", "mkfs", "git clean -fd", "npm publish"],
        "default": "ask",
    },
    "tools": {"webSearch": "allow"},
    "classes": {"read-only": "allow", "local-mutation": "allow", "remote-mutation": "ask", "destructive": "deny"},
    "default": "ask",
}
COMMAND = "git diff --stat HEAD~1 -- src/app.py"
BATCHES = 200
PER_BATCH = 50


def rule_count(doc) -> int:
    return sum(len(doc["commands"][k]) for k in ("allow", "ask", "deny")) + len(doc["tools"])


def median_us(fn) -> float:
    for _ in range(PER_BATCH * 5):  # warm up
        fn()
    samples = []
    for _ in range(BATCHES):
        start = time.perf_counter_ns()
        for _ in range(PER_BATCH):
            fn()
        samples.append((time.perf_counter_ns() - start) / PER_BATCH / 1000)
    return statistics.median(samples)


def main() -> int:
    policy = compile_policy(POLICY)  # once per version; evaluate never recompiles
    request = {"tool": "bash", "input": {"command": COMMAND}, "cwd": "/work/project"}
    parser = Parser(Language(tree_sitter_bash.language()))
    source = COMMAND.encode()
    verdict = evaluate(policy, request)
    parse_us = median_us(lambda: parser.parse(source))
    eval_us = median_us(lambda: evaluate(policy, request))
    compile_start = time.perf_counter_ns()
    compile_policy(POLICY)
    cached_us = (time.perf_counter_ns() - compile_start) / 1000
    ratio = eval_us / parse_us
    print(f"policy: {rule_count(POLICY)} rules, version {policy.version[:16]}")
    print(f"command: {COMMAND!r} -> {verdict.decision} ({verdict.rule})")
    print(f"tree-sitter parse median: {parse_us:8.2f} us")
    print(f"evaluate median:          {eval_us:8.2f} us")
    print(f"ratio evaluate/parse:     {ratio:8.2f}x (target <= 3x: {'met' if ratio <= 3 else 'MISSED'})")
    print(f"compile_policy (cached):  {cached_us:8.2f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
