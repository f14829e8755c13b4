"""Launchers: programs that run another command, looked through.

The inner command (or script) follows its launcher as a simple command of its own, so a
rule about it holds whatever launches it: transparent launchers (`sudo`, `env`, `nice`,
`timeout`, `xargs`…: the command after their options), those given a script (`su -c`,
`flock -c`, `watch CMD`, `script -c`, `env -S`), `parallel CMD ::: ARGS`, busybox's
applets. One that opens a shell reading its input (`su`, `sudo -s`, `script` alone) is
asked about.
"""

from __future__ import annotations

import shlex
from typing import NamedTuple

from ..classnames import READ_ONLY
from ..command import SimpleCommand
from ..fileuse import FileUse
from ..variables import risky_variable
from .invocation import Invocation
from .kit import Examples, Inner, Words, after, operands, raw_values, stdin_kind, value_uses, with_examples, written
from .model import Model
from .spec import gnu, spec

FAMILY = "launchers"


_SUDO_TAKES = frozenset("-u -g -C -D -h -p -r -t -U -T -R --user --group --close-from --chdir --host --prompt "
                        "--role --type --other-user --command-timeout --chroot".split())


class _SudoWords(NamedTuple):
    start: int  # where the command begins (len(words): none)
    shell: bool  # `-s`/`-i`: through a shell (reading its input when no command follows)
    edit: int | None  # `-e`/`--edit`: sudoedit, at this word
    cwd: tuple[str, int] | None  # `-D DIR`/`--chdir=DIR`: where the command runs, and that word


def _read_sudo(words: Words) -> _SudoWords | None:
    """sudo's options read as getopt reads them: letters in order, a value-taking letter ends
    its cluster with the rest or the next word as its value (`-ueve` is the user `eve`, not
    `-e`); None when nothing runs (list, validate, version, help, remove the credentials)."""
    i = 1
    shell = False
    edit: int | None = None
    cwd: tuple[str, int] | None = None
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if name in ("--list", "--validate", "--version", "--help", "--remove-timestamp"):
                return None
            shell = shell or name in ("--shell", "--login")
            edit = i if name == "--edit" else edit
            if name == "--chdir":
                cwd = (value, i) if eq else (words[i + 1], i + 1) if i + 1 < len(words) else cwd
            i += 2 if name in _SUDO_TAKES and not eq else 1
            continue
        if word.startswith("-") and len(word) > 1:
            letters = word[1:]
            step = 1
            for j, ch in enumerate(letters, 1):
                if ch in "lvVK" or ch == "h" and not (letters[j:] or i + 1 < len(words)):
                    return None
                edit = i if ch == "e" else edit
                shell = shell or ch in "si"
                if "-" + ch in _SUDO_TAKES:
                    value, step = (letters[j:], 1) if letters[j:] else (words[i + 1] if i + 1 < len(words) else "", 2)
                    if ch == "D":
                        cwd = (value, i + step - 1)
                    break
            i += step
            continue
        if "=" in word and word.split("=", 1)[0].isidentifier():
            i += 1
            continue
        break
    return _SudoWords(min(i, len(words)), shell, edit, cwd)


def _sudo(words: Words, cmd: SimpleCommand) -> list[Inner]:
    read = _read_sudo(words)
    if read is None or read.start >= len(words):
        return []
    rest = tuple(words[read.start:])
    if read.edit is not None:
        # `sudo -e FILE`: sudoedit, which writes the files it names (as root)
        return [Inner(("sudoedit", *rest), start=-1, origin=(read.edit, *range(read.start, len(words))),
                      cwd=read.cwd)]
    if read.shell:
        # sudo -s/-i runs the shell with `-c` and each word quoted
        return [Inner(script=shlex.join(rest), cwd=read.cwd)]
    return [Inner(rest, start=read.start, cwd=read.cwd)]


def _sudo_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    read = _read_sudo(cmd.words)
    if read is not None and read.shell and read.edit is None and read.start >= len(cmd.words):
        return "`sudo` opens a shell that reads its input"
    return None


