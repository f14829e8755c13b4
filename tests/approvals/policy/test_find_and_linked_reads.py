"""What a command reads through find and through links is held to the same rules as a
named file: `find . -exec cat {} +` reads every file under `.` (so a `reads` deny on
`.env*` holds), a recursive read that follows links (`grep -R`, `rg -L`, `zip -r`,
`diff -r`, `find -L`) reads the trees those links lead to (so a link in the workspace to
a home is a read of that home), and find's `-fprint FILE` actions write FILE."""

from __future__ import annotations

from pathlib import Path

import pytest

from approvals.policy import DEFAULT_POLICY, compile_policy, evaluate, path_eval
from approvals.policy.classes import KNOWN_PROGRAMS
from approvals.policy.operands import NAMES_FILES, file_uses
from approvals.policy.options import invocation
from approvals.policy.programs.registry import MODELS
from tests.approvals.policy.policytest import assert_cases, bash, secrets_context, secrets_workspace

READS_DENY_ENV = {"reads": {"deny": [".env*"]}, **DEFAULT_POLICY}
# Every command allowed by its rule: what is left to decide is the paths it touches.
ALLOW_COMMANDS = {**DEFAULT_POLICY, "commands": {"allow": ["*"]}}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = secrets_workspace(tmp_path)
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    (tmp_path / "home" / ".ssh" / "id_ed25519").write_text("PRIVATE\n")
    return ws


