"""Compiled matchers: command patterns (word by word) and path globs (gitignore style)."""

from __future__ import annotations

import posixpath
import re
import shlex

from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

SEP = "\x00"  # words never contain NUL, so it separates them unambiguously


def pattern_words(pattern: str) -> list[str]:
    """The words of a command pattern; raises ValueError when it is empty or unbalanced."""
    words = shlex.split(pattern)
    if not words:
        raise ValueError("a command pattern needs at least one word")
    return words


def command_regex(pattern: str) -> str:
    """Regex source matching "\\0w1\\0w2..." when the pattern matches from the first word.

    A pattern matches word by word from the start (`git push` matches `git push origin`,
    not `git pushy`); `*` as a whole word matches any number of words, `*` inside a word
    matches any characters of that word (`test:*`).
    """
    parts = []
    for word in pattern_words(pattern):
        if word == "*":
            parts.append(f"(?:{SEP}[^{SEP}]*)*")
        elif "*" in word:
            parts.append(SEP + f"[^{SEP}]*".join(re.escape(p) for p in word.split("*")))
        else:
            parts.append(SEP + re.escape(word))
    return "".join(parts) + f"(?={SEP}|\\Z)"


class CommandMatcher:
    """All patterns of one list, in one regex: `first(words)` is the lowest matching index."""

    __slots__ = ("_regex", "size")

    def __init__(self, patterns: list[str]) -> None:
        self.size = len(patterns)
        self._regex: re.Pattern[str] | None
        if patterns:
            alternatives = "|".join(f"(?P<r{i}>{command_regex(p)})" for i, p in enumerate(patterns))
            self._regex = re.compile(alternatives, re.DOTALL)
        else:
            self._regex = None

    def first(self, subject: str) -> int | None:
        """`subject` is `words_subject(words)`; the index of the first pattern that matches."""
        if self._regex is None:
            return None
        m = self._regex.match(subject)
        if m is None:
            return None
        group = m.lastgroup
        assert group is not None  # the only capturing groups are the named alternatives
        return int(group[1:])


def words_subject(words) -> str:
    return SEP + SEP.join(words)


def command_matches(pattern: str, words) -> bool:
    return re.match(command_regex(pattern), words_subject(words), re.DOTALL) is not None


def glob_regex(pattern: str) -> re.Pattern:
    """The compiled regex of one gitignore-style glob; ValueError when it is not usable."""
    if not pattern or not pattern.strip():
        raise ValueError("a path glob must not be empty")
    if pattern.startswith("!"):
        raise ValueError("negated globs ('!') are not supported; use the allow/ask/deny lists")
    if pattern.startswith("#"):
        raise ValueError("a glob starting with '#' is a comment in gitignore syntax")
    try:
        compiled = GitIgnoreSpecPattern(pattern)
    except Exception as exc:  # pathspec raises its own error types
        raise ValueError(f"not a valid gitignore-style glob: {exc}") from None
    if compiled.regex is None:
        raise ValueError("the glob matches nothing")
    return compiled.regex


def path_candidates(path: str, cwd: str | None) -> tuple[str, ...]:
    """The relative forms a glob is tried against, `.` and `..` resolved first.

    The path relative to the workspace when inside it, then every suffix of its
    components: a glob with a slash matches the end of the path whatever directory the
    session works in, one without a slash the file name anywhere.
    """
    if cwd and not posixpath.isabs(path):
        path = posixpath.join(cwd, path)
    path = posixpath.normpath(path)
    parts = [p for p in path.split("/") if p and p != "."]
    # `..` left at the front (a relative path climbing out) anchors nothing.
    while parts and parts[0] == "..":
        parts.pop(0)
    out = []
    if cwd and posixpath.isabs(path):
        root = posixpath.normpath(cwd)
        if path.startswith(root.rstrip("/") + "/"):
            out.append(path[len(root.rstrip("/")) + 1 :])
    for i in range(len(parts)):
        suffix = "/".join(parts[i:])
        if suffix not in out:
            out.append(suffix)
    return tuple(out)


class PathMatcher:
    __slots__ = ("_regexes",)

    def __init__(self, patterns: list[str]) -> None:
        self._regexes = [glob_regex(p) for p in patterns]

    def first(self, candidates: tuple[str, ...]) -> int | None:
        for i, regex in enumerate(self._regexes):
            for cand in candidates:
                if regex.match(cand):
                    return i
        return None


def path_matches(pattern: str, path: str, cwd: str | None = None) -> bool:
    regex = glob_regex(pattern)
    return any(regex.match(c) for c in path_candidates(path, cwd))


def inside(path: str, workspace: str) -> bool:
    """Whether `path` (joined to the workspace when relative) lies inside the workspace."""
    if not workspace:
        return False
    root = posixpath.normpath(workspace)
    full = posixpath.normpath(posixpath.join(root, path))
    return full == root or full.startswith(root.rstrip("/") + "/")