def _su(words: Words, cmd: SimpleCommand) -> list[Inner]:
    takes = frozenset("-s --shell -g --group -G --supp-group -w --whitelist-environment -u --user".split())
    out: list[Inner] = []
    i = 1
    positionals: list[int] = []
    while i < len(words):
        word = words[i]
        if word in ("-c", "--command", "--session-command") and i + 1 < len(words):
            out.append(Inner(script=words[i + 1]))
            i += 2
            continue
        if word.startswith(("--command=", "--session-command=")):
            out.append(Inner(script=word.split("=", 1)[1]))
        elif word in takes:
            i += 1
        elif not word.startswith("-"):
            positionals.append(i)
        i += 1
    if words[0] == "runuser" and positionals and _runuser_user(words[1:positionals[0]]):
        # `runuser -u USER CMD ARGS`: options end at the first operand, the command
        start = positionals[0]
        return [*out, Inner(tuple(words[start:]), start=start)]
    return out


def _runuser_user(options: Words) -> bool:
    """Whether runuser's options name a user to run a command as (`-u eve`, `-ueve`, `--user=eve`)."""
    return any(w in ("-u", "--user") or w.startswith("--user=") or (w.startswith("-") and not w.startswith("--")
                                                                      and "u" in w[1:]) for w in options)


def _opens_shell(inv: Invocation, cmd: SimpleCommand) -> str | None:
    program = inv.program
    if program in ("su", "runuser") and not ({"-c", "--command", "--session-command"} & set(cmd.words)
                                             or any(w.startswith("--command=") for w in cmd.words)):
        if not (program == "runuser" and _runuser_user(cmd.words[1:])):
            return f"`{program}` opens a shell that reads its input"
    if program == "chroot" and len(inv.operands) <= 1:
        return "`chroot` opens a shell that reads its input"
    if program == "script" and not any(w == "--command" or w.startswith("--command=") or
                                       (w.startswith("-") and not w.startswith("--") and w.endswith("c"))
                                       for w in cmd.words[1:]):
        return "`script` opens a shell that reads its input"
    if program in ("script", "unbuffer") and cmd.stdin is not None:
        # its command gets a terminal, and the input is typed into it as keys: a pager's or
        # an editor's `!` runs a shell (`printf '!id\n' | script -qc 'less f' /dev/null`)
        return f"`{program}` types its {stdin_kind(cmd)} into a program it gives a terminal"
    if program == "doas" and ("-s" in cmd.words):
        return "`doas -s` opens a shell that reads its input"
    return None


_ENV_LONG = {"--ignore-environment": "-i", "--null": "-0", "--unset": "-u", "--chdir": "-C", "--split-string": "-S",
             "--debug": "-v", "--block-signal": "--block-signal", "--default-signal": "--default-signal",
             "--ignore-signal": "--ignore-signal", "--list-signal-handling": "--list-signal-handling",
             "--help": "--help", "--version": "--version"}


class _EnvWords(NamedTuple):
    options: tuple[tuple[str, str, int], ...]  # (`-u`, its value or "", the index of the value's word)
    start: int  # the command's first word (len(words): none)
    split: tuple[str, ...] | None  # `-S STRING` and the words after it (read as a script)


def _read_env(words: Words) -> _EnvWords:
    """env's options read as getopt reads them: letters in order, `u`, `C` and `S` take the
    rest of their cluster or the next word (`-iC DIR`, `-vu NAME`), a long option by any
    unambiguous prefix (`--ch=DIR` is `--chdir`), `-` alone is `-i`."""
    options: list[tuple[str, str, int]] = []
    i = 1
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if "=" in word and not word.startswith("-"):
            i += 1
            continue
        if word == "-":
            options.append(("-i", "", i))
            i += 1
            continue
        if word.startswith("--"):
            given, eq, value = word.partition("=")
            matches = [long for long in _ENV_LONG if long.startswith(given)]
            name = _ENV_LONG[given] if given in _ENV_LONG else _ENV_LONG[matches[0]] if len(matches) == 1 else given
            at, step = i, 1
            if name in ("-u", "-C", "-S") and not eq:
                value, at, step = (words[i + 1] if i + 1 < len(words) else ""), i + 1, 2
            if name == "-S":
                return _EnvWords(tuple(options), len(words), (value, *words[i + step:]))
            options.append((name, value, at))
            i += step
            continue
        if word.startswith("-") and len(word) > 1:
            step = 1
            for j, letter in enumerate(word[1:], 2):
                if letter not in "uCS":
                    options.append(("-" + letter, "", i))
                    continue
                value, step = (word[j:], 1) if word[j:] else (words[i + 1] if i + 1 < len(words) else "", 2)
                if letter == "S":
                    return _EnvWords(tuple(options), len(words), (value, *words[i + step:]))
                options.append(("-" + letter, value, i + step - 1))
                break
            i += step
            continue
        break
    return _EnvWords(tuple(options), i, None)


