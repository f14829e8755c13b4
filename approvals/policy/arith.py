"""Arithmetic and variable names that run code.

bash evaluates a variable's *value* as an arithmetic expression — recursively — wherever
it does arithmetic: `$((…))`, `$[…]`, `((…))`, `for ((…))`, `let`, the `-eq`… tests of
`[[ … ]]`, an indexed array's subscript, `${x:offset:length}`, a `declare -i` variable's
assignment. An array subscript inside that value is expanded first, command substitutions
included, so a value the agent chose runs a command the gate never saw:

    x='a[$(rm -rf ~)]'; echo $((x))        x=$(cat build/payload); echo $((x + 1))

A prompt expansion (`${x@P}`) of such a value runs its command substitutions outright.
A name bash resolves at run time does the same as arithmetic: a nameref (`declare -n r='a[$(cmd)]'`),
an indirect expansion (`${!x}` where x holds such a name), and the names `printf -v`,
`read`, `mapfile`, `unset`, `[[ -v … ]]`, `declare` take (`printf -v 'a[$(cmd)]' x`).

This module finds those places in a parsed script. A variable is *fixed* when every
assignment the script makes to it is an integer (a literal, an arithmetic result, a loop
over integers, the count of `wc` reading its input, `nproc`, `seq` without a format);
a variable the script never assigns comes from the agent's environment, which Gatehouse
gave it (inside a nested script, `bash -c '…'`, it could come from the outer command, so it
is not fixed). Anything else — a string, a substitution, `read`, `for x in words` — is
not fixed, and arithmetic over it, or a name holding a subscript with a `$` or a backquote,
is code the policy cannot read (`commands.interpreter`). Flow is not followed: an
assignment anywhere in the script counts, as a function may run at any point.
"""

from __future__ import annotations

import re

from tree_sitter import Node, Query, QueryCursor

from .bash_nodes import BASH, has_expansion, unquote

# What bash itself sets to an integer.
_INTEGER_SPECIALS = frozenset({"#", "?", "$", "!", "-", "RANDOM", "LINENO", "SECONDS", "BASHPID", "PPID", "UID",
                               "EUID", "OPTIND", "SHLVL", "EPOCHSECONDS", "EPOCHREALTIME", "COLUMNS", "LINES",
                               "HISTCMD", "SRANDOM"})
_POSITIONAL = re.compile(r"^([0-9]+|@|\*)$")
_INT = re.compile(r"^[+-]?(?:[0-9]+|0[xX][0-9a-fA-F]+|[0-9]+#[0-9A-Za-z@_]+)$")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
# Builtins whose operands (or an option's value) are variable names they assign or test.
_NAME_TAKERS = frozenset({"read", "mapfile", "readarray", "getopts", "printf", "unset", "declare", "typeset",
                          "local", "export", "readonly", "wait", "test", "["})
# A script without any of these has nothing for this module to find: `((`, `$[` or any
# `[`, `${`, or one of these words (the characters are tested first: the words' search,
# a `\b` tried at every position, costs more than the parse of a short command).
_HINT_WORDS = re.compile(r"\b(?:let|declare|local|typeset|printf|read|mapfile|readarray|unset|getopts|wait|test|"
                         r"export|readonly)\b")

INT, NAME, ANY = 0, 1, 2  # what a variable may hold: an integer, a plain name or word, anything


def may_find(script: str) -> bool:
    return "((" in script or "[" in script or "${" in script or _HINT_WORDS.search(script) is not None


