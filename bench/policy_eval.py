"""Benchmark: evaluating a one-line command against a 30-rule policy vs tree-sitter alone;
and a recursive search (`grep -r KEY .`) under a policy with a `reads` deny rule, whose
tree is walked, in workspaces of 1,000 and 20,000 entries (the walk's limit).

Run: .venv/bin/python bench/policy_eval.py  (prints figures; the target is evaluate median
<= 3x the parse median, both measured in this run).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tree_sitter_bash  # noqa: E402
from tree_sitter import Language, Parser  # noqa: E402

from approvals.policy import DEFAULT_POLICY, PathContext, compile_policy, evaluate  # noqa: E402

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
    tree_walks()
    return 0


def tree_walks() -> None:
    """`grep -r KEY .` under `reads: deny .env*` (the tree is walked) and under no reads rule."""
    walked = compile_policy({"reads": {"deny": [".env*"]}, **DEFAULT_POLICY})
    plain = compile_policy(DEFAULT_POLICY)
    for entries in (1_000, 20_000):
        with tempfile.TemporaryDirectory() as root:
            ws = Path(root)
            per_dir = 100
            for d in range(entries // (per_dir + 1)):
                directory = ws / f"d{d}"
                directory.mkdir()
                for f in range(per_dir):
                    (directory / f"f{f}.py").write_text("")
            paths = PathContext(workspace=str(ws))
            request = {"tool": "bash", "input": {"command": "grep -r KEY ."}, "cwd": str(ws)}
            verdict = evaluate(walked, request, paths=paths)
            samples = []
            for _ in range(15):
                start = time.perf_counter()
                evaluate(walked, request, paths=paths)
                samples.append((time.perf_counter() - start) * 1000)
            base = []
            for _ in range(15):
                start = time.perf_counter()
                evaluate(plain, request, paths=paths)
                base.append((time.perf_counter() - start) * 1000)
            print(f"grep -r KEY . in {entries:,} entries, reads deny .env*: {statistics.median(samples):7.2f} ms "
                  f"({verdict.decision}); without reads rules: {statistics.median(base):5.2f} ms")


if __name__ == "__main__":
    raise SystemExit(main())