def _env(words: Words, cmd: SimpleCommand) -> list[Inner]:
    """What env runs: the command after its options and assignments, in the directory `-C`
    names; `-S STRING`'s words (read as a script); functions passed as variables."""
    read = _read_env(words)
    # `BASH_FUNC_ls%%=() { rm -rf ~; }`: the body runs where a bash child calls `ls`
    functions = [Inner(script="f " + w.split("=", 1)[1]) for w in words[1:read.start]
                 if w.startswith("BASH_FUNC_") and "=" in w]
    cwd = next(((value, at) for name, value, at in reversed(read.options) if name == "-C"), None)
    if read.split is not None:
        return functions + [Inner(script=" ".join(read.split), cwd=cwd)]
    return functions + ([Inner(tuple(words[read.start:]), start=read.start, cwd=cwd)] if read.start < len(words)
                        else [])


def _env_environment(cmd: SimpleCommand) -> str | None:
    """`env -i` drops the environment Gatehouse gave the agent; `env -u NAME` a setting of it."""
    if cmd.words[0] != "env":
        return None
    for name, value, _at in _read_env(cmd.words).options:
        if name == "-i":
            return "`env -i` runs the command without the environment Gatehouse gave the agent"
        if name == "-u" and value and risky_variable(value):
            return f"`env -u {value}` drops a setting Gatehouse gave the agent (where git looks, which programs run)"
    return None


def _env_shows(cmd: SimpleCommand) -> str | None:
    if cmd.words[0] != "env":
        return None
    read = _read_env(cmd.words)
    if read.split is None and read.start >= len(cmd.words):
        return "`env` prints the environment, which holds the agent's credentials"
    return None


def _flock(words: Words, cmd: SimpleCommand) -> list[Inner]:
    takes = frozenset("-w --timeout -E --conflict-exit-code".split())
    for i, word in enumerate(words):
        if word in ("-c", "--command") and i + 1 < len(words):
            return [Inner(script=words[i + 1])]
        if word.startswith("--command="):
            return [Inner(script=word.split("=", 1)[1])]
    i = 1
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in takes else 1
            continue
        break
    i += 1  # the lock file (or descriptor)
    return [Inner(tuple(words[i:]), start=i)] if i < len(words) else []


def _flock_files(inv: Invocation, words: Words) -> list[FileUse]:
    """`flock FILE cmd` creates FILE (a number is a descriptor)."""
    return written([(w, at) for w, at in operands(inv, words)[:1] if not w.isdigit()])


def _watch(words: Words, cmd: SimpleCommand) -> list[Inner]:
    """watch's command: after its options (letters in order; `-n`, `-q` take the rest of
    their cluster or the next word; `-g` is a flag), joined for `sh -c` unless `-x`."""
    i = 1
    exec_form = False
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if word.startswith("--"):
            name, eq, _value = word.partition("=")
            exec_form = exec_form or name == "--exec"
            i += 2 if name in ("--interval", "--equexit") and not eq else 1
            continue
        if word.startswith("-") and len(word) > 1:
            step = 1
            for j, letter in enumerate(word[1:], 2):
                exec_form = exec_form or letter == "x"
                if letter in "nq":
                    step = 1 if word[j:] else 2
                    break
            i += step
            continue
        break
    if i >= len(words):
        return []
    if exec_form:
        return [Inner(tuple(words[i:]), start=i)]
    return [Inner(script=" ".join(words[i:]))]  # watch runs `sh -c` with the words joined


_PARALLEL_VALUES = frozenset("-j --jobs -P --max-procs -n --max-args -N -S --sshlogin --sshloginfile -a --arg-file "
                             "-d --delimiter -E -I --colsep -C --joblog --results --tmpdir --workdir --wd --env "
                             "--delay --timeout --retries --halt --tag-string --basefile --bf -L --max-lines "
                             "-s --max-chars --termseq --memfree --load -l".split())
_SEPARATORS = (":::", "::::", ":::+", "::::+")


