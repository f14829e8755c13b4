"""Real git: a bare repository on disk is the remote (reached over file://)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

GIT_ENV = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "T",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "PATH": "/usr/bin:/bin"}


def sh(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(autouse=True)
def _repository_cache(settings: Any, tmp_path: Path) -> None:
    settings.GATEHOUSE_REPOSITORY_CACHE_DIR = tmp_path / "repo-cache"
    settings.GATEHOUSE_REPOSITORY_URLS = []


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """A bare repository with `main` (README.md, src/app.py, logo.bin) and a branch `dev`."""
    seed = tmp_path / "seed"
    seed.mkdir()
    sh("init", "-q", "-b", "main", cwd=seed)
    (seed / "README.md").write_text("# App\n")
    (seed / "src").mkdir()
    (seed / "src" / "app.py").write_text("def main():\n    return 1\n")
    (seed / "logo.bin").write_bytes(bytes(range(256)))
    (seed / "old_name.txt").write_text("a file that will be renamed\n" * 5)
    sh("add", "-A", cwd=seed)
    sh("commit", "-q", "-m", "initial", cwd=seed)
    sh("checkout", "-q", "-b", "dev", cwd=seed)
    (seed / "DEV.md").write_text("dev\n")
    sh("add", "-A", cwd=seed)
    sh("commit", "-q", "-m", "dev work", cwd=seed)
    sh("checkout", "-q", "main", cwd=seed)
    bare = tmp_path / "remote.git"
    sh("clone", "-q", "--bare", str(seed), str(bare))
    return bare