def _text(node: Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text is not None else ""


def _literal(node: Node) -> str | None:
    """The word a node stands for, quotes and escapes removed, when it has no expansion."""
    if node.type in _LITERALS and not has_expansion(node):
        return unquote(node)
    return None


_LITERALS = frozenset({"number", "word", "raw_string", "string", "ansi_c_string", "translated_string",
                       "concatenation"})


def _literal_class(text: str) -> int:
    if text == "" or _INT.match(text):
        return INT
    if "[" in text or "$" in text or "`" in text:
        return ANY
    return NAME


def _counts_only(node: Node) -> bool:
    """A command substitution that prints an integer: `wc` reading its input (a file name
    it printed could be anything), `nproc`, `seq` without a format or a separator."""
    body = [c for c in node.named_children if c.type != "comment"]
    if len(body) != 1:
        return False
    last = body[0]
    if last.type == "pipeline":
        parts = list(last.named_children)
        last = parts[-1] if parts else last
    if last.type == "redirected_statement":
        inner = last.child_by_field_name("body")
        if inner is None or any(c.type != "file_redirect" for c in last.named_children if c.id != inner.id):
            return False
        last = inner
    if last.type != "command":
        return False
    words = [_literal(c) for c in last.named_children if c.type != "command_name"]
    name_node = last.child_by_field_name("name")
    name = _literal(name_node.named_children[0]) if name_node is not None and name_node.named_children else None
    if name is None or any(w is None for w in words):
        return False
    operands = [w for w in words if w is not None and not w.startswith("-")]
    if name == "wc":
        return not operands and all(w in ("-l", "-c", "-w", "-m", "-L", "--lines", "--bytes", "--words",
                                          "--chars", "--max-line-length") for w in words)
    if name == "nproc":
        return True
    if name == "seq":
        return all(w is not None and (_INT.match(w) or w in ("-w", "--equal-width")) for w in words)
    return False


def _value_class(node: Node | None) -> int:
    if node is None:
        return INT
    literal = _literal(node)
    if literal is not None:
        return _literal_class(literal)
    if node.type == "arithmetic_expansion":
        return INT
    if node.type == "command_substitution" and _counts_only(node):
        return INT
    if node.type == "string":
        parts = list(node.named_children)
        if len(parts) == 1 and parts[0].type in ("arithmetic_expansion", "command_substitution"):
            return _value_class(parts[0])
    if node.type == "array":
        return max((_value_class(c) for c in node.named_children), default=INT)
    return ANY


class _Names:
    """What each variable the script assigns may hold (the worst of its assignments)."""

    def __init__(self, nested: bool) -> None:
        self.classes: dict[str, int] = {}
        self.nested = nested

    def set(self, name: str, cls: int) -> None:
        self.classes[name] = max(self.classes.get(name, INT), cls)

    def of(self, name: str) -> int:
        if name in _INTEGER_SPECIALS:
            return INT
        if _POSITIONAL.match(name):
            return ANY  # a function's or `bash -c`'s arguments
        if name in self.classes:
            return self.classes[name]
        return ANY if self.nested else INT


_QUERY: list[Query] = []


def _nodes(root: Node) -> list[Node]:
    """The nodes this module looks at, found by a tree-sitter query (in C: a walk in Python
    cost ten times as much)."""
    if not _QUERY:
        _QUERY.append(Query(BASH, "[" + " ".join(f"({kind})" for kind in _KINDS) + "] @n"))
    return QueryCursor(_QUERY[0]).captures(root).get("n", [])


_KINDS = ("variable_assignment", "for_statement", "command", "arithmetic_expansion", "compound_statement",
          "c_style_for_statement", "binary_expression", "unary_expression", "subscript", "expansion",
          "declaration_command", "unset_command")


def _command_name(node: Node) -> str | None:
    name_node = node.child_by_field_name("name")
    if name_node is None or not name_node.named_children:
        return None
    return _literal(name_node.named_children[0])


def _declaration_flags(node: Node) -> str:
    return "".join(_text(c)[1:] for c in node.named_children if c.type == "word" and _text(c).startswith("-"))


def _collect_assignments(nodes: list[Node], names: _Names) -> None:
    for node in nodes:
        kind = node.type
        if kind == "variable_assignment":
            target = node.child_by_field_name("name")
            if target is None:
                continue
            if target.type == "subscript":
                target = target.named_children[0] if target.named_children else target
            name = _text(target)
            op = next((_text(c) for c in node.children if c.type in ("=", "+=")), "=")
            parent = node.parent
            in_arith = parent is not None and parent.type in ("c_style_for_statement",)
            if in_arith:
                continue
            declared_int = parent is not None and parent.type == "declaration_command" and "i" in _declaration_flags(parent)
            cls = INT if declared_int else _value_class(node.child_by_field_name("value"))
            if op == "+=" and cls != INT:
                cls = ANY
            if parent is not None and parent.type == "declaration_command" and "n" in _declaration_flags(parent):
                continue  # a nameref: judged where it is declared
            names.set(name, cls)
        elif kind == "for_statement":  # (and `select`)
            variable = node.child_by_field_name("variable")
            values = node.children_by_field_name("value")
            if variable is not None:
                cls = max((_value_class(v) for v in values), default=ANY) if values else ANY
                names.set(_text(variable), cls)
        elif kind == "command":
            program = _command_name(node)
            if program in ("read", "mapfile", "readarray", "getopts", "printf", "wait"):
                for arg in node.named_children:
                    literal = _literal(arg) if arg.type != "command_name" else None
                    if literal is not None:
                        match = _IDENT.match(literal)
                        if match and match.end() in (len(literal), literal.find("[")):
                            names.set(match.group(), ANY)


def _identifiers(node: Node, *, words: bool = True) -> list[str]:
    """The variables an arithmetic expression refers to (not inside a command substitution)."""
    out: list[str] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("command_substitution", "process_substitution"):
            continue  # a command of its own, judged as such
        if n.type == "variable_name" or (n.type == "special_variable_name"):
            out.append(_text(n))
            continue
        if words and n.type in ("word", "raw_string", "string_content") and n.child_count == 0:
            out.extend(m.group() for m in _IDENT.finditer(_text(n)))
            continue
        stack.extend(n.children)
    return out


def _subscript_runs(text: str, names: _Names) -> str | None:
    """Why a variable name with a subscript (`a[i]`, `a[$(cmd)]`) that bash resolves at run
    time runs code, or None."""
    if "[" not in text:
        return None
    index = text[text.index("[") + 1:]
    if "$" in index or "`" in index:
        if "$(" in index or "`" in index:
            return f"the name `{text}` has a command substitution in its subscript, which bash runs"
        for name in re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9@*])", index):
            if names.of(name) != INT:
                return f"the subscript of `{text}` expands `${name}`, a value the command does not fix"
    for ident in _IDENT.findall(index):
        if names.of(ident) != INT:
            return f"the subscript of `{text}` is arithmetic over `{ident}`, a value the command does not fix"
    return None


