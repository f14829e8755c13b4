"""Read a shell script into the simple commands it runs, with tree-sitter-bash.

Every `command` node anywhere in the tree is a simple command of its own: chains, pipes,
subshells, brace groups, `if`/`for`/`while`/`case` bodies, function bodies, command
substitutions `$(...)` and backquotes (quoted or not), process substitutions `<(...)`, and
substitutions inside assignments, redirections and here-documents. For each one we keep
its words with quotes removed, leading assignments and redirections dropped, and the
command's path reduced to its name (`/usr/bin/node` reads `node`).

Commands that run another command are looked through: transparent wrappers (`sudo`,
`env`, `timeout`, `nohup`, `nice`, `xargs`...), `find -exec ...` and `bash -c '...'` /
`eval` yield the inner command(s) as extra simple commands, so a rule about the inner
command holds whatever wraps it.
"""

from __future__ import annotations

import re
import threading
from typing import NamedTuple

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

BASH = Language(tree_sitter_bash.language())
_local = threading.local()


def _parser() -> Parser:
    # A Parser is not safe to share between threads; one per thread, created once.
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = Parser(BASH)
    return parser


class SimpleCommand(NamedTuple):
    text: str  # the source text of the command (for the console)
    words: tuple[str, ...]  # unquoted words, command path reduced to its name
    writes_file: bool = False  # a redirection writes to a file (not /dev/null, not a descriptor)
    dynamic_name: bool = False  # the command name is computed at run time ($CMD, $(...))
    wrapped_by: str | None = None  # the wrapper this command was found inside (sudo, find -exec...)


class Script(NamedTuple):
    commands: tuple[SimpleCommand, ...]
    parsed: bool  # False when the tree has ERROR or MISSING nodes: never allowed


_NON_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_WRITE_OPS = frozenset({">", ">>", "&>", "&>>", ">|"})
_EXPANSIONS = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "process_substitution", "arithmetic_expansion"}
)
_DQ_ESCAPE = re.compile(r'\\([\\"$`\n])')
_WORD_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ANSI_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)", re.DOTALL)
_ANSI_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
                "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}
MAX_NESTED_SCRIPTS = 4


def _ansi(match: re.Match) -> str:
    esc = match.group(1)
    head = esc[0]
    if head in "xuU" and len(esc) > 1:
        try:
            return chr(int(esc[1:], 16))
        except (ValueError, OverflowError):
            return esc
    if head.isdigit():
        return chr(int(esc, 8))
    return _ANSI_SIMPLE.get(esc, "\\" + esc)


def _text(node) -> str:
    return node.text.decode("utf-8", "replace")


def unquote(node) -> str:
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


def _has_expansion(node) -> bool:
    stack = [node]
    while stack:
        item = stack.pop()
        if item.type in _EXPANSIONS:
            return True
        stack.extend(item.children)
    return False


def _redirect_writes(node) -> bool:
    """Whether a file_redirect writes to a file."""
    op = None
    destination = None
    for child in node.children:
        ctype = child.type
        if ctype == "file_descriptor":
            continue
        if op is None and not child.is_named:
            op = ctype
        elif child.is_named:
            destination = child
    if op is None:
        return False
    if op == ">&" or op == "<&":
        # `2>&1`, `>&-` duplicate or close a descriptor; `>&file` writes to the file.
        if destination is None or destination.type == "number":
            return False
        word = unquote(destination)
        return op == ">&" and not (word.isdigit() or word == "-" or word in _NON_FILES)
    if op not in _WRITE_OPS:
        return False
    if destination is None:
        return True
    if destination.type != "number" and not _has_expansion(destination):
        word = unquote(destination)
        if word in _NON_FILES or word.startswith("/dev/fd/"):
            return False
    return True


def _writes(redirects) -> bool:
    for node in redirects:
        if node.type == "file_redirect":
            if _redirect_writes(node):
                return True
        elif node.type == "heredoc_redirect":
            if any(c.type == "file_redirect" and _redirect_writes(c) for c in node.children):
                return True
    return False