def test_find_exec_reads_every_file_under_its_start_path(workspace: Path) -> None:
    """`{}` stands for each file find finds: the inner command reads the whole tree."""
    assert_cases(READS_DENY_ENV, [("bash", bash(command), "deny", "reads.deny[0]") for command in (
        "find . -exec cat {} +", "find . -type f -exec grep KEY {} \\;", "find -exec cat {} +",
        "find . -execdir cat {} \\;", "find . -ok cat {} \\;", "find . -okdir cat {} \\;",
        "find src .. -exec cat {} +", "find ./src/.. -exec cat {} +", "find $PWD -exec cat {} +",
        "cd src && find .. -exec cat {} +", "find . -exec sudo cat {} +", "find . -exec env LC_ALL=C cat {} +",
        "find -H . -exec cat {} +", "find -O3 -D tree . -exec cat {} +", "sudo find . -exec head -n 5 {} +",
        "find . -exec tar cf /dev/null {} +",
    )] + [
        # the start path holds no such file: decided as before
        ("bash", bash("find src -exec cat {} +"), "allow", None),
        ("bash", bash("find src -name '*.py' -exec wc -l {} +"), "allow", None),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_find_exec_words_only_known_at_run_time_are_not_read_as_written(workspace: Path) -> None:
    assert_cases({**READS_DENY_ENV, "commands": {"allow": ["*"]}}, [
        # `{}.bak` is each file's name plus .bak: a path only known at run time
        ("bash", bash("find . -exec cat {}.bak \\;"), "ask", "reads.sensitive"),
        # `-exec {} ;` runs every file it finds
        ("bash", bash("find . -exec {} \\;"), "ask", "commands.dynamic"),
        # a start path the shell expands keeps its run-time status through the rebuilt command
        ("bash", bash("find ./* -exec cat {} +"), "ask", None),
        ("bash", bash("find s* -exec cat {} +"), "ask", None),
        ("bash", bash("find . -exec c?t {} +"), "ask", "commands.dynamic"),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_find_exec_changing_each_file_changes_the_tree(workspace: Path) -> None:
    """`rm {}` under a home removes what lies in it: the tree holds protected paths."""
    home = workspace.parent / "home"
    assert_cases(DEFAULT_POLICY, [
        ("bash", bash(f"find {home} -exec rm {{}} +"), "deny", "classes.protected"),
        ("bash", bash(f"find {home} -exec chmod 600 {{}} +"), "deny", "classes.protected"),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_a_read_that_follows_links_reads_the_home_a_link_leads_to(workspace: Path) -> None:
    """A repository may hold a link to a home (git stores links): a search that follows
    links then reads `~/.ssh` though it names only the workspace."""
    (workspace / "src" / "docs").symlink_to(workspace.parent / "home")
    follows = ("grep -R KEY .", "grep --dereference-recursive KEY src", "grep -R KEY", "rg -L KEY", "rg --follow KEY",
               "ag -f KEY", "ugrep -R KEY .", "zip -r - .", "diff -r . src", "tar -chf - .", "tar --dereference -cf - .",
               "cp -rL . copy", "rsync -aL . copy", "rsync -a --copy-unsafe-links . copy", "scp -r . host:x",
               "find -L . -exec cat {} +", "find . -follow -exec cat {} +", "env grep -R KEY .",
               "bash -c 'grep -R KEY src'")
    unfollowed = ("grep -r KEY .", "rg KEY", "zip -ry - .", "diff -r --no-dereference . src", "tar -cf - .",
                  "cp -r . copy", "rsync -a . copy", "find . -exec cat {} +", "ag KEY", "ugrep -r KEY .")
    assert_cases(ALLOW_COMMANDS, [("bash", bash(c), "ask", "reads.sensitive") for c in follows]
                 + [("bash", bash(c), "allow", None) for c in unfollowed],
                 paths=secrets_context(workspace), cwd=str(workspace))


def test_links_are_followed_through_chains_loops_and_back_into_the_workspace(workspace: Path) -> None:
    elsewhere = workspace.parent / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "home").symlink_to(workspace.parent / "home")  # outside -> a home
    (workspace / "src" / "vendor").symlink_to(elsewhere)
    (workspace / "src" / "loop").symlink_to(workspace)  # back to the top: walked once
    (workspace / "src" / "gone").symlink_to(workspace / "nothing")  # dangling: reads nothing
    (workspace / "lib").mkdir()
    (workspace / "lib" / "config").symlink_to(workspace / ".env")  # a link to the denied file
    assert_cases(DEFAULT_POLICY, [
        ("bash", bash("grep -R KEY src"), "ask", "reads.sensitive"),
    ], paths=secrets_context(workspace), cwd=str(workspace))
    assert_cases(READS_DENY_ENV, [
        ("bash", bash("grep -R KEY lib"), "deny", "reads.deny[0]"),
        ("bash", bash("grep -r KEY lib"), "allow", None),  # grep -r follows only links it is given
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_the_reason_names_the_link_and_where_it_leads(workspace: Path) -> None:
    (workspace / "src" / "docs").symlink_to(workspace.parent / "home")
    verdict = evaluate(compile_policy(DEFAULT_POLICY), {"tool": "bash", "input": bash("grep -R KEY ."),
                                                       "cwd": str(workspace)}, paths=secrets_context(workspace))
    assert verdict.decision == "ask", verdict
    assert "follows the link `src/docs`" in verdict.reason, verdict.reason
    assert str(workspace.parent / "home") in verdict.reason, verdict.reason
    assert "reads.sensitive" in verdict.floors


def test_a_tree_too_large_to_follow_is_asked_about(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(10):
        (workspace / "src" / f"m{i}.py").write_text("")
    monkeypatch.setattr(path_eval, "TREE_SCAN_LIMIT", 5)
    assert_cases(DEFAULT_POLICY, [
        ("bash", bash("grep -R KEY src"), "ask", "reads.tree"),
        ("bash", bash("grep -r KEY src"), "allow", None),  # nothing to follow, no reads rule: not walked
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_find_actions_that_write_a_file_are_writes(workspace: Path) -> None:
    """`-fprint FILE` writes find's listing (file names an attacker may choose) to FILE."""
    assert_cases(DEFAULT_POLICY, [
        ("bash", bash("find . -fprint ~/.bashrc"), "deny", "classes.protected"),
        ("bash", bash("find . -fprint0 ~/.profile"), "deny", "classes.protected"),
        ("bash", bash("find . -fls ~/.ssh/authorized_keys"), "deny", "classes.protected"),
        ("bash", bash("find . -name '*.py' -fprintf ~/.bashrc '%p\\n'"), "deny", "classes.protected"),
        ("bash", bash("find -L . -fprint .git/hooks/pre-commit"), "deny", "classes.protected"),
        ("bash", bash("find . -fprint /tmp/listing.txt"), "ask", "classes.outside-workspace"),
        ("bash", bash("find . -name '*.py' -fprint listing.txt"), "allow", None),
        ("bash", bash("find . -name '*.py' -print"), "allow", None),
    ], paths=secrets_context(workspace), cwd=str(workspace))


def test_every_search_program_is_held_to_the_reads_rules(workspace: Path) -> None:
    """The platinum searcher was read as a searcher but its files were never checked."""
    assert_cases({**READS_DENY_ENV, "commands": {"allow": ["pt"]}}, [
        ("bash", bash("pt KEY .env"), "deny", "reads.deny[0]"),
        ("bash", bash("pt KEY"), "deny", "reads.deny[0]"),
        ("bash", bash("pt KEY src"), "allow", "commands.allow[0]"),
    ], paths=secrets_context(workspace), cwd=str(workspace))


# Argument shapes that make the catalogue find files for a program that has any: operands,
# recursion, value options, `if=`/`of=`, tar's create and extract, find's actions.
_SHAPES = (("-r", "-o", "out", "-f", "pat", "a", "b", "c"), ("of=o", "if=i"), ("-cf", "x.tar", "a"),
           ("-xf", "x.tar", "-C", "d"), (".", "-fprint", "x"), ("install", "--prefix", "/x"), ("show", "HEAD:x"))


def test_every_program_whose_model_reads_files_has_its_paths_checked() -> None:
    """script_eval checks paths only for the programs in NAMES_FILES: a program whose files
    its model finds but that list lacks goes unchecked (as `pt` did)."""
    unchecked = set()
    for program in sorted(KNOWN_PROGRAMS | set(MODELS) | {"pt", "ag", "ack", "ugrep", "duckdb", "crontab"}):
        for shape in _SHAPES:
            words = (program, *shape)
            inv = invocation(words)  # `egrep` is read as grep: script_eval asks for inv.program
            if file_uses(inv, words) and inv.program not in NAMES_FILES:
                unchecked.add(inv.program)
    assert not unchecked, sorted(unchecked)
