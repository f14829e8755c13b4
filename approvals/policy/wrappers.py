"""Commands that run other commands, looked through (their models' wrapper facet).

The inner command (or script) of a wrapper is appended after it as simple commands of its
own, so a rule about the inner command holds whatever wraps it:

- transparent wrappers: `sudo`, `doas`, `env`, `command`, `builtin`, `exec`, `nice`,
  `nohup`, `time`, `timeout`, `stdbuf`, `ionice`, `setsid`, `chroot DIR`, `flock FILE`,
  `taskset MASK`, `chrt PRIO`, `strace`, `unbuffer`, `proxychains`, `torsocks`,
  `xargs` (operands arrive at run time), `busybox`/`toybox` applets, `npx`/`bunx`/`uvx`,
  `uv run`, `poetry run`, `npm exec`, `python -m pip`, `coproc`;
- commands given a script: `bash -c`, `sh -c` (any shell, `-c` in any cluster), `eval`,
  `su -c`, `runuser -c`, `flock -c`, `sudo -s`/`-i CMD`, `watch CMD` (run by `sh -c`),
  `parallel CMD ::: ARGS`, `script -c`, `trap CMD`, `env -S`, a shell fed a
  here-document or here-string, `ssh HOST CMD` (read as the remote shell reads it; the
  commands are marked remote: their paths are not the workspace's);
- `find -exec/-execdir/-ok/-okdir CMD ;` with `{}` standing for every file under find's
  start paths (the inner command's use of it is a recursive one, through links with `-L`),
  `kubectl exec … -- CMD` and `docker exec|run … CMD` (remote).
"""

from __future__ import annotations

from collections.abc import Callable

from .command import MAX_NESTED_SCRIPTS, Script, SimpleCommand, command_name
from .programs.interpreters import SHELLS as _SHELLS
from .programs.kit import Inner
from .programs.registry import MODELS, looks_through, program_name

__all__ = ["MAX_INNER_SCRIPT_CHARS", "SHELLS", "inner_commands", "looks_through"]

# The shell reader's `_parse(script, level)`, handed in by the reader itself (`shell.py`
# imports this module): an inner script (`bash -c '…'`) is read as any script is.
Parse = Callable[[str, int], Script]

MAX_INNER_SCRIPT_CHARS = 32 * 1024
SHELLS = frozenset(_SHELLS)
LOOK_THROUGH = frozenset(name for name, model in MODELS.items() if model.inner is not None)


def inner_commands(cmd: SimpleCommand, out: list[SimpleCommand], level: int, parse: Parse) -> bool:
    """Append the commands `cmd` runs, an inner script read with `parse`; False when an
    inner script does not parse."""
    name = program_name(cmd.words[0])[0]
    model = MODELS.get(name)
    if model is None or model.inner is None:
        return True
    handler = model.inner
    ok = True
    for inner in handler(cmd.words, cmd):
        if inner.cwd is not None and not (cmd.remote or inner.remote):
            out.append(_change_directory(cmd, inner.cwd, name, level))
        if inner.script is not None and len(inner.script) > MAX_INNER_SCRIPT_CHARS:
            # Quoting grows with every level of nesting: a script this long inside another is
            # not read (it would cost seconds), and never allowed.
            out.append(SimpleCommand(cmd.text[:200], (name,), wrapped_by=name, too_deep=True, level=level + 1))
            continue
        if inner.script is not None:
            script = parse(inner.script, level + 1)
            ok = ok and script.parsed
            for sub in script.commands:
                out.append(sub._replace(wrapped_by=sub.wrapped_by or name, remote=sub.remote or inner.remote
                                        or cmd.remote, operands_unknown=sub.operands_unknown or inner.operands_unknown))
            for _variable, text in script.assignments:
                # a standalone `NAME=value` of the inner shell (`bash -c 'PATH=./bin; ls'`) is
                # judged as the `export` it amounts to for the commands after it
                out.append(SimpleCommand(text, ("export", text), wrapped_by=name, level=level + 1,
                                         remote=inner.remote or cmd.remote))
            continue
        if not inner.words:
            continue
        ok = _append_inner(cmd, inner, name, out, level, parse) and ok
    return ok


