"""A `reads` rule holds for every git route to a file: a deny on `.env*` stops an agent
printing the workspace's `.env` through git as it stops `cat .env` — by an object name
(`git show HEAD:.env`, `git cat-file -p :.env`), a pathspec (`git log -p -- .env`, a glob
or magic pathspec that matches it), a search of the working tree (`git grep KEY`), a copy
into git's store (`git add -f .env`, `git hash-object -w .env`) or a file an option names
(`git commit -F .env`); respelled, wrapped, through a link, or from another directory.
Everyday git work (`git status`, `git add -A`, `git push origin main:main`…) is decided as
before."""

from __future__ import annotations

from pathlib import Path

import pytest

from approvals.policy import DEFAULT_POLICY
from tests.approvals.policy.policytest import assert_cases, bash, secrets_context, secrets_workspace

DENY_ENV = {"reads": {"deny": [".env*"]}, **DEFAULT_POLICY}
DENIED = "reads.deny[0]"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = secrets_workspace(tmp_path)
    (ws / "notes.txt").symlink_to(".env")  # an innocent name for the secret
    (ws / "loop").symlink_to(".")  # the workspace again, under another name
    (tmp_path / "empty").mkdir()
    return ws


def denied(*commands: str) -> list[tuple]:
    return [("bash", bash(command), "deny", DENIED) for command in commands]


def test_the_git_routes_to_a_denied_file_are_denied(workspace: Path) -> None:
    assert_cases(DENY_ENV, denied(
        "git show HEAD:.env", "git show :.env", "git cat-file -p HEAD:.env", "git blame .env",
        "git diff HEAD -- .env", "git log -p -- .env", "git checkout-index --stdout .env", "git add -f .env",
        "git hash-object -w .env", "git grep KEY", "git grep --untracked KEY", "git archive HEAD .env",
        "git rev-parse HEAD:.env",
    ), paths=secrets_context(workspace), cwd=str(workspace))


def test_object_names_of_the_file_are_denied_however_spelled(workspace: Path) -> None:
    assert_cases(DENY_ENV, denied(
        "git --no-pager show HEAD:.env", "git -C . show HEAD:./.env", "git show HEAD:src/../.env",
        "git show 'HEAD:.env'", "git show HEAD:'.e'nv", "git show HEAD:.//.env", "git cat-file blob HEAD:.env",
        "git show HEAD~3:.env", "git show stash@{0}:.env", "git show 'HEAD@{2024-01-01 10:00}:.env'",
        "git show 'HEAD^{/fix: x}:.env'", "git show :0:.env", "git show :2:.env", "git show ':/.env'",
        "git show HEAD:config/.env.local", "git show HEAD .env", "git show -- HEAD:.env",
        "git-show HEAD:.env", "/usr/lib/git-core/git-show HEAD:.env", "git show user@host:.env",
        "git unpack-file HEAD:.env", "git tag leak HEAD:.env", "git diff HEAD:.env HEAD~1:.env",
        "git config --blob HEAD:.env --list",
        "git show $(git rev-parse HEAD:.env)", "git show \"$(echo HEAD):.env\"",
    ), paths=secrets_context(workspace), cwd=str(workspace))


