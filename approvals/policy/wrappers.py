"""Commands that run other commands, looked through.

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

import shlex
from collections.abc import Callable
from typing import NamedTuple

from .options import program_name
from .shell import MAX_NESTED_SCRIPTS, SimpleCommand, _parse, command_name

MAX_INNER_SCRIPT_CHARS = 32 * 1024
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "fish", "mksh", "yash", "tcsh", "csh", "rbash"})


class _Inner(NamedTuple):
    words: tuple[str, ...] = ()  # an inner command, or
    script: str | None = None  # an inner script (parsed as shell)
    remote: bool = False
    operands_unknown: bool = False
    start: int = 0  # index in the wrapper's words where `words` begins (-1 when rebuilt)
    placeholder: str | None = None  # words containing it are replaced at run time (xargs -I {})
    tree_at: frozenset[int] = frozenset()  # words standing for every file under a path (find's `{}`)
    follows_links: bool = False  # find -L: those trees are walked through links
    origin: tuple[int, ...] = ()  # rebuilt words (start -1): the wrapper's word each comes from


def _skip_options(words, start: int, values: frozenset[str], *, assign: bool = False,
                  numeric: bool = False) -> int:
    """Index of the first word after the options (and `NAME=value` words when `assign`)."""
    i = start
    while i < len(words):
        word = words[i]
        if word == "--":
            return i + 1
        if assign and "=" in word and not word.startswith("-") and word.split("=", 1)[0].isidentifier():
            i += 1
            continue
        if word.startswith("-") and len(word) > 1:
            name = word.split("=", 1)[0]
            if "=" in word and name.startswith("--"):
                i += 1
            elif name in values:
                i += 2
            else:
                i += 1
            continue
        if numeric and word.lstrip("+-").isdigit():
            i += 1
            continue
        return i
    return i


def _after(values: str, *, assign: bool = False, positional: int = 0, numeric: bool = False) -> Callable:
    takes = frozenset(values.split())

    def handler(words) -> list[_Inner]:
        i = _skip_options(words, 1, takes, assign=assign, numeric=numeric)
        i += positional
        return [_Inner(tuple(words[i:]), start=i)] if i < len(words) else []

    return handler


def _sudo(words) -> list[_Inner]:
    takes = frozenset("-u -g -C -D -h -p -r -t -U -T -R --user --group --close-from --chdir --host --prompt "
                      "--role --type --other-user --command-timeout --chroot".split())
    i = 1
    shell = False
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if word.startswith("--"):
            name = word.split("=", 1)[0]
            if name in ("--shell", "--login"):
                shell = True
            if name in ("--edit", "--list", "--validate", "--version", "--help", "--reset-timestamp",
                        "--remove-timestamp"):
                return []
            i += 2 if name in takes and "=" not in word else 1
            continue
        if word.startswith("-") and len(word) > 1:
            letters = word[1:]
            if set(letters) & set("elvVkK"):
                return []  # sudoedit, list, validate...: nothing runs
            if set(letters) & set("si"):
                shell = True
            # a value-taking letter ends the cluster; its value is the rest or the next word
            for j, ch in enumerate(letters):
                if "-" + ch in takes:
                    if j == len(letters) - 1:
                        i += 1
                    break
            i += 1
            continue
        if "=" in word and word.split("=", 1)[0].isidentifier():
            i += 1
            continue
        break
    rest = tuple(words[i:])
    if shell:
        # sudo -s/-i runs the shell with `-c` and each word quoted
        return [_Inner(script=shlex.join(rest))] if rest else []
    return [_Inner(rest, start=i)] if rest else []


def _shell(words, cmd: SimpleCommand) -> list[_Inner]:
    """`-c` is a flag: the script is the first operand after every option (`bash -c -- 'x'`,
    `bash -c -e 'x'`, `bash -xc 'x'`); without it, the first operand is a script file and no
    operand means commands from the input."""
    i = 1
    command_flag = False
    while i < len(words):
        word = words[i]
        if word == "--" or word == "-":
            i += 1
            break
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if word.startswith("-") and not word.startswith("--") and "c" in word[1:]:
            command_flag = True
        if word.startswith(("-", "+")) and len(word) > 1:
            i += 1
            continue
        break
    if command_flag:
        return [_Inner(script=words[i] if i < len(words) else "")]
    if i >= len(words) or words[i] == "-":
        if cmd.stdin_text is not None:
            return [_Inner(script=cmd.stdin_text)]  # `bash <<'EOF' ... EOF`: the text is the script
    return []


def _eval(words, cmd) -> list[_Inner]:
    return [_Inner(script=" ".join(words[1:]))] if len(words) > 1 else []


def _su(words, cmd) -> list[_Inner]:
    takes = frozenset("-s --shell -g --group -G --supp-group -w --whitelist-environment -u --user".split())
    out: list[_Inner] = []
    i = 1
    positionals: list[int] = []
    while i < len(words):
        word = words[i]
        if word in ("-c", "--command", "--session-command") and i + 1 < len(words):
            out.append(_Inner(script=words[i + 1]))
            i += 2
            continue
        if word.startswith(("--command=", "--session-command=")):
            out.append(_Inner(script=word.split("=", 1)[1]))
        elif word in takes:
            i += 1
        elif not word.startswith("-"):
            positionals.append(i)
        i += 1
    if words[0] == "runuser" and "-u" in words and not out and positionals:
        start = positionals[0] + 1 if len(positionals) > 1 else positionals[0]
        return [_Inner(tuple(words[start:]), start=start)]
    return out


def _env(words, cmd) -> list[_Inner]:
    takes = frozenset("-u --unset -C --chdir".split())
    i = 1
    while i < len(words):
        word = words[i]
        if word in ("-S", "--split-string") and i + 1 < len(words):
            return [_Inner(script=" ".join(words[i + 1:]))]
        if word.startswith("--split-string=") or (word.startswith("-S") and len(word) > 2):
            tail = word.split("=", 1)[1] if word.startswith("--") else word[2:]
            return [_Inner(script=" ".join((tail, *words[i + 1:])))]
        if word == "--":
            i += 1
            break
        if "=" in word and not word.startswith("-"):
            i += 1
            continue
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in takes else 1
            continue
        break
    return [_Inner(tuple(words[i:]), start=i)] if i < len(words) else []


def _flock(words, cmd) -> list[_Inner]:
    takes = frozenset("-w --timeout -E --conflict-exit-code".split())
    for i, word in enumerate(words):
        if word in ("-c", "--command") and i + 1 < len(words):
            return [_Inner(script=words[i + 1])]
        if word.startswith("--command="):
            return [_Inner(script=word.split("=", 1)[1])]
    i = 1
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in takes else 1
            continue
        break
    i += 1  # the lock file (or descriptor)
    return [_Inner(tuple(words[i:]), start=i)] if i < len(words) else []


def _watch(words, cmd) -> list[_Inner]:
    takes = frozenset("-n --interval -q --equexit -g --chgexit".split())
    i = 1
    exec_form = False
    while i < len(words):
        word = words[i]
        if word in ("-x", "--exec"):
            exec_form = True
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in takes else 1
            continue
        break
    if i >= len(words):
        return []
    if exec_form:
        return [_Inner(tuple(words[i:]), start=i)]
    return [_Inner(script=" ".join(words[i:]))]  # watch runs `sh -c` with the words joined


_PARALLEL_VALUES = frozenset("-j --jobs -P --max-procs -n --max-args -N -S --sshlogin --sshloginfile -a --arg-file "
                             "-d --delimiter -E -I --colsep -C --joblog --results --tmpdir --workdir --wd --env "
                             "--delay --timeout --retries --halt --tag-string --basefile --bf -L --max-lines "
                             "-s --max-chars --termseq --memfree --load -l".split())


def _parallel(words, cmd) -> list[_Inner]:
    i = 1
    remote = False
    while i < len(words):
        word = words[i]
        if word in ("-S", "--sshlogin", "--sshloginfile", "--slf") or word.startswith("--sshlogin"):
            remote = True
        if word.startswith("-") and word not in (":::", "::::", ":::+", "::::+") and len(word) > 1:
            i += 2 if word.split("=", 1)[0] in _PARALLEL_VALUES and "=" not in word else 1
            continue
        break
    template: list[str] = []
    while i < len(words) and words[i] not in (":::", "::::", ":::+", "::::+"):
        template.append(words[i])
        i += 1
    args = [w for w in words[i + 1:] if w not in (":::", "::::", ":::+", "::::+")] if i < len(words) else []
    from_files = i < len(words) and words[i].startswith("::::")
    if not template:
        # no command: each argument is a command
        return [_Inner(script=a, remote=remote) for a in args[:8]] if args and not from_files else []
    if from_files or not args:
        return [_Inner(script=" ".join(template), remote=remote, operands_unknown=True)]
    out = []
    for arg in args[:8]:
        if any("{" in t for t in template):
            text = " ".join(t.replace("{}", arg) for t in template)
        else:
            text = " ".join((*template, arg))
        out.append(_Inner(script=text, remote=remote))
    return out


def _xargs(words, cmd) -> list[_Inner]:
    takes = frozenset("-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s --max-chars "
                      "--process-slot-var".split())
    i = 1
    placeholder = None
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if word == "-I" and i + 1 < len(words):
            placeholder = words[i + 1]
        elif word.startswith("-I") and len(word) > 2:
            placeholder = word[2:]
        elif word in ("-i", "--replace") or word.startswith(("-i", "--replace=")):
            placeholder = word.split("=", 1)[1] if "=" in word else (word[2:] or "{}")
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in takes else 1  # `-n1`, `--max-args=1` carry their value
            continue
        break
    if i >= len(words):
        return [_Inner(("echo",), operands_unknown=True, start=-1)]
    return [_Inner(tuple(words[i:]), operands_unknown=True, start=i, placeholder=placeholder)]


_FIND_LINK_OPTIONS = ("-H", "-L", "-P")


def _find(words, cmd) -> list[_Inner]:
    """`find START… -exec CMD {} ;`: `{}` stands for each file under the start paths, so
    the inner command reads (or changes) every file of those trees; a word that only
    contains `{}` is known at run time, and `-exec {} ;` runs each file found."""
    i, follow = 1, False
    while i < len(words) and (words[i] in _FIND_LINK_OPTIONS or words[i] == "-D" or words[i].startswith("-O")):
        if words[i] in _FIND_LINK_OPTIONS:
            follow = words[i] == "-L"  # the last of -H, -L, -P wins
        i += 2 if words[i] == "-D" else 1
    starts: list[tuple[str, int]] = []  # (start path, index of its word)
    while i < len(words) and not words[i].startswith(("-", "(", "!")):
        starts.append((words[i], i))
        i += 1
    starts = starts or [(".", -1)]
    follow = follow or "-follow" in words[i:]
    out = []
    while i < len(words):
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            j = i + 1
            while j < len(words) and words[j] not in (";", "+"):
                j += 1
            inner = words[i + 1 : j]
            if inner:
                tree_at = frozenset(k for k, w in enumerate(inner) if w == "{}" and k > 0)
                for start, start_at in starts[:4]:
                    replaced = tuple(start if k in tree_at else w for k, w in enumerate(inner))
                    origin = tuple(start_at if k in tree_at else i + 1 + k for k in range(len(inner)))
                    out.append(_Inner(replaced, start=-1, placeholder="{}", tree_at=tree_at, follows_links=follow,
                                      origin=origin))
            i = j
        i += 1
    return out


def _busybox(words, cmd) -> list[_Inner]:
    i = 1
    while i < len(words) and words[i].startswith("-"):
        if words[i] in ("--install", "--list", "--list-full", "--help"):
            return []
        i += 1
    return [_Inner(tuple(words[i:]), start=i)] if i < len(words) else []


def _ssh(words, cmd) -> list[_Inner]:
    from .options import invocation

    inv = invocation(words)
    if len(inv.positionals) < 2:
        return []
    return [_Inner(script=" ".join(inv.positionals[1:]), remote=True)]


def _script(words, cmd) -> list[_Inner]:
    for i, word in enumerate(words):
        cluster = word.startswith("-") and not word.startswith("--") and word.endswith("c")
        if (word == "--command" or cluster) and i + 1 < len(words):
            return [_Inner(script=words[i + 1])]
        if word.startswith("--command="):
            return [_Inner(script=word.split("=", 1)[1])]
    return []


def _trap(words, cmd) -> list[_Inner]:
    args = [w for w in words[1:] if w != "--"]
    if not args or args[0] in ("-p", "-l", "-") or len(args) < 2:
        return []
    return [_Inner(script=args[0])]


def _runner(sub: str, values: str = "") -> Callable:
    """`uv run CMD`, `poetry run CMD`, `npm exec -- CMD`, `pnpm dlx CMD`, `bundle exec CMD`."""
    takes = frozenset(values.split())

    def handler(words, cmd) -> list[_Inner]:
        if len(words) < 2 or words[1] != sub:
            return []
        for i, word in enumerate(words):
            if word in ("-c", "--call") and i + 1 < len(words):
                return [_Inner(script=words[i + 1])]
        i = _skip_options(words, 2, takes)
        return [_Inner(tuple(words[i:]), start=i)] if i < len(words) else []

    return handler


def _python(words, cmd) -> list[_Inner]:
    for i, word in enumerate(words[:-1]):
        if word == "-m" and words[i + 1] in ("pip", "pip3"):
            return [_Inner(("pip", *words[i + 2:]), start=-1)]
        if word == "-c" or (word.startswith("-") and not word.startswith("--") and "c" in word):
            return []
    return []


def _kubectl(words, cmd) -> list[_Inner]:
    if "exec" in words and "--" in words:
        i = words.index("--") + 1
        return [_Inner(tuple(words[i:]), remote=True, start=i)] if i < len(words) else []
    return []


def _docker(words, cmd) -> list[_Inner]:
    from .options import invocation

    inv = invocation(words)
    if inv.subcommand in ("exec", "run") and len(inv.operands) >= 2:
        return [_Inner(tuple(inv.operands[1:]), remote=True, start=-1)]
    return []


def _coproc(words, cmd) -> list[_Inner]:
    out = [_Inner(tuple(words[1:]), start=1)] if len(words) > 1 else []
    if len(words) > 2 and words[1].isidentifier() and words[1].isupper():
        out.append(_Inner(tuple(words[2:]), start=2))  # `coproc NAME cmd` as well as `coproc cmd`
    return out


def _command(words, cmd) -> list[_Inner]:
    if len(words) > 1 and words[1] in ("-v", "-V"):
        return []  # `command -v x` looks x up, it does not run it
    i = _skip_options(words, 1, frozenset())
    return [_Inner(tuple(words[i:]), start=i)] if i < len(words) else []


def _with_cmd(handler: Callable) -> Callable:
    return lambda words, cmd: handler(words)


_HANDLERS: dict[str, Callable[[tuple[str, ...], SimpleCommand], list[_Inner]]] = {
    "sudo": _with_cmd(_sudo),
    "doas": _with_cmd(_after("-u -C")),
    "env": _env,
    "command": _command,
    "builtin": _with_cmd(_after("")),
    "exec": _with_cmd(_after("-a")),
    "nice": _with_cmd(_after("-n --adjustment", numeric=True)),
    "nohup": _with_cmd(_after("")),
    "time": _with_cmd(_after("-f -o --format --output")),
    "timeout": _with_cmd(_after("-s -k --signal --kill-after", positional=1)),
    "stdbuf": _with_cmd(_after("-i -o -e")),
    "ionice": _with_cmd(_after("-c -n -p -P -u -t --class --classdata --pid --pgid --uid")),
    "setsid": _with_cmd(_after("")),
    "chroot": _with_cmd(_after("--userspec --groups", positional=1)),
    "taskset": _with_cmd(_after("", positional=1)),
    "chrt": _with_cmd(_after("-T -P -D", positional=1)),
    "strace": _with_cmd(_after("-o -e -p -s -u -E -P -I -b -a -X -O -S")),
    "ltrace": _with_cmd(_after("-o -e -p -s -u -a -n -l")),
    "caffeinate": _with_cmd(_after("-t -w")),
    "unbuffer": _with_cmd(_after("")),
    "proxychains": _with_cmd(_after("-f")),
    "proxychains4": _with_cmd(_after("-f")),
    "torsocks": _with_cmd(_after("-u -p -a -P")),
    "tsocks": _with_cmd(_after("")),
    "firejail": _with_cmd(_after("")),
    "catchsegv": _with_cmd(_after("")),
    "valgrind": _with_cmd(_after("")),
    "xvfb-run": _with_cmd(_after("-n -s -f -e -p --server-num --server-args --auth-file --error-file")),
    "dbus-run-session": _with_cmd(_after("--config-file --dbus-daemon")),
    "unshare": _with_cmd(_after("-S -G --setuid --setgid --wd --root")),
    "nsenter": _with_cmd(_after("-t --target -S -G --wd --root")),
    "systemd-run": _with_cmd(_after("-p --property -u --unit -E --setenv --uid --gid -M --machine")),
    "entr": _with_cmd(_after("")),
    "xargs": _xargs,
    "watch": _watch,
    "flock": _flock,
    "parallel": _parallel,
    "su": _su,
    "runuser": _su,
    "busybox": _busybox,
    "toybox": _busybox,
    "ssh": _ssh,
    "script": _script,
    "trap": _trap,
    "eval": _eval,
    "find": _find,
    "coproc": _coproc,
    "npx": _with_cmd(_after("-p --package")),
    "bunx": _with_cmd(_after("-p --package")),
    "pnpx": _with_cmd(_after("-p --package")),
    "uvx": _with_cmd(_after("--from --with -p --python")),
    "pipx": _runner("run", "--spec"),
    "uv": _runner("run", "--with -p --python --package --project --directory"),
    "poetry": _runner("run"),
    "pipenv": _runner("run"),
    "bundle": _runner("exec"),
    "npm": _runner("exec", "-p --package -w --workspace"),
    "pnpm": _runner("dlx", "-p --package"),
    "yarn": _runner("dlx", "-p --package"),
    "python": _python,
    "kubectl": _kubectl,
    "docker": _docker,
    "podman": _docker,
}
for _shell_name in SHELLS:
    _HANDLERS[_shell_name] = _shell
LOOK_THROUGH = frozenset(_HANDLERS)


def looks_through(name: str) -> bool:
    if name in LOOK_THROUGH:
        return True
    return program_name(name)[0] in LOOK_THROUGH if (not name.islower() or name[-1:].isdigit() or "-" in name
                                                     or "." in name) else False


def inner_commands(cmd: SimpleCommand, out: list[SimpleCommand], level: int) -> bool:
    """Append the commands `cmd` runs; False when an inner script does not parse."""
    name = program_name(cmd.words[0])[0]
    handler = _HANDLERS.get(name)
    if handler is None:
        return True
    ok = True
    for inner in handler(cmd.words, cmd):
        if inner.script is not None and len(inner.script) > MAX_INNER_SCRIPT_CHARS:
            # Quoting grows with every level of nesting: a script this long inside another is
            # not read (it would cost seconds), and never allowed.
            out.append(SimpleCommand(cmd.text[:200], (name,), wrapped_by=name, too_deep=True, level=level + 1))
            continue
        if inner.script is not None:
            script = _parse(inner.script, level + 1)
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
        ok = _append_inner(cmd, inner, name, out, level) and ok
    return ok


def _append_inner(cmd: SimpleCommand, inner: _Inner, wrapper: str, out: list[SimpleCommand], level: int) -> bool:
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
        extra = tuple(w.split("=", 1)[0] for w in cmd.words[1:shift]
                      if "=" in w and not w.startswith("-") and w.split("=", 1)[0].isidentifier())
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
        return inner_commands(sub, out, level + 1)
    out.append(sub)
    return True

