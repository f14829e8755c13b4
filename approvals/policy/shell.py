"""Read a shell script into the simple commands it runs, with tree-sitter-bash.

Every `command` node anywhere in the tree is a simple command of its own: chains, pipes,
subshells, brace groups, `if`/`for`/`while`/`case` bodies, function bodies, command
substitutions `$(...)` and backquotes (quoted or not), process substitutions `<(...)`, and
substitutions inside assignments, redirections and here-documents. For each one we keep
its words with quotes removed, leading assignments and redirections set aside, and the
command's path reduced to its name (`/usr/bin/node` reads `node`); which words are only
known at run time (an expansion, a brace expansion, an unquoted glob); the redirections
that apply to it (its own and those of an enclosing group; `a && b > f` redirects `b`
only, as bash does); and where its standard input comes from (a pipe, a file, a
here-document whose text we keep).

Commands that run another command are looked through (`wrappers.py`): the inner commands
follow their wrapper as simple commands of their own, up to `MAX_NESTED_SCRIPTS` levels; a
command nested deeper is marked `too_deep` and is never allowed.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import NamedTuple

from tree_sitter import Node, Parser, Query, QueryCursor

from .arith import findings as arithmetic_findings
from .arith import may_find as may_find_arithmetic
from .bash_nodes import BASH, EXPANSIONS, has_expansion, unquote
from .bash_reading import bash_reads, may_disagree
from .command import MAX_NESTED_SCRIPTS, Redirect, Script, SimpleCommand, command_name
from .wrappers import LOOK_THROUGH, inner_commands, looks_through

_local = threading.local()
MAX_BASH_READINGS = 16  # scripts of one command bash is asked to read (bash_reading.py); more are asked about


def _parser() -> Parser:
    # A Parser is not safe to share between threads; one per thread, created once.
    parser = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = Parser(BASH)
    return parser


# The second word of the `let` that stands for arithmetic which may run code (arith.py);
# its third word says why.
ARITHMETIC_MARK = "\x02arithmetic"


_NON_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/random",
                        "/dev/urandom"})
_WRITE_OPS = frozenset({">", ">>", "&>", "&>>", ">|"})
_READ_OPS = frozenset({"<", "<>"})
_GLOB = re.compile(r"(?<!\\)[*?\[]")
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")  # (a node of a parsed tree has its text)


def _unquoted_text(node: Node) -> str:
    """The parts of a word that are not quoted (where globs and braces expand)."""
    if node.type == "word":
        return _text(node)
    if node.type == "concatenation":
        return "".join(_text(c) for c in node.children if c.type == "word")
    return ""


def word_status(node: Node) -> tuple[bool, bool]:
    """(dynamic, glob) of one argument node: dynamic when an expansion or a brace
    expansion gives it its value at run time, glob when an unquoted glob may."""
    kind = node.type
    if kind in ("raw_string", "ansi_c_string", "number"):
        return False, False
    dynamic = kind in EXPANSIONS or has_expansion(node)
    plain = _unquoted_text(node)
    if plain and "{" in plain and _BRACE.search(plain if kind == "word" else _text(node)):
        dynamic = True
    glob = bool(plain) and _GLOB.search(plain) is not None
    return dynamic, glob


def splits(node: Node) -> bool:
    """Whether an argument holds an unquoted expansion, whose value bash splits into words
    (`$x`, `a$(b)`): it could become several options. A quoted one (`"$x"`,
    `--author="$(id)"`) stays one word."""
    if node.type in EXPANSIONS:
        return True
    return node.type == "concatenation" and any(c.type in EXPANSIONS for c in node.children)


def _redirect(node: Node) -> Redirect | None:
    """The Redirect of a file_redirect node (None for a bare descriptor move)."""
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
        return None
    if destination is None:
        return Redirect(op, "", op in _WRITE_OPS, op in _READ_OPS, True)
    word = unquote(destination)
    dynamic, glob = word_status(destination)
    if destination.type == "process_substitution":
        return Redirect(op, word, False, False, False)  # a pipe to a command read on its own
    if op in (">&", "<&", ">&-", "<&-"):
        # `2>&1`, `>&-` duplicate or close a descriptor; `>&file` writes to the file.
        if destination.type == "number" or word.isdigit() or word == "-" or word in _NON_FILES:
            return None
        return Redirect(op, word, op == ">&", False, dynamic, glob)
    if word in _NON_FILES or word.startswith("/dev/fd/"):
        return None
    return Redirect(op, word, op in _WRITE_OPS or op == "<>", op in _READ_OPS, dynamic, glob)


_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


def heredoc_variables(nodes: Iterable[Node]) -> tuple[str, ...]:
    """Variables the here-documents among `nodes` expand (an unquoted delimiter)."""
    found: list[str] = []
    for node in nodes:
        if node.type == "heredoc_redirect":
            quoted = any(c.type == "heredoc_start" and any(q in _text(c) for q in "'\"\\") for c in node.children)
            body = next((c for c in node.children if c.type == "heredoc_body"), None)
            if body is not None and not quoted:
                found += _VARIABLE.findall(_text(body))
    return tuple(found)


def _redirects_of(nodes: Iterable[Node]) -> tuple[list[Redirect], str | None, str | None]:
    """(redirects, stdin kind, stdin text) of redirect nodes."""
    out: list[Redirect] = []
    stdin = None
    text = None
    for node in nodes:
        if node.type == "file_redirect":
            red = _redirect(node)
            if red is not None:
                out.append(red)
                if red.reads and red.op == "<":
                    stdin = "file"
        elif node.type == "heredoc_redirect":
            stdin = "heredoc"
            body = next((c for c in node.children if c.type == "heredoc_body"), None)
            quoted = any(c.type == "heredoc_start" and any(q in _text(c) for q in "'\"\\") for c in node.children)
            if body is not None and (quoted or not has_expansion(body)):
                text = _text(body)
            elif body is None:
                text = ""
            for child in node.children:
                if child.type == "file_redirect":
                    red = _redirect(child)
                    if red is not None:
                        out.append(red)
        elif node.type == "herestring_redirect":
            stdin = "heredoc"
            arg = node.named_children[-1] if node.named_child_count else None
            if arg is not None and not word_status(arg)[0]:
                text = unquote(arg) + "\n"
    return out, stdin, text


# Nodes that never contain a command: the walk does not descend into them.
_LEAVES = frozenset({"word", "raw_string", "number", "ansi_c_string", "comment", "variable_name",
                     "file_descriptor", "simple_expansion", "special_variable_name", "test_operator",
                     "heredoc_start", "heredoc_content", "heredoc_end", "regex", "string_content",
                     "extglob_pattern"})


class _Words(NamedTuple):
    split_at: frozenset[int]
    path: str | None
    heredoc_vars: tuple[str, ...]
    words: list[str]
    dynamic_name: bool
    dynamic_at: frozenset[int]
    glob_at: frozenset[int]
    assigns: tuple[str, ...]
    redirects: list[Redirect]
    stdin: str | None
    stdin_text: str | None


def _command_words(node: Node) -> _Words:
    words: list[str] = []
    path: str | None = None
    dynamic = False
    dynamic_at: set[int] = set()
    split_at: set[int] = set()
    glob_at: set[int] = set()
    assigns: list[str] = []
    redirect_nodes = []
    for child in node.named_children:
        ctype = child.type
        if ctype == "command_name":
            name_node = child.named_children[0] if child.named_child_count else child
            is_dynamic, is_glob = word_status(name_node)
            name = unquote(name_node)
            if is_dynamic or is_glob:
                dynamic = True
            elif "/" in name:
                path = name
                name = command_name(name)
            words.append(name)
        elif ctype == "variable_assignment":
            assigns.append(_text(child).split("=", 1)[0].rstrip("+"))
        elif ctype == "comment":
            continue
        elif ctype in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
            redirect_nodes.append(child)
        else:
            is_dynamic, is_glob = word_status(child)
            if is_dynamic:
                dynamic_at.add(len(words))
                if splits(child):
                    split_at.add(len(words))
            if is_glob:
                glob_at.add(len(words))
            words.append(unquote(child))
    redirects, stdin, stdin_text = _redirects_of(redirect_nodes)
    return _Words(frozenset(split_at), path, heredoc_variables(redirect_nodes) if stdin == "heredoc" else (), words, dynamic,
                  frozenset(dynamic_at), frozenset(glob_at), tuple(assigns), redirects, stdin, stdin_text)


def _declaration_words(node: Node) -> list[str]:
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


def _plain_words(text: str) -> tuple[list[str], tuple[str, ...]] | None:
    if _PLAIN_COMMAND.fullmatch(text) is None:
        return None
    words = text.split()
    if "=" not in text:
        assigns: tuple[str, ...] = ()
    else:
        found = []
        while words and _ASSIGNMENT.match(words[0]):
            found.append(words.pop(0).split("=", 1)[0].rstrip("+"))
        assigns = tuple(found)
    if words and "/" in words[0]:
        return None  # a command path: read from the tree, which keeps the path
    return words, assigns


MAX_SCRIPT_CHARS = 512 * 1024


def parse_script(script: str) -> Script:
    """All simple commands of `script`, in source order (inner wrapped commands follow).

    A script longer than MAX_SCRIPT_CHARS is not read (it could take seconds): it counts as
    one that does not parse, never allowed."""
    if len(script) > MAX_SCRIPT_CHARS:
        return Script((), False)
    _local.bash_budget = MAX_BASH_READINGS
    return _parse(script, 0)


_BACKQUOTED = re.compile(r"(?<!\\)`((?:[^`\\]|\\.)*)`", re.DOTALL)
_BACKQUOTE_ESCAPE = re.compile(r"\\([\\`$])")
_TEXT_QUERY: list[Query] = []


def _unparsed_backquotes(root: Node) -> list[str]:
    """The commands in backquotes that tree-sitter-bash leaves inside a word, a pattern or
    a here-document's body instead of parsing them as command substitutions."""
    if not _TEXT_QUERY:
        _TEXT_QUERY.append(Query(BASH, "[(word) (regex) (string_content) (extglob_pattern) (heredoc_body)"
                                       " (command_substitution)] @t"))
    out = []
    for node in QueryCursor(_TEXT_QUERY[0]).captures(root).get("t", []):
        text = _text(node)
        if node.type == "command_substitution":
            # bash removes the backslash of `\``, `\$` and `\\` inside backquotes before it reads
            # them (`echo \`rm -rf ~\`` nested in backquotes runs `rm`); the grammar does not
            if text.startswith("`") and "\\" in text:
                out.append(_BACKQUOTE_ESCAPE.sub(r"\1", text[1:-1]))
            continue
        if "`" not in text and "$(" not in text:
            continue
        if node.type == "heredoc_body" and node.parent is not None and any(
                c.type == "heredoc_start" and any(q in _text(c) for q in "'\"\\") for c in node.parent.children):
            continue  # `<<'EOF'`: the body is literal
        out += [_BACKQUOTE_ESCAPE.sub(r"\1", found) for found in _BACKQUOTED.findall(text)]
        if node.type == "heredoc_body":
            # the grammar parses a body's `$(…)` as its children, except after blanks at the
            # start of a line (`<<EOF` then a tab and `$(rm -rf ~)`): those it leaves as text
            parsed = {_text(c)[2:-1] for c in _descendants(node) if c.type in ("command_substitution",
                                                                                "arithmetic_expansion")}
            out += [found for found in _dollar_parens(text) if found not in parsed]
        else:
            out += _dollar_parens(text)
    return out