# Nodes that never contain a command: the walk does not descend into them.
_LEAVES = frozenset({"word", "raw_string", "number", "ansi_c_string", "comment", "variable_name",
                     "file_descriptor", "simple_expansion", "special_variable_name", "test_operator",
                     "heredoc_start", "heredoc_content", "heredoc_end", "regex", "string_content",
                     "extglob_pattern"})


def _command_words(node) -> tuple[list[str], bool, bool]:
    """(words, writes_file, dynamic_name) of one `command` node."""
    words: list[str] = []
    writes = False
    dynamic = False
    for child in node.named_children:
        ctype = child.type
        if ctype == "word":
            text = child.text.decode("utf-8", "replace")
            words.append(_WORD_ESCAPE.sub(r"\1", text) if "\\" in text else text)
        elif ctype == "command_name":
            name_node = child.named_children[0] if child.named_child_count else child
            if name_node.type != "word" and _has_expansion(name_node):
                dynamic = True
            name = unquote(name_node)
            if "/" in name and not dynamic:
                name = name.rstrip("/").rsplit("/", 1)[-1] or name
            words.append(name)
        elif ctype == "variable_assignment" or ctype == "comment":
            continue
        elif ctype in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            if _writes((child,)):
                writes = True
        else:
            words.append(unquote(child))
    return words, writes, dynamic


def _declaration_words(node) -> list[str]:
    words = []
    for child in node.children:
        if child.type == "variable_assignment":
            words.append(unquote(child))
        elif child.is_named or child.type in ("export", "declare", "local", "readonly", "typeset", "unset", "unsetenv"):
            words.append(unquote(child))
    return words


# A command whose text has no quoting, expansion, redirection or grouping character: its
# words are exactly its whitespace-separated tokens (the tree already said it is one simple
# command), and it cannot contain another command. Reading it from the text is the fast path.
_PLAIN_COMMAND = re.compile(r"[^\\'\"$`<>(){}\[\]#&|;*?!\n]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def _plain_words(text: str) -> list[str] | None:
    if _PLAIN_COMMAND.fullmatch(text) is None:
        return None
    words = text.split()
    while words and _ASSIGNMENT.match(words[0]):
        del words[0]
    if words and "/" in words[0]:
        words[0] = words[0].rstrip("/").rsplit("/", 1)[-1] or words[0]
    return words


def parse_script(script: str) -> Script:
    """All simple commands of `script`, in source order (inner wrapped commands follow)."""
    return _parse(script, 0)


def _parse(script: str, level: int) -> Script:
    tree = _parser().parse(script.encode("utf-8"))
    root = tree.root_node
    parsed = not root.has_error
    out: list[SimpleCommand] = []
    # (node, inherited "writes to a file" from an enclosing redirected_statement)
    stack: list[tuple[Node, bool, str | None]] = [(root, False, None)]
    while stack:
        node, writes, shown = stack.pop()
        ntype = node.type
        if ntype == "command":
            text = shown or _text(node)
            plain = _plain_words(text) if shown is None else None
            if plain is not None:
                if plain:
                    cmd = SimpleCommand(text, tuple(plain), writes)
                    out.append(cmd)
                    if level < MAX_NESTED_SCRIPTS and plain[0] in _LOOK_THROUGH:
                        parsed = _inner_commands(cmd, out, level) and parsed
                continue
            words, own_writes, dynamic = _command_words(node)
            if words:
                cmd = SimpleCommand(text, tuple(words), writes or own_writes, dynamic)
                out.append(cmd)
                if level < MAX_NESTED_SCRIPTS and words[0] in _LOOK_THROUGH:
                    ok = _inner_commands(cmd, out, level)
                    parsed = parsed and ok
        elif ntype in ("declaration_command", "unset_command"):
            words = _declaration_words(node)
            if words:
                out.append(SimpleCommand(_text(node), tuple(words), writes))
        elif ntype == "redirected_statement":
            redirects = [c for c in node.children if c.type.endswith("redirect")]
            body_writes = writes or _writes(redirects)
            children = node.children
            for child in reversed(children):
                if child.type.endswith("redirect"):
                    stack.append((child, False, None))
                elif child.type == "pipeline":
                    # `a | b > out`: the redirection belongs to the last command only
                    parts = [c for c in child.named_children if c.type not in _LEAVES]
                    for k in range(len(parts) - 1, -1, -1):
                        stack.append((parts[k], body_writes if k == len(parts) - 1 else writes, None))
                else:
                    # a lone command shows with its redirections (`echo hi > out`)
                    lone_text = _text(node) if child.type == "command" else None
                    stack.append((child, body_writes, lone_text))
            continue
        # Substitutions start a fresh command: an outer redirection does not apply inside.
        inherit = False if ntype in ("command_substitution", "process_substitution") else writes
        for child in reversed(node.named_children):
            if child.type not in _LEAVES:
                stack.append((child, inherit, None))
    # Depth-first order of the stack keeps source order except for look-through commands,
    # which were appended right after their wrapper.
    return Script(tuple(out), parsed)


# --- commands that run other commands -------------------------------------------------

_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "fish"})
# wrapper -> options that take a separate argument
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "xargs": frozenset({"-I", "-n", "-L", "-P", "-d", "-E", "-s", "-a", "-i", "-l", "-e"}),
    "watch": frozenset({"-n", "-d", "--interval"}),
    "caffeinate": frozenset({"-t", "-w"}),
    "chroot": frozenset(),
    "unbuffer": frozenset(),
    "proxychains": frozenset({"-f"}),
    "torsocks": frozenset(),
}
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_LOOK_THROUGH = frozenset(_WRAPPERS) | _SHELLS | {"find", "eval"}


