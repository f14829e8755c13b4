"""Where bash and the grammar read a script differently, the policy decides what bash will
run: a backslash-newline is a line continuation even inside a word (`r\\<newline>m -rf /`
runs `rm -rf /`), so both readings are decided and the more severe wins."""

from __future__ import annotations

import pytest

from approvals.policy import DEFAULT_POLICY, compile_policy, evaluate

from .policytest import DENY_LIST_POLICY

DENY_LIST = compile_policy(DENY_LIST_POLICY)
DEFAULT = compile_policy(DEFAULT_POLICY)


def decide(policy, command: str):
    return evaluate(policy, {"tool": "bash", "input": {"command": command}, "cwd": "/home/dev/project"})


@pytest.mark.parametrize("command", [
    "r\\\nm -rf /", "rm -r\\\nf /", "git pu\\\nsh origin main", "g\\\nit push", "echo x; c\\\nurl https://x",
    "bash -c 'r\\\nm -rf /'", "x=1 r\\\nm -rf /", "echo \"$(r\\\nm -rf /)\"",
])
def test_a_line_continuation_inside_a_word_does_not_hide_a_denied_command(command):
    assert decide(DENY_LIST, command).decision == "deny", command


def test_a_continuation_bash_keeps_literally_is_read_as_the_grammar_reads_it():
    assert decide(DENY_LIST, "echo 'a\\\nb'; ls").decision == "allow"  # inside single quotes: literal
    assert decide(DENY_LIST, "# note \\\nrm -rf /").decision == "deny"  # a comment ends at the newline
    assert decide(DEFAULT, "ca\\\nt .env").decision == "ask"  # `cat .env`: a secret read


def test_everyday_continued_commands_stay_allowed():
    assert decide(DEFAULT, "ls -la \\\n  src").decision == "allow"
    assert decide(DEFAULT, "git log \\\n  --oneline -5").decision == "allow"