def _parallel(words: Words, cmd: SimpleCommand) -> list[Inner]:
    i = 1
    remote = False
    while i < len(words):
        word = words[i]
        if word in ("-S", "--sshlogin", "--sshloginfile", "--slf") or word.startswith("--sshlogin"):
            remote = True
        if word.startswith("-") and word not in _SEPARATORS and len(word) > 1:
            i += 2 if word.split("=", 1)[0] in _PARALLEL_VALUES and "=" not in word else 1
            continue
        break
    template: list[str] = []
    while i < len(words) and words[i] not in _SEPARATORS:
        template.append(words[i])
        i += 1
    args = [w for w in words[i + 1:] if w not in _SEPARATORS] if i < len(words) else []
    from_files = i < len(words) and words[i].startswith("::::")
    if not template:
        # no command: each argument is a command
        return [Inner(script=a, remote=remote) for a in args[:8]] if args and not from_files else []
    if from_files or not args:
        return [Inner(script=" ".join(template), remote=remote, operands_unknown=True)]
    out = []
    for arg in args[:8]:
        if any("{" in t for t in template):
            text = " ".join(t.replace("{}", arg) for t in template)
        else:
            text = " ".join((*template, arg))
        out.append(Inner(script=text, remote=remote))
    return out


def _parallel_files(inv: Invocation, words: Words) -> list[FileUse]:
    return written(raw_values(words, "", ("--joblog", "--results", "--res", "--tmpdir")), tree=True)


def _xargs(words: Words, cmd: SimpleCommand) -> list[Inner]:
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
        return [Inner(("echo",), operands_unknown=True, start=-1)]
    return [Inner(tuple(words[i:]), operands_unknown=True, start=i, placeholder=placeholder)]


def _xargs_files(inv: Invocation, words: Words) -> list[FileUse]:
    return value_uses(inv, ("-a",), "read")  # `xargs -a FILE echo` prints FILE's words


def _busybox(words: Words, cmd: SimpleCommand) -> list[Inner]:
    i = 1
    while i < len(words) and words[i].startswith("-"):
        if words[i] in ("--install", "--list", "--list-full", "--help"):
            return []
        i += 1
    return [Inner(tuple(words[i:]), start=i)] if i < len(words) else []


def _script(words: Words, cmd: SimpleCommand) -> list[Inner]:
    for i, word in enumerate(words):
        cluster = word.startswith("-") and not word.startswith("--") and word.endswith("c")
        if (word == "--command" or cluster) and i + 1 < len(words):
            return [Inner(script=words[i + 1])]
        if word.startswith("--command="):
            return [Inner(script=word.split("=", 1)[1])]
    return []


def _script_files(inv: Invocation, words: Words) -> list[FileUse]:
    """The session's log: its operand, `-O`/`-B`/`-I`/`-T` files, else `typescript` here."""
    logs = value_uses(inv, ("-O", "-B", "-I", "-T", "-t"), "write")
    named = [FileUse("write", w, at) for w, at in operands(inv, words)[:1]]
    return named + logs if named or logs else [FileUse("write", "typescript", ())]


def _time_files(inv: Invocation, words: Words) -> list[FileUse]:
    """GNU time's `-o FILE` (bash's own `time` has none)."""
    return written(raw_values(words, "o", ("--output",), stop_at_operand=True))


def _tmux_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    harmless = {"ls", "list-sessions", "has-session", "has", "list-windows", "lsw", "kill-session",
                "kill-server", "-V"}
    if len(cmd.words) == 1 or cmd.words[1] in harmless:
        return None
    return f"`{inv.program}` runs commands in a terminal it controls"