def _wrapped_words(words: tuple[str, ...]) -> tuple[str, ...]:
    name = words[0]
    takes_arg = _WRAPPERS[name]
    i = 1
    if name == "command" and any(w in ("-v", "-V") for w in words[1:2]):
        return ()  # `command -v x` looks x up, it does not run it
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if name in ("env", "sudo") and "=" in word and not word.startswith("-"):
            i += 1  # env NAME=value
            continue
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in takes_arg else 1
            continue
        break
    if name in ("timeout",) and i < len(words):
        i += 1  # the duration
    if name == "chroot" and i < len(words):
        i += 1  # the new root
    return tuple(words[i:])


def _inner_commands(cmd: SimpleCommand, out: list[SimpleCommand], level: int) -> bool:
    """Append the commands `cmd` runs; False when an inner script does not parse."""
    words = cmd.words
    name = words[0]
    if name in _SHELLS or name == "eval":
        source: str | None
        if name == "eval":
            source = " ".join(words[1:])
        else:
            source = None
            for j, word in enumerate(words[1:], start=1):
                if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
                    source = words[j + 1] if j + 1 < len(words) else ""
                    break
            if source is None:
                return True
        inner = _parse(source, level + 1)
        for sub in inner.commands:
            out.append(SimpleCommand(sub.text, sub.words, sub.writes_file or cmd.writes_file,
                                     sub.dynamic_name, name))
        return inner.parsed
    if name == "find":
        ok = True
        i = 1
        while i < len(words):
            if words[i] in _FIND_EXEC:
                j = i + 1
                while j < len(words) and words[j] not in (";", "+"):
                    j += 1
                inner_words = words[i + 1 : j]
                if inner_words and not _append_inner(cmd, inner_words, "find", out, level):
                    ok = False
                i = j
            i += 1
        return ok
    inner_words = _wrapped_words(words)
    if inner_words:
        return _append_inner(cmd, inner_words, name, out, level)
    return True


def _append_inner(cmd: SimpleCommand, words: tuple[str, ...], wrapper: str,
                  out: list[SimpleCommand], level: int) -> bool:
    first = words[0]
    if "/" in first:
        first = first.rstrip("/").rsplit("/", 1)[-1] or first
    words = (first,) + tuple(words[1:])
    inner = SimpleCommand(" ".join(words), words, cmd.writes_file, cmd.dynamic_name, wrapper)
    out.append(inner)
    if level < MAX_NESTED_SCRIPTS and first in _LOOK_THROUGH:
        return _inner_commands(inner, out, level + 1)
    return True
