"""Reading a sed script command by command, as GNU sed reads it: what it runs, writes
and reads (`risks.py` asks about the first two, `operands.py` decides the files it reads)."""

from __future__ import annotations

from collections.abc import Iterator


def _sed_delimited(script: str, i: int, delim: str) -> int:
    """Index just after the next unescaped `delim` from i."""
    n = len(script)
    while i < n:
        ch = script[i]
        if ch == "\\":
            i += 2
            continue
        if ch == delim:
            return i + 1
        i += 1
    return n


def _sed_address(script: str, i: int) -> int:
    n = len(script)
    if i < n and (script[i].isdigit() or script[i] in "+~"):
        i += 1
        while i < n and (script[i].isdigit() or script[i] == "~"):
            i += 1
    elif i < n and script[i] == "$":
        i += 1
    elif i < n and script[i] == "/":
        i = _sed_delimited(script, i + 1, "/")
    elif i + 1 < n and script[i] == "\\":
        i = _sed_delimited(script, i + 2, script[i + 1])
    else:
        return i
    while i < n and script[i] in "IM":
        i += 1
    return i


def _sed_commands(script: str) -> Iterator[tuple[str, str]]:
    """(command, argument) of each command of a sed script, read as GNU sed reads it: the
    argument of `s`/`y` is its flags, of `r`/`R`/`w`/`W` the file name (to the line's end)."""
    i = 0
    n = len(script)
    while i < n:
        while i < n and script[i] in " \t\n;{}":
            i += 1
        if i >= n:
            break
        i = _sed_address(script, i)
        while i < n and script[i] in " \t":
            i += 1
        if i < n and script[i] == ",":
            i = _sed_address(script, i + 1)
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            break
        command = script[i]
        if command in "sy" and i + 1 < n:
            delim = script[i + 1]
            j = _sed_delimited(script, i + 2, delim)
            j = _sed_delimited(script, j, delim)
            k = j
            while k < n and script[k] not in ";\n}":
                k += 1
            yield command, script[j:k]
            i = k
            continue
        if command in "rRwW":
            end = script.find("\n", i)
            end = n if end < 0 else end
            yield command, script[i + 1:end].strip()
            i = end
            continue
        if command in "aic:btTvlLqQ#" or command == "F":
            start = i
            while i < n and script[i] != "\n" and (command in "aic#" or script[i] != ";"):
                i += 1
            yield command, script[start + 1:i]
            continue
        yield command, ""
        i += 1


def sed_runs_code(script: str) -> str | None:
    """Whether a sed script runs a command (`e`, the `e` flag of `s`) or writes a file
    (`w`, `W`, the `w` flag of `s`)."""
    for command, argument in _sed_commands(script):
        if command == "e" or command == "s" and "e" in argument.split("w", 1)[0]:
            return "runs a command"
        if command in "wW" or command == "s" and "w" in argument:
            return "writes a file"
    return None


def sed_read_files(script: str) -> list[str]:
    """The files a sed script reads and prints (`r FILE`, `R FILE`)."""
    return [argument for command, argument in _sed_commands(script) if command in "rR" and argument]
