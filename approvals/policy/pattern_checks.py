"""What makes a rule's command pattern or path glob unusable: it does not parse, or it can
never match anything the policy is asked about.

Used when a policy document is validated (saved, checked, compiled), never per request;
session grants keep their own, older checks.

A **command pattern** is refused when

- it does not parse as words (an unclosed quote, a lone trailing backslash) or has none;
- it contains a NUL character (no command does);
- it contains unquoted shell syntax: `|`, `&`, `;`, `<`, `>`, `(`, `)` or a newline. A
  pattern is matched against the words of *one* simple command, and the shell never leaves
  a pipe, a list operator, a redirection or a subshell among a command's words, so
  `curl * | sh` can never match (quote the character when a literal word is meant).

A **path glob** (gitignore style) is matched against paths as Gatehouse resolves them: the
workspace-relative path, or for a deny/ask glob also the absolute path of a file outside
the workspace (with its leading `/` taken as the root anchor). Those paths are normalised:
no empty segment, no `.` or `..` segment, never a NUL. So a glob is refused when

- it is empty, negated (`!x`: not supported, use the allow/ask/deny lists), or starts with
  `#` (a comment in gitignore syntax);
- it contains a NUL character;
- it starts with `//` (Claude Code's spelling of an absolute path: Gatehouse writes `/etc/**`);
- one of its segments is empty (`src//a`), `.` (`./src/**`) or `..` (`../shared/**`);
- it is only `**/` or `/**/` (which match no path here: write `**`);
- the gitignore reader finds no pattern in it (`/`, an unclosed `[`) or refuses it (a lone
  trailing backslash).

Not refused, because they can match: `**foo**` (the same as `*foo*`), an absolute glob
(`/srv/data/**` matches the files outside the workspace a deny or ask rule is asked about;
in an allow list it is read from the workspace root), `*`, `**`, a trailing `/`.
"""

from __future__ import annotations

import shlex

from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

_SHELL_SYNTAX = frozenset("|&;<>()\n")


def _unquoted_shell_syntax(pattern: str) -> str | None:
    """The first run of unquoted shell syntax characters, read as POSIX shlex reads quotes."""
    quote: str | None = None
    escaped = False
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
        elif quote == "'":
            if ch == "'":
                quote = None
        elif ch == "\\":
            escaped = True
        elif quote == '"':
            if ch == '"':
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in _SHELL_SYNTAX:
            end = i
            while end < len(pattern) and pattern[end] in _SHELL_SYNTAX and pattern[end] != "\n":
                end += 1
            return pattern[i:end] if ch != "\n" else "\\n"
    return None


def command_pattern_problem(pattern: str) -> str | None:
    """Why a command pattern is unusable, or None."""
    if not pattern.strip():
        return "the pattern is empty"
    try:
        words = shlex.split(pattern)
    except ValueError as exc:
        why = {"No closing quotation": "a quote is not closed",
               "No escaped character": "it ends with a lone backslash"}.get(str(exc), str(exc))
        return f"the pattern `{pattern}` does not parse as words: {why}"
    if not words:
        return "the pattern has no words"
    if "\x00" in pattern:
        return "the pattern contains a NUL character, which no command contains, so it can never match"
    syntax = _unquoted_shell_syntax(pattern)
    if syntax == "\\n":
        return ("the pattern spans lines, and a newline separates commands; a pattern matches the words of one "
                "simple command, so this one can never match")
    if syntax is not None:
        return (f"`{syntax}` in `{pattern}` is shell syntax (a pipe, list, redirection or subshell), never a word "
                "of a command; a pattern matches the words of one simple command, so this one can never match "
                f"(write one rule per command, or quote `{syntax}` if it is meant as a word)")
    return None


def glob_problem(glob: str) -> str | None:
    """Why a gitignore-style path glob is unusable or can never match, or None."""
    if not glob.strip():
        return "the glob is empty"
    if glob.startswith("!"):
        return "negated globs (`!…`) are not supported: put the exception in another list (allow, ask or deny)"
    if glob.startswith("#"):
        return "a glob starting with `#` is a comment in gitignore syntax (write `\\#` for a literal `#`)"
    if "\x00" in glob:
        return "the glob contains a NUL character, which no path contains, so it can never match"
    if glob.startswith("//"):
        return (f"`{glob}` starts with `//` (Claude Code's spelling of an absolute path); an absolute glob "
                f"starts with one `/` here (`{'/' + glob.lstrip('/')}`), so as written it can never match")
    body = glob[1:] if glob.startswith("/") else glob
    body = body.rstrip("/")
    if not body:
        return f"`{glob}` names no path"
    for segment in body.split("/"):
        if segment == "":
            return f"`{glob}` has an empty segment (`//`); paths are matched normalised, so it can never match"
        if segment in (".", ".."):
            hint = ("write the path without `./`" if segment == "." else
                    "write the path it leads to, such as `/srv/shared/**` for a place outside the workspace")
            return (f"`{glob}` has a `{segment}` segment; paths are matched after `.` and `..` are resolved, so it "
                    f"can never match: {hint}")
    if body == "**" and glob.endswith("/"):
        return f"`{glob}` matches no path here (write `**` for every path)"
    if (len(glob) - len(glob.rstrip("\\"))) % 2:
        return f"`{glob}` ends with a lone backslash, which escapes nothing"
    try:
        compiled = GitIgnoreSpecPattern(glob)
    except Exception as exc:  # pathspec raises its own error types
        return f"`{glob}` is not a valid gitignore-style glob ({exc})"
    if compiled.regex is None:
        if "[" in glob:
            return f"`{glob}` has a `[` character class that is not closed, so it names no path"
        return f"`{glob}` names no path"
    return None