def _descendants(node: Node) -> list[Node]:
    out, stack = [], list(node.named_children)
    while stack:
        child = stack.pop()
        out.append(child)
        stack.extend(child.named_children)
    return out


def _dollar_parens(text: str) -> list[str]:
    """The scripts of the `$(…)` in a text the grammar did not parse (`${x#$(cmd)}`): each
    from its `$(` to the parenthesis that closes it; one left open is taken to the end
    (and then fails to parse, so it is asked about)."""
    out = []
    i = text.find("$(")
    while i >= 0:
        escapes = len(text[:i]) - len(text[:i].rstrip("\\"))
        if escapes % 2:  # `\$(`: literal (`\\$(` is a backslash, then a substitution)
            i = text.find("$(", i + 2)
            continue
        depth, j = 1, i + 2
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        out.append(text[i + 2:j - 1] if depth == 0 else text[i + 2:] + ")")
        i = text.find("$(", j)
    return out


def _last_command(node: Node) -> Node:
    """The node a redirection after `a && b` applies to: the last element of the list."""
    while node.type == "list":
        parts = [c for c in node.named_children if c.type not in _LEAVES and c.type != "comment"]
        if not parts:
            return node
        node = parts[-1]
    return node


class _Context(NamedTuple):
    redirects: tuple[Redirect, ...] = ()
    stdin: str | None = None
    stdin_text: str | None = None
    heredoc_vars: tuple[str, ...] = ()


