"""Runs on a repository (issue 33's targets): preparing a run's workspace from a warm mirror
for a repository of 10,000 files (≤ 1 s), beside `git worktree add` alone from the same
mirror, in the same run; and a run's changes for 200 changed files (≤ 300 ms). Not a test:
figures for docs/benchmarks.md.

The workspace is what the worker makes (repos/git.py): the mirror checked under its lock
(warm: no fetch) and a standalone clone (`--no-hardlinks`) checked out on a new branch. The
changes are what `GET /api/v1/runs/{id}/changes/` computes (repos.git.changes): the first
call of a run (Gatehouse's index, seeded from the checkout's, refreshed) and the next ones (files unchanged
since are not hashed again).

    .venv/bin/python bench/repo_prepare.py [--files 10000] [--rounds 10] [--changed 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repos import git  # noqa: E402  (plain functions over paths: no Django needed)

ENV = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}


def seed(path: Path, files: int) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    for i in range(files):
        folder = path / f"pkg{i // 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"module_{i:05d}.py").write_text(f'"""Module {i}."""\n\n' + "".join(
            f"def f{i}_{n}(x):\n    return x * {n} + {i}\n\n" for n in range(8)))
    subprocess.run(["git", "add", "-A"], cwd=path, check=True, env=ENV)
    subprocess.run(["git", "commit", "-q", "-m", "seed"], cwd=path, check=True, env=ENV)


def ms(values: list[float]) -> str:
    values = sorted(values)
    p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
    return f"p50 {statistics.median(values) * 1000:7.1f} ms   p90 {p90 * 1000:7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--changed", type=int, default=200)
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="gatehouse-repo-bench-"))
    try:
        source, cache = top / "source", top / "cache"
        seed(source, args.files)
        mirror = git.mirror_path(cache, "1", f"file://{source}")
        git.mirror_update(mirror, url=f"file://{source}", credential=git.NO_CREDENTIAL, scratch=cache / "tmp", max_age_s=300)
        sha = git.resolve(mirror, "main")
        prepare, worktree = [], []
        for n in range(args.rounds):
            started = time.perf_counter()
            git.mirror_update(mirror, url=f"file://{source}", credential=git.NO_CREDENTIAL, scratch=cache / "tmp",
                              max_age_s=300)  # warm: checked under the lock, not fetched
            git.keep_base(mirror, f"run-{n}", sha)
            git.workspace_create(mirror, top / "ws" / f"run-{n}", sha=sha, branch=f"gatehouse/run-{n}", public_url=str(source))
            git.seed_index(top / "ws" / f"run-{n}", cache / "runs" / f"run-{n}")
            prepare.append(time.perf_counter() - started)
            started = time.perf_counter()
            subprocess.run(["git", "worktree", "add", "-q", "-b", f"wt-{n}", str(top / "wt" / f"run-{n}"), sha], cwd=mirror,
                           check=True, env=ENV)
            worktree.append(time.perf_counter() - started)
        print(f"repository: {args.files} files; rounds: {args.rounds}; load average {os.getloadavg()[0]:.1f}")
        print(f"prepare a workspace (warm mirror, clone + checkout)  {ms(prepare)}")
        print(f"git worktree add alone (the floor)                   {ms(worktree)}")

        workspace = top / "ws" / "run-0"
        modules = sorted(workspace.glob("pkg*/module_*.py"))[: args.changed]
        for index, module in enumerate(modules):
            if index % 4 == 3:
                module.unlink()
            else:
                module.write_text(module.read_text().replace("return x", "return -x") + f"# edited {index}\n")
        state = cache / "runs" / "run-0"
        first_started = time.perf_counter()
        changes = git.changes(mirror, state, workspace, sha)
        first = time.perf_counter() - first_started
        assert len(changes.files) == len(modules), (len(changes.files), len(modules))
        again = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            git.changes(mirror, state, workspace, sha)
            again.append(time.perf_counter() - started)
        print(f"changes of {len(changes.files)} files, first call of a run      {first * 1000:7.1f} ms")
        print(f"changes of {len(changes.files)} files, next calls              {ms(again)}")
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