def _change_directory(cmd: SimpleCommand, cwd: tuple[str, int], wrapper: str, level: int) -> SimpleCommand:
    """`env -C DIR cmd`, `sudo -D DIR cmd`: the wrapper changes directory before it runs
    the command, read as the `cd DIR` it amounts to (what follows is resolved from there)."""
    directory, at = cwd
    return SimpleCommand(f"cd {directory}", ("cd", directory), wrapped_by=wrapper, level=level + 1,
                         dynamic_at=frozenset({1}) if at in cmd.dynamic_at else frozenset(),
                         glob_at=frozenset({1}) if at in cmd.glob_at else frozenset(),
                         split_at=frozenset({1}) if at in cmd.split_at else frozenset())


def _append_inner(cmd: SimpleCommand, inner: Inner, wrapper: str, out: list[SimpleCommand], level: int,
                  parse: Parse) -> bool:
    words = inner.words
    first = words[0]
    shift = inner.start
    tree_at = inner.tree_at | frozenset(i - shift for i in cmd.tree_at if i >= shift >= 0)
    if shift >= 0:
        dynamic = frozenset(i - shift for i in cmd.dynamic_at if i >= shift)
        split = frozenset(i - shift for i in cmd.split_at if i >= shift)
        globs = frozenset(i - shift for i in cmd.glob_at if i >= shift)
        dynamic_name = cmd.dynamic_name or shift in cmd.dynamic_at or shift in cmd.glob_at
    elif inner.origin:
        # rebuilt from the wrapper's own words: each keeps the run-time status of its origin
        dynamic, split, globs = (frozenset(k for k, j in enumerate(inner.origin) if j in where)
                                 for where in (cmd.dynamic_at, cmd.split_at, cmd.glob_at))
        dynamic_name = cmd.dynamic_name or 0 in dynamic or 0 in globs
    else:
        dynamic = frozenset(i for i, w in enumerate(words) if "$" in w or "`" in w)
        split = dynamic
        globs = frozenset()
        dynamic_name = cmd.dynamic_name or 0 in dynamic
    if inner.placeholder:
        dynamic = dynamic | frozenset(k for k, w in enumerate(words) if inner.placeholder in w)
        split = split | frozenset(k for k, w in enumerate(words) if inner.placeholder in w)
        dynamic_name = dynamic_name or inner.placeholder in first
    path = None
    if "/" in first and not dynamic_name:
        path, first = first, command_name(first)
    words = (first,) + tuple(words[1:])
    assigns = cmd.assigns
    if wrapper in ("env", "sudo", "doas") and shift > 0:
        # (env sets any name, not only a shell identifier: `BASH_FUNC_ls%%=() { …; }` is a
        # function every bash it starts imports)
        extra = tuple(w.split("=", 1)[0] for w in cmd.words[1:shift]
                      if "=" in w and not w.startswith("-")
                      and (wrapper == "env" or w.split("=", 1)[0].isidentifier()))
        assigns = assigns + extra
    sub = SimpleCommand(" ".join(words), words, False, dynamic_name, wrapper, (), dynamic, globs, assigns,
                        cmd.stdin, cmd.stdin_text, False, cmd.remote or inner.remote, level + 1,
                        cmd.operands_unknown or inner.operands_unknown, (), path, split, tree_at,
                        cmd.follows_links or inner.follows_links)
    if looks_through(first) and not dynamic_name:
        if level + 1 >= MAX_NESTED_SCRIPTS:
            out.append(sub._replace(too_deep=True))
            return True
        out.append(sub)
        return inner_commands(sub, out, level + 1, parse)
    out.append(sub)
    return True