_FRESH = _Context()
_NONE: frozenset[int] = frozenset()


def _new_command(fields: tuple[object, ...]) -> SimpleCommand:
    # positional NamedTuple construction without keyword handling (the fast path)
    return tuple.__new__(SimpleCommand, fields)


def _joined_lines(script: str) -> str:
    """The script as bash reads it after line continuations: a backslash-newline outside
    single quotes is removed (`r\\<newline>m -rf /` runs `rm -rf /`), which the grammar
    does not do inside a word."""
    out: list[str] = []
    i, n, quote = 0, len(script), ""
    while i < n:
        char = script[i]
        if quote == "'":
            if char == "'":
                quote = ""
        elif char == "\\" and i + 1 < n:
            if script[i + 1] == "\n":
                i += 2
                continue
            out.append(script[i:i + 2])
            i += 2
            continue
        elif char in "'\"" and (quote == "" or quote == char):
            quote = "" if quote == char else char
        out.append(char)
        i += 1
    return "".join(out)


def _both(first: Script, second: Script) -> Script:
    """Two readings of one script, both decided: every command of either, parsed only if both are."""
    return Script(tuple(dict.fromkeys(first.commands + second.commands)), first.parsed and second.parsed,
                  tuple(dict.fromkeys(first.assignments + second.assignments)))