def _arith_reason(context: Node, names: _Names, what: str, *, words: bool = True) -> str | None:
    for ident in _identifiers(context, words=words):
        if names.of(ident) != INT:
            return (f"{what} evaluates `{ident}` as arithmetic, and its value is not fixed by the command "
                    f"(a value such as `a[$(cmd)]` runs cmd)")
    return None


def findings(root: Node, *, nested: bool) -> list[tuple[str, str]]:
    """(the text of each place, why it may run code) in a parsed script."""
    names = _Names(nested)
    nodes = _nodes(root)
    _collect_assignments(nodes, names)
    out: list[tuple[str, str]] = []

    def add(node: Node, why: str | None) -> None:
        if why:
            out.append((_text(node)[:200], why))

    for node in nodes:
        kind = node.type
        if kind == "arithmetic_expansion":
            add(node, _arith_reason(node, names, "the arithmetic expansion"))
        elif kind == "compound_statement" and node.children and node.children[0].type == "((":
            add(node, _arith_reason(node, names, "the arithmetic command"))
        elif kind == "c_style_for_statement":
            for part in node.children:
                if part.type not in ("do_group", "compound_statement", "for", "((", "))", ";"):
                    add(node, _arith_reason(part, names, "the arithmetic `for`"))
        elif kind == "binary_expression" and any(c.type == "test_operator" and _text(c) in _ARITH_TESTS
                                                 for c in node.children):
            for part in node.named_children:
                if part.type != "test_operator":
                    add(node, _arith_reason(part, names, "the arithmetic test"))
        elif kind == "unary_expression" and any(c.type == "test_operator" and _text(c) == "-v" for c in node.children):
            for part in node.named_children:
                literal = _literal(part)
                if literal is not None:
                    add(node, _subscript_runs(literal, names))
                elif part.type != "test_operator":
                    add(node, _expanded_name_reason(part, names))
        elif kind == "subscript":
            index = [c for c in node.named_children[1:]] if node.named_children else []
            for part in index:
                if _text(part) in ("@", "*"):
                    continue
                add(node, _arith_reason(part, names, "the array subscript"))
        elif kind == "expansion":
            add(node, _expansion_reason(node, names))
        elif kind == "command":
            add(node, _command_reason(node, names))
        elif kind == "declaration_command" or kind == "unset_command":
            add(node, _declaration_reason(node, names))
    return out


