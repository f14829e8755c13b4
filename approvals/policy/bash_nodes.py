"""tree-sitter-bash's language, and the word a node of its tree stands for.

The shell reader (`shell.py`) and the arithmetic finder (`arith.py`) read the same tree
with these; nothing here imports another module of the policy core.
"""

from __future__ import annotations

import re

import tree_sitter_bash
from tree_sitter import Language, Node

BASH = Language(tree_sitter_bash.language())
EXPANSIONS = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion"}
)
_DQ_ESCAPE = re.compile(r'\\([\\"$`\n])')
_WORD_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ANSI_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)", re.DOTALL)
_ANSI_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
                "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


def _ansi(match: re.Match[str]) -> str:
    esc: str = match.group(1)
    head = esc[0]
    if head in "xuU" and len(esc) > 1:
        try:
            return chr(int(esc[1:], 16))
        except (ValueError, OverflowError):
            return esc
    if head.isdigit():
        return chr(int(esc, 8))
    return _ANSI_SIMPLE.get(esc, "\\" + esc)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")  # (a node of a parsed tree has its text)


def unquote(node: Node) -> str:
    """The word a node stands for, quotes removed (expansions are kept as written)."""
    kind = node.type
    if kind == "word":
        text = _text(node)
        return _WORD_ESCAPE.sub(r"\1", text) if "\\" in text else text
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "string":
        return _DQ_ESCAPE.sub(r"\1", _text(node)[1:-1])
    if kind == "translated_string":
        return _DQ_ESCAPE.sub(r"\1", _text(node)[2:-1])
    if kind == "ansi_c_string":
        return _ANSI_ESCAPE.sub(_ansi, _text(node)[2:-1])
    if kind == "concatenation":
        return "".join(unquote(child) for child in node.children)
    return _text(node)


def has_expansion(node: Node) -> bool:
    """Whether a node holds an expansion (`$x`, `${x}`, `$(…)`, `<(…)`, `$((…))`) anywhere inside."""
    stack = [node]
    while stack:
        item = stack.pop()
        if item.type in EXPANSIONS:
            return True
        stack.extend(item.children)
    return False
