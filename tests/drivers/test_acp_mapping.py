"""What the ACP driver makes of an agent's permission request, before anyone is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from drivers.acp import mapping


@pytest.mark.parametrize(
    ("call", "blind"),
    [
        # Gemini CLI 0.61.0: the command only in the title.
        ({"toolCallId": "t1", "kind": "execute", "title": "rm -rf ~"}, True),
        ({"toolCallId": "t1", "kind": "execute", "title": "ls", "rawInput": {"command": "   "}}, True),
        ({"toolCallId": "t1", "kind": "execute", "title": "ls", "rawInput": {"command": "ls -la"}}, False),
        ({"toolCallId": "t1", "kind": "execute", "rawInput": {"cmd": "ls"}}, False),
        # Not a command, whatever its repr would spell.
        ({"toolCallId": "t1", "kind": "execute", "title": "ls", "rawInput": {"command": {"argv": ["rm", "-rf", "/"]}}}, True),
        ({"toolCallId": "t1", "kind": "execute", "title": "ls", "rawInput": {"command": ["rm", 1]}}, True),
        ({"toolCallId": "t2", "kind": "edit", "title": "Write somewhere"}, True),
        ({"toolCallId": "t2", "kind": "edit", "rawInput": {"file_path": "notes.txt", "content": "x"}}, False),
        ({"toolCallId": "t3", "kind": "read", "title": "Read something"}, True),
        ({"toolCallId": "t3", "kind": "read", "locations": [{"path": "README.md"}]}, False),
        ({"toolCallId": "t4", "kind": "other", "title": "mcp tool", "rawInput": {"q": 1}}, False),
    ],
)
def test_a_request_that_does_not_say_what_it_would_do_is_unreadable(tmp_path: Path, call: dict, blind: bool) -> None:
    request = mapping.build_request(call, tmp_path)
    assert bool(mapping.unreadable(request)) is blind, request


def test_an_argv_command_is_judged_as_the_shell_line_that_runs_exactly_it(tmp_path: Path) -> None:
    # Its Python repr, "['bash', '-lc', 'rm -rf ~']", would hide `rm` from every deny rule.
    call = {"toolCallId": "t1", "kind": "execute", "rawInput": {"command": ["bash", "-lc", "rm -rf ~"]}}
    request = mapping.build_request(call, tmp_path)
    assert request.input == {"command": "bash -lc 'rm -rf ~'"}