def _parse(script: str, level: int) -> Script:
    read = _parse_one(script, level)
    if "\\\n" in script:
        # bash reads a backslash-newline as nothing (a line continuation), even inside a
        # word; the grammar splits the word there. Both readings are decided (where they
        # differ, in a comment or a quoted here-document, the grammar's may be bash's).
        joined = _joined_lines(script)
        if joined != script:
            read = _both(read, _parse_one(joined, level))
    if may_disagree(script):
        # where the two can disagree (continuations, here-documents, carriage returns),
        # bash's own reading is decided too (bash_reading.py); when bash cannot give it
        # (missing, a syntax error, too many scripts), the script is never allowed
        budget = getattr(_local, "bash_budget", 0)
        _local.bash_budget = budget - 1
        normal = bash_reads(script) if budget > 0 else None
        read = _both(read, _parse_one(normal, level)) if normal is not None else read._replace(parsed=False)
    return read


def _parse_one(script: str, level: int) -> Script:
    tree = _parser().parse(script.encode("utf-8"))
    root = tree.root_node
    parsed = not root.has_error
    out: list[SimpleCommand] = []
    assignments: list[tuple[str, str]] = []
    extra: dict[int, _Context] = {}  # node id -> redirections that apply to that node only
    stack: list[tuple[Node, _Context, str | None]] = [(root, _FRESH, None)]
    while stack:
        node, ctx, shown = stack.pop()
        own = extra.pop(node.id, None) if extra else None
        if own is not None:
            ctx = _Context(ctx.redirects + own.redirects, own.stdin or ctx.stdin, own.stdin_text or ctx.stdin_text,
                           ctx.heredoc_vars + own.heredoc_vars)
        ntype = node.type
        if ntype == "command":
            text = shown or _text(node)
            plain = _plain_words(text) if shown is None and not ctx.redirects else None
            if plain is not None:
                words, assigns = plain
                if not words:
                    continue
                cmd = _new_command((text, tuple(words), False, False, None, (), _NONE, _NONE, assigns, ctx.stdin,
                                    ctx.stdin_text, False, False, level, False, ctx.heredoc_vars, None, _NONE, _NONE,
                                    False))
            else:
                got = _command_words(node)
                if not got.words:
                    if got.assigns:
                        assignments.extend((name, text) for name in got.assigns)
                    continue
                redirects = ctx.redirects + tuple(got.redirects)
                cmd = SimpleCommand(
                    text, tuple(got.words), any(r.writes for r in redirects), got.dynamic_name,
                    redirects=redirects, dynamic_at=got.dynamic_at, glob_at=got.glob_at, assigns=got.assigns,
                    stdin=got.stdin or ctx.stdin, stdin_text=got.stdin_text if got.stdin else ctx.stdin_text,
                    level=level, heredoc_vars=ctx.heredoc_vars + got.heredoc_vars, path=got.path,
                    split_at=got.split_at,
                )
            name = cmd.words[0]
            if (name in LOOK_THROUGH or not name.isalpha() or not name.islower()) and looks_through(name) \
                    and not cmd.dynamic_name:
                if level >= MAX_NESTED_SCRIPTS:
                    out.append(cmd._replace(too_deep=True))
                else:
                    out.append(cmd)
                    parsed = inner_commands(cmd, out, level, _parse) and parsed
            else:
                out.append(cmd)
            if plain is None:
                for child in reversed(node.named_children):
                    if child.type not in _LEAVES:
                        stack.append((child, _FRESH, None))
            continue
        if ntype in ("declaration_command", "unset_command"):
            words = _declaration_words(node)
            if words:
                out.append(SimpleCommand(_text(node), tuple(words), any(r.writes for r in ctx.redirects),
                                         redirects=ctx.redirects, level=level))
            for child in reversed(node.named_children):
                if child.type not in _LEAVES:
                    stack.append((child, _FRESH, None))
            continue
        if ntype == "variable_assignment":
            # a standalone `NAME=value` statement sets the shell's own variable
            if node.parent is not None and node.parent.type not in ("command", "declaration_command"):
                assignments.append((_text(node).split("=", 1)[0].rstrip("+"), _text(node)))
        elif ntype == "redirected_statement":
            redirect_nodes = [c for c in node.children if c.type.endswith("redirect")]
            found, stdin, stdin_text = _redirects_of(redirect_nodes)
            redirects = tuple(found)
            variables = heredoc_variables(redirect_nodes) if stdin == "heredoc" else ()
            body = node.child_by_field_name("body")
            for child in reversed(node.children):
                if child.type.endswith("redirect"):
                    stack.append((child, _FRESH, None))
            if body is not None:
                mine = _Context(redirects, stdin, stdin_text, variables)
                target = _last_command(body)
                if body.type == "list":
                    extra[target.id] = mine
                    stack.append((body, ctx, None))
                elif body.type == "pipeline":
                    parts = [c for c in body.named_children if c.type not in _LEAVES]
                    # `a | b > out`: the output redirection belongs to the last command, `< in` to the first
                    if len(parts) == 1:
                        extra[parts[0].id] = mine
                    elif parts:
                        extra[parts[-1].id] = _Context(tuple(r for r in redirects if not r.reads))
                        extra[parts[0].id] = _Context(tuple(r for r in redirects if r.reads), stdin, stdin_text,
                                                      variables)
                    stack.append((body, ctx, None))
                else:
                    # a lone command shows with its redirections (`echo hi > out`)
                    lone_text = _text(node) if body.type == "command" else None
                    merged = _Context(ctx.redirects + mine.redirects, stdin or ctx.stdin,
                                      stdin_text if stdin else ctx.stdin_text, ctx.heredoc_vars + variables)
                    stack.append((body, merged, lone_text))
            continue
        elif ntype == "pipeline":
            parts = [c for c in node.named_children if c.type not in _LEAVES]
            for k in range(len(parts) - 1, -1, -1):
                part_ctx = ctx if k == 0 else _Context(ctx.redirects, "pipe", None)
                stack.append((parts[k], part_ctx, None))
            continue
        if ntype == "command_substitution":
            inner = [c for c in node.named_children if c.type not in _LEAVES]
            if inner and all(c.type == "file_redirect" for c in inner):
                # `$(< FILE)`: bash reads FILE itself, as `$(cat FILE)` would
                found, stdin, stdin_text = _redirects_of(inner)
                out.append(SimpleCommand(_text(node), ("cat",), any(r.writes for r in found), redirects=tuple(found),
                                         stdin=stdin, stdin_text=stdin_text, level=level))
                continue
        # Substitutions start a fresh command: an outer redirection does not apply inside.
        inherit = _FRESH if ntype in ("command_substitution", "process_substitution") else ctx
        for child in reversed(node.named_children):
            if child.type not in _LEAVES:
                stack.append((child, inherit, None))
    if "`" in script or "$(" in script:
        # backquotes (and `$(…)` in a pattern) the grammar leaves as text (`${x:-`cmd`}`, `${x#`cmd`}`, an unquoted
        # here-document's body) still run their command: read it as a nested script
        for backquoted in _unparsed_backquotes(root):
            if level >= MAX_NESTED_SCRIPTS:
                out.append(SimpleCommand(backquoted[:200], ("`",), too_deep=True, level=level + 1))
                continue
            sub = _parse(backquoted, level + 1)
            parsed = parsed and sub.parsed
            out.extend(sub.commands)
    if may_find_arithmetic(script):
        # arithmetic over a value the script does not fix, or a name bash resolves, runs
        # code (`x='a[$(cmd)]'; echo $((x))`): a `let` that says why, judged as code
        for text, why in arithmetic_findings(root, nested=level > 0):
            out.append(SimpleCommand(text, ("let", ARITHMETIC_MARK, why), level=level))
    # Depth-first order of the stack keeps source order except for look-through commands,
    # which were appended right after their wrapper.
    return Script(tuple(out), parsed, tuple(assignments))
