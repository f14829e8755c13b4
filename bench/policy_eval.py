"""Benchmark: evaluating a command against a 31-rule policy vs tree-sitter's parse of the same
text, in the same run; a 20-command script; and a recursive search (`grep -r KEY .`) under a
policy with a `reads` deny rule, whose tree is walked, in workspaces of 1,000 and 20,000
entries (the walk's limit).

Times are CPU time of this process (`time.process_time_ns`), so other work on the machine
moves them less. Parse and evaluate are measured in alternating batches (a batch of parses,
then a batch of evaluations, 200 times over, 50 calls a batch), so both see the same minutes of
a machine whose speed drifts; each figure is the median of its batches and the ratio is
evaluate's median over parse's. The policy is compiled once, before any timing (a run's gate
finds it compiled by its version), and each figure is taken after a warm-up. The headline
command is evaluated in a real workspace (a git repository with a source file and git's sample
hooks), as a run's gate evaluates it; the same command in a `/work/project` that does not exist
(the figure's earlier setting: its paths and the repository are looked for up to `/`) is
printed after it.

Run: .venv/bin/python bench/policy_eval.py  (prints figures; targets: evaluate <= 5x the
parse of the same command, a 20-command script <= 2 ms).
"""

from __future__ import annotations

import os
import statistics
import subprocess
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
COMMANDS = [COMMAND, "ls -la src", "git status", "cat src/app.py", "grep -rn TODO src | head -5", "sort -u src/app.py"]
SCRIPT = " && ".join(["git status", "ls -la src", "cat src/app.py", "grep -rn TODO src", "git diff --stat",
                      "echo done", "wc -l src/app.py", "head -n 5 src/app.py", "git log --oneline -5", "pwd"] * 2)
BATCHES = 200
PER_BATCH = 50


def rule_count(doc) -> int:
    return sum(len(doc["commands"][k]) for k in ("allow", "ask", "deny")) + len(doc["tools"])


def _batch_us(fn, per_batch: int) -> float:
    start = time.process_time_ns()
    for _ in range(per_batch):
        fn()
    return (time.process_time_ns() - start) / per_batch / 1000


def median_us(fn, batches: int = BATCHES, per_batch: int = PER_BATCH) -> float:
    for _ in range(per_batch * 5):  # warm up
        fn()
    return statistics.median(_batch_us(fn, per_batch) for _ in range(batches))


def paired_us(parse, evaluate_, batches: int = BATCHES, per_batch: int = PER_BATCH) -> tuple[float, float]:
    """(parse, evaluate) medians in microseconds, their batches alternating."""
    for _ in range(per_batch * 5):  # warm up
        parse()
        evaluate_()
    parses, evaluations = [], []
    for _ in range(batches):
        parses.append(_batch_us(parse, per_batch))
        evaluations.append(_batch_us(evaluate_, per_batch))
    return statistics.median(parses), statistics.median(evaluations)


def workspace(root: Path) -> Path:
    """A small git repository with a source file and its installed-hooks directory (samples
    only), as a run's workspace looks."""
    ws = root / "project"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 1  # TODO\n")
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def main() -> int:
    policy = compile_policy(POLICY)  # once per version; evaluate never recompiles
    parser = Parser(Language(tree_sitter_bash.language()))
    print(f"policy: {rule_count(POLICY)} rules, version {policy.version[:16]}")
    with tempfile.TemporaryDirectory() as root:
        ws = workspace(Path(root))
        real = PathContext(workspace=str(ws), homes=(str(Path(root) / "home"),))
        print(f"{'command':40} {'parse':>8} {'evaluate':>10} {'ratio':>7}   (real workspace; us of CPU)")
        for command in COMMANDS[1:]:
            source = command.encode()
            request = {"tool": "bash", "input": {"command": command}, "cwd": str(ws)}
            verdict = evaluate(policy, request, paths=real)
            parse_us, eval_us = paired_us(lambda s=source: parser.parse(s),
                                          lambda r=request: evaluate(policy, r, paths=real))
            print(f"{command:40} {parse_us:8.2f} {eval_us:10.2f} {eval_us / parse_us:6.1f}x   -> {verdict.decision} "
                  f"({verdict.rule})")
        source = COMMAND.encode()
        request = {"tool": "bash", "input": {"command": COMMAND}, "cwd": str(ws)}
        verdict = evaluate(policy, request, paths=real)
        parse_us, eval_us = paired_us(lambda: parser.parse(source), lambda: evaluate(policy, request, paths=real))
        ratio = eval_us / parse_us
        print(f"\ncommand: {COMMAND!r} in a real workspace -> {verdict.decision} ({verdict.rule})")
        print(f"tree-sitter parse median: {parse_us:8.2f} us")
        print(f"evaluate median:          {eval_us:8.2f} us")
        print(f"ratio evaluate/parse:     {ratio:8.2f}x (target <= 5x: {'met' if ratio <= 5 else 'MISSED'})")
        request = {"tool": "bash", "input": {"command": SCRIPT}, "cwd": str(ws)}
        verdict = evaluate(policy, request, paths=real)
        script_us = median_us(lambda: evaluate(policy, request, paths=real), 40, 10)
        print(f"20-command script median: {script_us / 1000:8.3f} ms (target <= 2 ms: "
              f"{'met' if script_us <= 2000 else 'MISSED'}) -> {verdict.decision}")
    request = {"tool": "bash", "input": {"command": COMMAND}, "cwd": "/work/project"}
    verdict = evaluate(policy, request)
    parse_us, eval_us = paired_us(lambda: parser.parse(source), lambda: evaluate(policy, request))
    print(f"\nthe same in a /work/project that does not exist -> {verdict.decision} ({verdict.rule}): "
          f"parse {parse_us:.2f} us, evaluate {eval_us:.2f} us, {eval_us / parse_us:.2f}x")
    compile_us = median_us(lambda: compile_policy(POLICY), 20, 5)
    print(f"compile_policy of the document (hashed, then found compiled): {compile_us:8.2f} us")
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