def _expanded_name_reason(node: Node, names: _Names) -> str | None:
    for ident in _identifiers(node, words=False):
        if names.of(ident) == ANY:
            return f"the name bash resolves comes from `${ident}`, a value the command does not fix"
    return None


def _expansion_reason(node: Node, names: _Names) -> str | None:
    children = node.children
    types = [c.type for c in children]
    if len(children) > 2 and types[1] == "!" and "*" not in types and "@" not in types:
        # `${!x}`: the value of the variable x names (a subscript in it is expanded)
        target = children[2]
        if target.type == "variable_name" and names.of(_text(target)) == ANY:
            return f"`{_text(node)}` reads the variable `${_text(target)}` names, which the command does not fix"
    if "@" in types and any(c.type == "P" for c in children):
        # `${x@P}` expands the value as a prompt string: command substitutions in it run
        target = children[1]
        if target.type == "subscript" and target.named_children:
            target = target.named_children[0]
        if target.type == "variable_name" and names.of(_text(target)) == ANY:
            return f"`{_text(node)}` expands the value of `{_text(target)}` as a prompt, running what it substitutes"
    for i, child in enumerate(children):
        if child.type == ":" and i > 1:
            # `${x:offset:length}`: arithmetic
            for part in children[i + 1:]:
                if part.type in (":", "}"):
                    continue
                why = _arith_reason(part, names, "the substring offset")
                if why:
                    return why
            break
    return None


def _name_words(node: Node, program: str) -> list[Node]:
    """The words of a name-taking builtin that are variable names."""
    args = [c for c in node.named_children if c.type != "command_name"]
    if program == "printf":
        return [args[i + 1] for i, a in enumerate(args[:-1]) if _literal(a) == "-v"]
    if program in ("test", "["):
        return [args[i + 1] for i, a in enumerate(args[:-1]) if _literal(a) == "-v"]
    return [a for a in args if not (_literal(a) or "").startswith("-")]


def _command_reason(node: Node, names: _Names) -> str | None:
    program = _command_name(node)
    if program == "let":
        for arg in node.named_children:
            if arg.type != "command_name":
                why = _arith_reason(arg, names, "`let`")
                if why:
                    return why
        return None
    if program not in _NAME_TAKERS:
        return None
    for word in _name_words(node, program):
        literal = _literal(word)
        why = _subscript_runs(literal, names) if literal is not None else _expanded_name_reason(word, names)
        if why:
            return why
    return None


def _declaration_reason(node: Node, names: _Names) -> str | None:
    flags = _declaration_flags(node) if node.type == "declaration_command" else ""
    for child in node.named_children:
        if child.type == "variable_assignment":
            target = child.child_by_field_name("name")
            value = child.child_by_field_name("value")
            if target is not None and target.type == "subscript":
                why = _subscript_runs(_text(target), names)
                if why:
                    return why
            if "n" in flags and value is not None:
                literal = _literal(value)
                if literal is not None:
                    why = _subscript_runs(literal, names)
                elif _value_class(value) != INT:
                    why = "a nameref is given a name only known at run time (a subscript in it runs code)"
                else:
                    why = None
                if why:
                    return why
            if "i" in flags and value is not None:
                why = _arith_reason(value, names, "the integer variable's assignment")
                if why:
                    return why
        elif child.type != "variable_name" and not _text(child).startswith("-"):
            literal = _literal(child)
            why = _subscript_runs(literal, names) if literal is not None else _expanded_name_reason(child, names)
            if why:
                return why
    return None