_RUNS = "runs a command (looked through)"
# Launchers' own options: the words after them, from the command they run, are that command's.
_OPTIONS = {
    "doas": spec("n s u: C: L"),
    "su": spec("c/command: /session-command: l/login m p/preserve-environment s/shell: g/group: G/supp-group: "
               "w/whitelist-environment: P/pty f/fast h/help V/version"),
    "runuser": spec("c/command: /session-command: l/login m p/preserve-environment s/shell: g/group: "
                    "G/supp-group: w/whitelist-environment: u/user: P/pty f/fast h/help V/version"),
    "nice": gnu("n/adjustment:", numeric=True),
    "timeout": gnu("/preserve-status /foreground k/kill-after: s/signal: v/verbose"),
    "taskset": spec("a/all-tasks p/pid c/cpu-list h/help V/version"),
    "chrt": spec("b/batch d/deadline f/fifo i/idle o/other r/rr R/reset-on-fork T/sched-runtime: P/sched-period: "
                 "D/sched-deadline: a/all-tasks m/max p/pid v/verbose h/help V/version"),
    "nohup": gnu(""),
    # bash's `time -p` and GNU time's options
    "time": spec("p o/output: a/append f/format: /portability q/quiet v/verbose V/version /help"),
    "stdbuf": gnu("i/input: o/output: e/error:"),
    "setsid": spec("c/ctty f/fork w/wait h/help V/version"),
    "ionice": spec("c/class: n/classdata: p/pid: P/pgid: t/ignore u/uid: h/help V/version"),
    "caffeinate": spec("d i m s u t: w:"),
    "unbuffer": spec("p"),
    "watch": spec("b/beep c/color d/differences? e/errexit g/chgexit q/equexit: n/interval: p/precise t/no-title "
                  "w/no-wrap x/exec h/help v/version"),
    "flock": spec("s/shared x/exclusive u/unlock n/nonblock w/timeout: E/conflict-exit-code: o/close c/command: "
                  "F/no-fork /verbose h/help V/version"),
    "parallel": spec("j: /jobs: P: /max-procs: k/keep-order /dry-run /bar /progress /eta /joblog: /results: /res: "
                     "/tmpdir: N: n: /max-args: I: i? /colsep: C: q/quote /halt: /timeout: /retries: /tag "
                     "/tagstring: X m /xargs v /verbose /null 0 a: /arg-file: d: /delimiter: /line-buffer /lb "
                     "u/ungroup /group /will-cite /shuf /no-notice /env: /pipe /block: /recend: /recstart: "
                     "/header: /nice: /load: /memfree: /delay: S: /sshlogin: /sshloginfile: /slf: /plus L: "
                     "/max-lines: s: /max-chars: /version /help"),
    "busybox": spec("/list /list-full /install /help"), "toybox": spec("/list /help /version"),
}
_TRANSPARENT_KNOWN = {
    "nohup": "", "time": "-f -o --format --output", "stdbuf": "-i -o -e", "setsid": "",
    "ionice": "-c -n -p -P -u --class --classdata --pid --pgid --uid", "caffeinate": "-t -w", "unbuffer": "",
}
_TRANSPARENT = {
    "strace": "-o -e -p -s -u -E -P -I -b -a -X -O -S", "ltrace": "-o -e -p -s -u -a -n -l",
    "proxychains": "-f", "proxychains4": "-f", "torsocks": "-u -p -a -P", "tsocks": "", "firejail": "",
    "catchsegv": "", "valgrind": "", "xvfb-run": "-n -s -f -e -p --server-num --server-args --auth-file --error-file",
    "dbus-run-session": "--config-file --dbus-daemon", "unshare": "-S -G --setuid --setgid --wd --root",
    "nsenter": "-t --target -S -G --wd --root", "systemd-run": "-p --property -u --unit -E --setenv --uid --gid -M "
                                                               "--machine", "entr": "",
}

