"""A simple command as the shell reader gives it (`shell.py`), and the script it belongs to.

The types every part of the policy core reads a command through: the shell reader and the
wrappers it looks through make them, the program models, risks, classes and paths read
them. Nothing here imports another module of the policy core.
"""

from __future__ import annotations

from typing import NamedTuple

# How deep wrappers and nested scripts are read (`bash -c 'sudo sh -c …'`); a command nested
# deeper is marked `too_deep` and is never allowed.
MAX_NESTED_SCRIPTS = 8


class Redirect(NamedTuple):
    op: str  # ">", ">>", "<", "<>", "&>", ">&", ...
    target: str  # the target as written, quotes removed
    writes: bool  # writes a file (not a descriptor, not /dev/null)
    reads: bool  # reads a file (`< f`, `<> f`)
    dynamic: bool  # the target is only known at run time
    glob: bool = False


class SimpleCommand(NamedTuple):
    text: str  # the source text of the command (for the console)
    words: tuple[str, ...]  # unquoted words, command path reduced to its name
    writes_file: bool = False  # a redirection writes to a file (not /dev/null, not a descriptor)
    dynamic_name: bool = False  # the command name is computed at run time ($CMD, $(...), a glob)
    wrapped_by: str | None = None  # the wrapper this command was found inside (sudo, find -exec...)
    redirects: tuple[Redirect, ...] = ()
    dynamic_at: frozenset[int] = frozenset()  # indices of words with an expansion or brace expansion
    glob_at: frozenset[int] = frozenset()  # indices of words with an unquoted glob (`*`, `?`, `[`)
    assigns: tuple[str, ...] = ()  # variables set for this command (`X=1 cmd`, `env X=1 cmd`)
    stdin: str | None = None  # "pipe", "file", "heredoc" (its text in stdin_text) or None
    stdin_text: str | None = None  # a here-document or here-string known before run time
    too_deep: bool = False  # a command that runs another, nested deeper than we read
    remote: bool = False  # runs on another machine (ssh host CMD): its paths are not ours
    level: int = 0  # how many wrappers or nested scripts enclose it
    operands_unknown: bool = False  # more operands come at run time (xargs, parallel)
    heredoc_vars: tuple[str, ...] = ()  # variables a here-document on its input expands
    path: str | None = None  # the command word as written when it is a path (`./x`, `/usr/bin/rm`)
    split_at: frozenset[int] = frozenset()  # words with an unquoted expansion (bash splits its value)
    tree_at: frozenset[int] = frozenset()  # words standing for every file under a path (find's `{}`)
    follows_links: bool = False  # those trees are walked through links (`find -L`)

    @property
    def plain(self) -> bool:
        """Nothing but its words to read: no redirection, run-time word, assignment, input,
        wrapper, nesting or remote host."""
        return not (self.redirects or self.dynamic_at or self.glob_at or self.assigns or self.stdin
                    or self.wrapped_by or self.too_deep or self.remote or self.dynamic_name or self.operands_unknown
                    or self.heredoc_vars)

    @property
    def wild_at(self) -> frozenset[int]:
        """Words whose run-time value is not what is written: expansions, and unquoted
        globs (`p*sh` runs `push` where a file of that name exists, `*` may give `-rf`)."""
        return self.dynamic_at | self.glob_at if self.glob_at else self.dynamic_at


class Script(NamedTuple):
    commands: tuple[SimpleCommand, ...]
    parsed: bool  # False when the tree has ERROR or MISSING nodes: never allowed
    assignments: tuple[tuple[str, str], ...] = ()  # standalone `NAME=value` statements: (name, text)


def command_name(path: str) -> str:
    """The name a command path runs: its last component (`/proc/self/exe` is the shell)."""
    if path.startswith("/proc/") and path.rstrip("/").endswith("/exe"):
        return "sh"
    return path.rstrip("/").rsplit("/", 1)[-1] or path
