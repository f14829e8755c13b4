"""What the sandbox floor hides of the workspace: the files a `reads` deny rule matches
(approvals/policy/floor_reads.py), so code the policy cannot read does not read them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from approvals.policy import DEFAULT_POLICY, compile_policy, denied_reads

DENY_SECRETS = {**DEFAULT_POLICY, "reads": {"deny": [".env*", "secrets/**"], "allow": ["**"]}}


def _files(ws: Path, names: list[str]) -> None:
    for name in names:
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"content of {name}\n")


def test_the_files_a_reads_deny_matches_are_found_wherever_they_lie_in_the_workspace(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _files(ws, [".env", "src/.env.local", "secrets/a/key.txt", "src/app.py", "README.md"])
    hidden, cut = denied_reads(compile_policy(DENY_SECRETS), str(ws))
    assert sorted(hidden) == sorted(str(ws / n) for n in (".env", "src/.env.local", "secrets/a/key.txt"))
    assert cut is False


def test_nothing_is_hidden_when_the_policy_denies_no_read(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _files(ws, [".env", "src/app.py"])
    # (an `ask` is a read a person may approve: an approved read must see the file)
    asks = {**DEFAULT_POLICY, "reads": {"ask": [".env*"], "allow": ["**"]}}
    assert denied_reads(compile_policy(asks), str(ws)) == ([], False)
    assert denied_reads(compile_policy(DEFAULT_POLICY), str(ws)) == ([], False)


def test_a_policy_that_runs_code_unasked_inside_the_floor_still_hides_what_it_denies(tmp_path: Path) -> None:
    # (the case the floor is for: `in_floor.code: allow` lets `python -c "open('.env')…"` run)
    ws = tmp_path / "ws"
    _files(ws, [".env", "deploy.key"])
    sandboxed = {**DENY_SECRETS, "in_floor": {"default": "allow", "code": "allow"}}
    hidden, _ = denied_reads(compile_policy(sandboxed), str(ws))
    assert hidden == [str(ws / ".env")]


def test_files_git_tracks_and_the_repository_itself_are_left(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _files(ws, [".env.example", ".env", "src/app.py"])
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    subprocess.run(["git", "-C", str(ws), "add", ".env.example"], check=True)
    (ws / ".git" / ".env.inside-the-repository").write_text("x")
    hidden, _ = denied_reads(compile_policy(DENY_SECRETS), str(ws))
    assert hidden == [str(ws / ".env")]


def test_a_link_inside_the_workspace_to_a_denied_file_is_hidden_by_its_target(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _files(ws, ["config/real-settings", "src/app.py"])
    os.symlink("config/real-settings", ws / ".env")  # the name is denied, the target is not
    os.symlink("/etc/hostname", ws / ".env.outside")  # outside: not the floor's to hide here
    hidden, _ = denied_reads(compile_policy(DENY_SECRETS), str(ws))
    assert hidden == [str(ws / ".env")]  # (bwrap mounts the empty file over its real path)


def test_a_workspace_larger_than_the_limit_says_the_walk_was_cut(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _files(ws, [".env", *(f"src/f{i}.py" for i in range(5))])
    hidden, cut = denied_reads(compile_policy(DENY_SECRETS), str(ws), limit=3)
    assert cut is True
    assert len(hidden) <= 1