def test_a_glob_in_an_object_name_is_literal_unless_the_shell_expands_it(workspace: Path) -> None:
    """git looks `HEAD:.e*` up as a file called `.e*`, which is not `.env`; unquoted, the
    shell may first expand it (beside a file named `HEAD:.env`), so it is judged like
    `cat .e*`; a literal name that looks like a secret is asked about like `cat '*.env'`."""
    assert_cases(DENY_ENV, [
        ("bash", bash("git show 'HEAD:.e*'"), "allow", None),
        ("bash", bash("git show HEAD:.e*"), "ask", "reads.sensitive"),
        ("bash", bash("git show HEAD:config/*"), "ask", "reads.sensitive"),
        ("bash", bash("git show 'HEAD:*.env'"), "ask", "reads.sensitive"),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_pathspecs_that_reach_the_file_are_denied(workspace: Path) -> None:
    """A pathspec is matched by git, not the shell: a glob, a backslash or magic (`icase`,
    `glob`, `top`) reaches the file without naming it, and so does a directory."""
    assert_cases(DENY_ENV, denied(
        "git log -p --follow -- .env", "git log -p .env", "git diff .env", "git show HEAD -- .env",
        "git whatchanged -p -- .env", "git diff-tree -p HEAD -- .env", "git format-patch -1 -- .env",
        "git annotate .env", "git blame -- .env", "git log -p -- '.e*'", "git log -p -- '*.local'",
        "git log -p -- '[.]env'", "git log -p -- '\\.env'", "git log -p -- ':(icase).ENV'",
        "git log -p -- ':(glob)**/.env*'", "git log -p -- ':/.env'", "git log -p -- ':(top).env'",
        "git --icase-pathspecs log -p -- .ENV", "git log -p -- config", "git diff -- .",
        "git archive HEAD:config", "git archive HEAD:", "git stash push -- .env", "git stash -- .env",
        "git commit -m x .env", "git update-index --add .env", "git merge-file -p src/app.py .env src/app.py",
        "git mv .env notes.md",
    ), paths=secrets_context(workspace), cwd=str(workspace))


def test_git_grep_reads_the_tree_it_searches(workspace: Path) -> None:
    """With no pathspec `git grep` searches the working directory, like `rg KEY`; a pathspec
    or a tree narrows it, an exclusion alone does not, and its pattern is never a path."""
    assert_cases(DENY_ENV, denied(
        "git grep KEY", "git grep -n -e KEY", "git grep --no-index KEY", "git grep --cached KEY",
        "git grep KEY -- ':!src'", "git grep KEY -- :/", "git grep KEY HEAD:config", "git grep KEY HEAD:",
        "git grep KEY -- loop", "git grep KEY ..", "git grep --regexp=KEY .env", "git grep -h '' -- .env",
        "git grep -f .env -- src", "git grep --file=.env -- src",
    ) + [
        ("bash", bash("git grep KEY src"), "allow", None),
        ("bash", bash("git grep -n 'TODO:' -- src"), "allow", None),
        ("bash", bash("git grep KEY"), "allow", None, {"cwd": str(workspace / "src")}),  # from src: src only
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_files_named_by_options_or_read_from_input_are_reads(workspace: Path) -> None:
    """A message file ends up in `git log`, a pathspec file in git's error messages; names
    git reads from its input are only known at run time, so a person decides."""
    assert_cases(DENY_ENV, denied(
        "git commit -F .env", "git commit --file=.env", "git commit -t .env", "git tag -a v1 -F .env",
        "git merge -F .env feature", "git notes add -F .env", "git add --pathspec-from-file=.env",
        "git log -L1,5:.env", "git log -L '/a:b/,+2:.env'", "git blame --contents .env src/app.py",
        "git archive --add-file=.env HEAD", "git config -f .env --list", "git config --file .env --list",
    ) + [
        ("bash", bash("git cat-file --batch"), "ask", "reads.sensitive"),
        ("bash", bash("echo .env | git add -f --pathspec-from-file=-"), "ask", "reads.sensitive"),
        ("bash", bash("git hash-object --stdin-paths"), "ask", None),
        ("bash", bash("git checkout-index --stdin"), "ask", None),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_wrapped_relocated_and_linked_git_reads_are_denied(workspace: Path) -> None:
    """Wrappers and nested shells, another directory (`cd`, `git -C`, the request's cwd), a
    link with an innocent name to the file, a link to the whole workspace."""
    src = {"cwd": str(workspace / "src")}
    assert_cases(DENY_ENV, denied(
        "env git show HEAD:.env", "bash -c 'git show HEAD:.env'", "sudo git show HEAD:.env",
        "timeout 5 git log -p -- .env", "git show HEAD:.env | base64", "find . -name x -exec git show HEAD:.env \\;",
        "cd src && git show HEAD:../.env", "git -C src show HEAD:../.env", "git -C src log -p -- ../.env",
        "git show HEAD:notes.txt", "git hash-object notes.txt", "git add -f notes.txt", "git show HEAD:loop/.env",
        "git diff --no-index /dev/null .env", f"git diff --no-index {workspace.parent / 'empty'} .",
    ) + [
        ("bash", bash("git show HEAD:.env"), "deny", DENIED, src),
        ("bash", bash("git show HEAD:../.env"), "deny", DENIED, src),
        ("bash", bash("git log -p -- ../.env"), "deny", DENIED, src),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_run_time_words_that_may_name_the_file_are_asked_about(workspace: Path) -> None:
    assert_cases(DENY_ENV, [
        ("bash", bash('git show "HEAD:$f"'), "ask", "reads.sensitive"),
        ("bash", bash('git show "HEAD$suffix"'), "ask", "reads.sensitive"),  # `HEAD:.env` at run time
        ("bash", bash('git diff HEAD -- "src/$f"'), "ask", "reads.sensitive"),
        ("bash", bash("git cat-file -p \"$(cat sha.txt)\""), "ask", None),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_an_ask_rule_asks_for_every_git_route(workspace: Path) -> None:
    policy = {"reads": {"ask": [".env*"]}, **DEFAULT_POLICY}
    assert_cases(policy, [("bash", bash(command), "ask", "reads.ask[0]") for command in (
        "git show HEAD:.env", "git log -p -- .env", "git grep KEY", "git add -f .env", "git blame .env",
    )], paths=secrets_context(workspace), cwd=str(workspace))


def test_adding_everything_honours_gitignore_but_forcing_it_reads_the_tree(workspace: Path) -> None:
    """`git add -A` copies what .gitignore lets through, and the policy does not read
    .gitignore: refusing it in every workspace holding an ignored `.env` would refuse
    everyday work. Forcing (`add -f`, `stash --all`) takes ignored files too: a tree read."""
    assert_cases(DENY_ENV, [
        ("bash", bash("git add -A"), "allow", None),
        ("bash", bash("git add ."), "allow", None),
        ("bash", bash("git add --all"), "allow", None),
        ("bash", bash("git add -u"), "allow", None),
        ("bash", bash("git add '*.py'"), "allow", None),
        ("bash", bash("git stash -u"), "allow", None),
        ("bash", bash("git commit -a -m x"), "allow", None),
    ] + denied(
        "git add -f .", "git add -A -f", "git add --all --force", "git add -f config", "git add -f '*.local'",
        "git add -f -- ':!src'", "git stash -a", "git stash push --all", "git stash push -a -- ':!src'",
    ), paths=secrets_context(workspace), cwd=str(workspace))


def test_revisions_refspecs_and_urls_are_not_taken_for_files(workspace: Path) -> None:
    """`main:main` in a push is a refspec, `git@host:repo` a URL, `HEAD~1` or `a..b` a
    revision: none is a read, and everyday git work is decided as before; a file named
    beside them still is."""
    assert_cases(DENY_ENV, [(("bash", bash(command), decision, rule)) for command, decision, rule in (
        ("git status", "allow", None), ("git diff", "allow", None), ("git log", "allow", None),
        ("git add src/app.py", "allow", None), ("git commit -m 'fix: x'", "allow", None),
        ("git push origin main:main", "ask", "classes.remote-mutation"),
        ("git fetch origin a:b", "allow", None), ("git remote add origin git@github.com:org/repo.git", "allow", None),
        ("git show HEAD", "allow", None), ("git checkout -b x", "allow", None), ("git diff HEAD~1", "allow", None),
        ("git log --oneline main..feature", "allow", None), ("git show abc1234", "allow", None),
        ("git show HEAD:src/app.py", "allow", None), ("git log -p -- src", "allow", None),
        ("git blame -L 1,5 src/app.py", "allow", None), ("git log -L 1,5:src/app.py", "allow", None),
        ("git config user.name 'Ann: X'", "allow", None),
        ("git show HEAD~1 .env", "deny", DENIED), ("git diff main..feature -- .env", "deny", DENIED),
        ("git log -p @{u} .env", "deny", DENIED),
    )], paths=secrets_context(workspace), cwd=str(workspace))


def test_git_writes_of_named_files_meet_the_protected_floor(workspace: Path) -> None:
    """`git checkout -- FILE`, `git restore FILE`, `git rm FILE` and `git mv SRC DEST` write
    the files they name: the agent's control files and a home's start-up files stay
    protected, however the pathspec is spelled."""
    protected = [("bash", bash(command), "deny", "classes.protected") for command in (
        "git checkout -- .claude/settings.json", "git checkout HEAD~3 -- .git/hooks/pre-commit",
        "git checkout main .claude/settings.json", "git restore .claude/settings.json",
        "git restore -s HEAD~1 -- :/.claude/settings.json", "git checkout -- ':(top).claude/settings.json'",
        "git checkout -- '.claude/setting?.json'", "git checkout -- ':(icase).Claude/Settings.json'",
        "git -C .claude checkout -- settings.json", "git checkout-index -f .claude/settings.json",
        "git mv notes.txt .claude/settings.json", "git mv src ~/.ssh", "git rm ~/.bashrc",
        "git restore --staged --worktree .claude/settings.json", "env git restore .codex/config.toml",
    )]
    everyday = [("bash", bash(command), "allow", None) for command in (
        "git checkout main", "git checkout -b feature", "git restore --staged .claude/settings.json",
        "git rm --cached .claude/settings.json", "git rm -r src", "git mv src lib",
    )]
    # discarding changes stays what the catalogue says it is
    discards = [("bash", bash(command), "deny", "classes.destructive") for command in (
        "git checkout main -- src/app.py", "git restore src/app.py", "git restore 'src/*.py'",
    )]
    assert_cases(DEFAULT_POLICY, protected + everyday + discards, paths=secrets_context(workspace), cwd=str(workspace))


def test_object_names_are_read_from_the_repository_top_whatever_the_working_directory(workspace: Path) -> None:
    """git reads `HEAD:PATH` from the repository's top: from `src`, `HEAD:config/x` is the
    top's `config/x`, so a rule anchored to a directory holds there too."""
    policy = {"reads": {"deny": ["config/**"]}, **DEFAULT_POLICY}
    assert_cases(policy, [
        ("bash", bash("git show HEAD:config/.env.local"), "deny", DENIED),
        ("bash", bash("git show :/config/.env.local"), "deny", DENIED),
        ("bash", bash("git cat-file -p HEAD:config/.env.local"), "deny", DENIED),
        ("bash", bash("git show HEAD:../config/.env.local"), "deny", DENIED),  # `../` is the cwd's
        ("bash", bash("git show HEAD:src/app.py"), "allow", None),
        ("bash", bash("git show HEAD:./app.py"), "allow", None),
    ], paths=secrets_context(workspace), cwd=str(workspace / "src"))


def test_pathspecs_from_the_top_are_judged_from_the_repository_top_whatever_the_working_directory(workspace: Path) -> None:
    """`:/x` and `:(top)x` name the top's x, as `HEAD:x` does: from `src`, a rule anchored
    to a directory holds for them too, read or written (they were judged from `src`)."""
    policy = {"reads": {"deny": ["config/**"]}, **DEFAULT_POLICY}
    assert_cases(policy, [
        ("bash", bash("git log -p -- ':(top)config/.env.local'"), "deny", DENIED),
        ("bash", bash("git log -p -- ':/config/.env.local'"), "deny", DENIED),
        ("bash", bash("git diff HEAD -- ':(top,glob)config/*.local'"), "deny", DENIED),
        ("bash", bash("git grep KEY -- ':(top)config'"), "deny", DENIED),
        ("bash", bash("git log -p -- ':(top)src/app.py'"), "allow", None),
        ("bash", bash("git log -p -- app.py"), "allow", None),
        ("bash", bash("git checkout -- ':(top).claude/settings.json'"), "deny", "classes.protected"),
        ("bash", bash("git restore -- ':/.claude/settings.json'"), "deny", "classes.protected"),
    ], paths=secrets_context(workspace), cwd=str(workspace / "src"))


def _git(ws: Path, *args: str) -> None:
    import os
    import subprocess

    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(ws.parent), "GIT_CONFIG_GLOBAL": "/dev/null"}
    subprocess.run(["git", *args], cwd=ws, check=True, env=env, capture_output=True)


def _repository(ws: Path, *tracked: str, ignore: str = "") -> None:
    _git(ws, "init", "-q")
    (ws / ".gitignore").write_text(ignore)
    _git(ws, "add", "-f", "src", ".gitignore", *tracked)


PRINTERS = ("git diff", "git diff --cached", "git diff HEAD~1 HEAD", "git show", "git show HEAD~2", "git log -p",
            "git log --patch --oneline", "git log -U1", "git whatchanged -p", "git format-patch -1 --stdout",
            "git archive HEAD", "git stash show -p", "git -C src diff", "cd src && git diff", "git diff --stat -p",
            "git diff-tree -p HEAD", "git difftool -y")


def test_printing_what_git_tracks_reads_a_tracked_denied_file(workspace: Path) -> None:
    """`git diff`, `git show`, `git log -p`… print any file the repository tracks without
    naming it: a tracked `.env` is read by them (the index says what is tracked)."""
    _repository(workspace, ".env")
    assert_cases(DENY_ENV, denied(*PRINTERS) + [("bash", bash(command), "allow", None) for command in (
        "git log", "git log --oneline", "git log --stat", "git diff --stat", "git diff --name-only", "git show -s",
        "git show --name-status HEAD", "git diff -- src", "git log -p -- src", "git show HEAD:src/app.py",
        "git status", "git stash show")], paths=secrets_context(workspace), cwd=str(workspace))


def test_an_untracked_denied_file_does_not_stop_git_diff(workspace: Path) -> None:
    _repository(workspace, ignore=".env\nconfig/\n")
    # (`git archive`, `git diff-tree` and `git difftool` are asked about by the default policy whatever they read)
    unclassified = ("stash", "archive", "diff-tree", "difftool")
    assert_cases(DENY_ENV, [("bash", bash(command), "allow", None) for command in PRINTERS
                            if not any(word in command for word in unclassified)],
                 paths=secrets_context(workspace), cwd=str(workspace))


def test_what_an_earlier_command_of_the_script_stages_is_printed_too(workspace: Path) -> None:
    """`git add -A && git diff --cached` prints what the add staged, which the index on
    disk does not list yet: after a git command that changes something, a printing one
    reads the whole tree."""
    _repository(workspace, ignore="config/\n")  # `.env` is neither ignored nor tracked
    assert_cases(DENY_ENV, denied("git add -A && git diff --cached", "git add . ; git show", "git stash -u; git stash show -p")
                 + [("bash", bash("git diff && git add -A"), "allow", None),
                    ("bash", bash("git diff --cached"), "allow", None)],
                 paths=secrets_context(workspace), cwd=str(workspace))


def test_an_index_that_does_not_read_means_the_whole_tree(workspace: Path) -> None:
    _repository(workspace, ignore=".env\n")
    (workspace / ".git" / "index").write_bytes(b"DIRC\x00\x00\x00\x02\x00\x00\x00\x05garbage")
    assert_cases(DENY_ENV, denied("git diff"), paths=secrets_context(workspace), cwd=str(workspace))


@pytest.mark.parametrize("setup", ["v2", "v3", "v4", "sha256"])
def test_the_index_is_read_in_every_version_git_writes(tmp_path: Path, setup: str) -> None:
    from approvals.policy.programs.git.index import parse_index, tracked_paths

    ws = tmp_path / "r"
    ws.mkdir()
    _git(ws, "init", "-q", *(["--object-format=sha256"] if setup == "sha256" else []))
    names = [".env", "src/app.py", "/".join(["d" * 200] * 5) + "/x.txt", "sp ace.txt", "ünï.txt"]
    for name in names:
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("x")
    _git(ws, "add", ".")
    if setup == "v3":
        (ws / "new.txt").write_text("x")
        _git(ws, "add", "-N", "new.txt")  # intent-to-add: an extended flag, version 3
        names.append("new.txt")
    if setup in ("v3", "v4"):
        _git(ws, "update-index", "--index-version", setup[1])
    index = ws / ".git" / "index"
    assert index.read_bytes()[4:8] == bytes([0, 0, 0, int(setup[1]) if setup in ("v3", "v4") else 2])
    assert tracked_paths(str(index)) == tuple(sorted(names))
    assert tracked_paths(str(ws / ".git" / "missing")) == ()
    assert parse_index(index.read_bytes()[:-30]) is None  # truncated