MODELS = [
    Model("sudo", FAMILY, "runs a command as another user (looked through); `-s`/`-i` alone open a shell",
          options=spec("A/askpass b/background C/close-from: D/chdir: E/preserve-env? e/edit g/group: H/set-home "
                       "h/host: i/login K/remove-timestamp k/reset-timestamp l/list n/non-interactive "
                       "P/preserve-groups p/prompt: R/chroot: r/role: S/stdin s/shell t/type: T/command-timeout: "
                       "U/other-user: u/user: V/version v/validate"),
          cls=READ_ONLY, inner=_sudo, code=_sudo_code),
    Model("doas", FAMILY, "runs a command as another user (looked through); `-s` opens a shell",
          options=_OPTIONS["doas"], cls=READ_ONLY, inner=after("-u -C"), code=_opens_shell),
    *(Model(n, FAMILY, "runs a script as another user (`-c`, read); alone it opens a shell", options=_OPTIONS[n],
            cls=READ_ONLY, inner=_su, code=_opens_shell) for n in ("su", "runuser")),
    Model("env", FAMILY, "runs a command with variables set (judged by the variable); alone it prints them",
          options=gnu("i/ignore-environment 0/null u/unset: C/chdir: S/split-string: v/debug /block-signal? "
                      "/default-signal? /ignore-signal? /list-signal-handling"),
          cls=READ_ONLY, inner=_env, environment=_env_environment, shows_environment=_env_shows),
    Model("nice", FAMILY, _RUNS, options=_OPTIONS["nice"], cls=READ_ONLY, inner=after("-n --adjustment", numeric=True)),
    Model("timeout", FAMILY, _RUNS, options=_OPTIONS["timeout"], cls=READ_ONLY,
          inner=after("-s -k --signal --kill-after", positional=1)),
    Model("chroot", FAMILY, "runs a command in another root (looked through); alone it opens a shell",
          options=gnu("/userspec: /groups: /skip-chdir"), cls=READ_ONLY,
          inner=after("--userspec --groups", positional=1), code=_opens_shell),
    Model("taskset", FAMILY, _RUNS, options=_OPTIONS["taskset"], cls=READ_ONLY, inner=after("", positional=1)),
    Model("chrt", FAMILY, _RUNS, options=_OPTIONS["chrt"], cls=READ_ONLY, inner=after("-T -P -D", positional=1)),
    *(Model(n, FAMILY, _RUNS, options=_OPTIONS[n], cls=READ_ONLY, inner=after(v),
            files=_time_files if n == "time" else None, code=_opens_shell if n == "unbuffer" else None)
      for n, v in _TRANSPARENT_KNOWN.items()),
    *(Model(n, FAMILY, _RUNS, inner=after(v)) for n, v in _TRANSPARENT.items()),
    Model("xargs", FAMILY, "runs a command with operands from its input (looked through: operands unknown)",
          options=gnu("0/null a/arg-file: d/delimiter: E: e? I: i? L: l? n/max-args: P/max-procs: p/interactive "
                      "r/no-run-if-empty s/max-chars: t/verbose x/exit /process-slot-var: o/open-tty"),
          cls=READ_ONLY, inner=_xargs, files=_xargs_files, option_sensitive=True, effects={"-a": "reads"}),
    Model("watch", FAMILY, "runs a command again and again (by `sh -c`: read)", options=_OPTIONS["watch"],
          cls=READ_ONLY, inner=_watch),
    Model("flock", FAMILY, "runs a command holding a lock file (written)", options=_OPTIONS["flock"], cls=READ_ONLY,
          inner=_flock, files=_flock_files),
    Model("parallel", FAMILY, "runs a command for each argument (read)", options=_OPTIONS["parallel"], cls=READ_ONLY,
          inner=_parallel, files=_parallel_files),
    *(Model(n, FAMILY, "runs its applets (looked through)", options=_OPTIONS[n], cls=READ_ONLY, inner=_busybox)
      for n in ("busybox", "toybox")),
    Model("script", FAMILY, "records a session: `-c CMD` runs CMD (read); alone it opens a shell",
          options=spec("a/append c/command: E/echo: e/return f/flush /force B/log-io: I/log-in: O/log-out: "
                       "T/log-timing: m/logging-format: o/output-limit: q/quiet t/timing? h/help V/version"),
          cls=READ_ONLY, inner=_script, files=_script_files, code=_opens_shell),
    *(Model(n, FAMILY, "a terminal multiplexer: runs the commands it is given", code=_tmux_code)
      for n in ("tmux", "screen")),
]

_EXAMPLES: dict[str, Examples] = {
    "sudo": {"allow": ("sudo -u www ls",), "ask": ("sudo -s",), "deny": ("sudo rm -rf /",)},
    "doas": {"ask": ("doas -s",), "deny": ("doas rm -rf /",)},
    "su": {"ask": ("su",), "deny": ("su -c 'rm -rf /'",)}, "runuser": {"ask": ("runuser",)},
    "env": {"allow": ("env FOO=1 ls", "env -u FOO ls"), "ask": ("env", "env -i ls", "env PATH=./bin ls")},
    "nice": {"allow": ("nice -n 5 ls",)}, "timeout": {"allow": ("timeout 5 ls",), "deny": ("timeout 5 rm -rf /",)},
    "chroot": {"ask": ("chroot /srv",)}, "taskset": {"allow": ("taskset 1 ls",)},
    "xargs": {"allow": ("xargs -n1 echo",), "ask": ("xargs rm",)},
    "watch": {"allow": ("watch -n 5 ls",)}, "flock": {"allow": ("flock build/lock ls",)},
    "parallel": {"allow": ("parallel echo ::: a b",)}, "busybox": {"allow": ("busybox ls",),
                                                                   "deny": ("busybox rm -rf /",)},
    "toybox": {"allow": ("toybox ls",)},
    "script": {"allow": ("script -qc ls build/session.log",), "ask": ("script",)},
    "tmux": {"ask": ("tmux new-session 'ls'", "tmux ls")}, "screen": {"ask": ("screen -dm ls",)},
    "time": {"allow": ("time ls", "time -p ls")}, "unbuffer": {"allow": ("unbuffer ls",), "ask": ("ls | unbuffer ls",)},
}


def _examples(model: Model) -> Examples | None:
    return {"allow": (f"{model.name} ls",)} if model.known else {"ask": (f"{model.name} ls",)}


MODELS = with_examples(MODELS, _EXAMPLES, _examples)
