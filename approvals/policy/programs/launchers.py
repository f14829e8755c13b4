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
from .invocation import Invocation, read_invocation
from .kit import (
    Examples,
    Inner,
    Words,
    after,
    command_after,
    operands,
    past_assignments,
    raw_values,
    stdin_kind,
    value_uses,
    with_examples,
    written,
)
from .model import Model
from .spec import gnu, spec

FAMILY = "launchers"


# What makes sudo run nothing: list, validate, version, remove the credentials, help.
_SUDO_NOTHING_RUNS = frozenset({"-l", "-v", "-V", "-K", "--help"})


class _SudoWords(NamedTuple):
    start: int  # where the command begins (len(words): none)
    shell: bool  # `-s`/`-i`: through a shell (reading its input when no command follows)
    edit: bool  # `-e`/`--edit`: sudoedit
    cwd: tuple[str, int] | None  # `-D DIR`/`--chdir=DIR`: where the command runs, and that word


def _read_sudo(words: Words) -> _SudoWords | None:
    """sudo's options as its model reads them (`-ueve` is the user `eve`, not `-e`); None
    when nothing runs."""
    inv = read_invocation(words)
    if inv.options & _SUDO_NOTHING_RUNS:
        return None
    start = past_assignments(words, inv.positional_at[0] if inv.positional_at else len(words))
    return _SudoWords(start, bool(inv.options & {"-s", "-i"}), "-e" in inv.options, _last_value(inv, "-D"))


def _last_value(inv: Invocation, option: str) -> tuple[str, int] | None:
    """The last value an option was given, and its word's index."""
    values, at = inv.values.get(option), inv.value_at.get(option)
    return (values[-1], at[-1]) if values and at else None


def _sudo(words: Words, cmd: SimpleCommand) -> list[Inner]:
    read = _read_sudo(words)
    if read is None or read.start >= len(words):
        return []
    rest = tuple(words[read.start:])
    if read.edit:
        # `sudo -e FILE`: sudoedit, which writes the files it names (as root)
        return [Inner(("sudoedit", *rest), start=-1, origin=(0, *range(read.start, len(words))), cwd=read.cwd)]
    if read.shell:
        # sudo -s/-i runs the shell with `-c` and each word quoted
        return [Inner(script=shlex.join(rest), cwd=read.cwd)]
    return [Inner(rest, start=read.start, cwd=read.cwd)]


def _sudo_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    read = _read_sudo(cmd.words)
    if read is not None and read.shell and not read.edit and read.start >= len(cmd.words):
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
    if words[0] == "runuser" and _runuser_user(words):
        # `runuser -u USER CMD ARGS`: options end at the first operand, the command
        return [*out, *command_after()(words, cmd)]
    return out


def _runuser_user(words: Words) -> bool:
    """Whether runuser's options name a user to run a command as (`-u eve`, `-ueve`, `--user=eve`)."""
    return "-u" in read_invocation(words).options


def _opens_shell(inv: Invocation, cmd: SimpleCommand) -> str | None:
    program = inv.program
    if program in ("su", "runuser") and not ({"-c", "--command", "--session-command"} & set(cmd.words)
                                             or any(w.startswith("--command=") for w in cmd.words)):
        if not (program == "runuser" and _runuser_user(cmd.words)):
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


class _EnvWords(NamedTuple):
    inv: Invocation  # env's own options, as its model reads them (`-iC DIR`, `-vu NAME`, `--ch=DIR`)
    start: int  # the command's first word (len(words): none)
    split: tuple[str, ...] | None  # `-S STRING` and the words after it (read as a script)
    dash: bool  # `env - CMD`: `-` alone is `-i`


def _read_env(words: Words) -> _EnvWords:
    inv = read_invocation(words)
    split = _last_value(inv, "-S")
    if split is not None:
        return _EnvWords(inv, len(words), (split[0], *words[split[1] + 1:]), False)
    first = inv.positional_at[0] if inv.positional_at else len(words)
    dash = first < len(words) and words[first] == "-"
    return _EnvWords(inv, past_assignments(words, first + dash, any_name=True), None, dash)


def _env(words: Words, cmd: SimpleCommand) -> list[Inner]:
    """What env runs: the command after its options and assignments, in the directory `-C`
    names; `-S STRING`'s words (read as a script); functions passed as variables."""
    read = _read_env(words)
    # `BASH_FUNC_ls%%=() { rm -rf ~; }`: the body runs where a bash child calls `ls`
    functions = [Inner(script="f " + w.split("=", 1)[1]) for w in words[1:read.start]
                 if w.startswith("BASH_FUNC_") and "=" in w]
    cwd = _last_value(read.inv, "-C")
    if read.split is not None:
        return functions + [Inner(script=" ".join(read.split), cwd=cwd)]
    return functions + ([Inner(tuple(words[read.start:]), start=read.start, cwd=cwd)] if read.start < len(words)
                        else [])


def _env_environment(cmd: SimpleCommand) -> str | None:
    """`env -i` drops the environment Gatehouse gave the agent; `env -u NAME` a setting of it."""
    if cmd.words[0] != "env":
        return None
    read = _read_env(cmd.words)
    if "-i" in read.inv.options or read.dash:
        return "`env -i` runs the command without the environment Gatehouse gave the agent"
    for name in read.inv.values.get("-u", ()):
        if risky_variable(name):
            return f"`env -u {name}` drops a setting Gatehouse gave the agent (where git looks, which programs run)"
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
    """watch's command, after its options as its model reads them, joined for `sh -c`
    unless `-x`."""
    inv = read_invocation(words)
    i = inv.positional_at[0] if inv.positional_at else len(words)
    exec_form = "-x" in inv.options
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
# Launchers' own options: the words after them, from the command they run, are that command's
# (each stops at its first operand, as these programs' getopt does: `_OPTIONS` below).
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
    "sudo": spec("A/askpass b/background C/close-from: D/chdir: E/preserve-env? e/edit g/group: H/set-home "
                 "h/host? i/login K/remove-timestamp k/reset-timestamp l/list n/non-interactive "
                 "P/preserve-groups p/prompt: R/chroot: r/role: S/stdin s/shell t/type: T/command-timeout: "
                 "U/other-user: u/user: V/version v/validate /help"),
    "env": gnu("i/ignore-environment 0/null u/unset: C/chdir: S/split-string: v/debug /block-signal? "
               "/default-signal? /ignore-signal? /list-signal-handling"),
    "chroot": gnu("/userspec: /groups: /skip-chdir"),
}
_LAUNCHERS = ("doas", "runuser", "nice", "timeout", "taskset", "chrt", "nohup", "time", "stdbuf", "setsid", "ionice",
              "caffeinate", "unbuffer", "watch", "sudo", "env", "chroot")
_OPTIONS.update({name: _OPTIONS[name].but(stop_at_operand=True) for name in _LAUNCHERS})
# Launchers whose command follows their options directly.
_TRANSPARENT_KNOWN = ("nohup", "time", "stdbuf", "setsid", "ionice", "caffeinate", "unbuffer")
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
          options=_OPTIONS["sudo"], cls=READ_ONLY, inner=_sudo, code=_sudo_code),
    Model("doas", FAMILY, "runs a command as another user (looked through); `-s` opens a shell",
          options=_OPTIONS["doas"], cls=READ_ONLY, inner=command_after(), code=_opens_shell),
    *(Model(n, FAMILY, "runs a script as another user (`-c`, read); alone it opens a shell", options=_OPTIONS[n],
            cls=READ_ONLY, inner=_su, code=_opens_shell) for n in ("su", "runuser")),
    Model("env", FAMILY, "runs a command with variables set (judged by the variable); alone it prints them",
          options=_OPTIONS["env"], cls=READ_ONLY, inner=_env, environment=_env_environment,
          shows_environment=_env_shows),
    Model("nice", FAMILY, _RUNS, options=_OPTIONS["nice"], cls=READ_ONLY, inner=command_after()),
    Model("timeout", FAMILY, _RUNS, options=_OPTIONS["timeout"], cls=READ_ONLY, inner=command_after(positional=1)),
    Model("chroot", FAMILY, "runs a command in another root (looked through); alone it opens a shell",
          options=_OPTIONS["chroot"], cls=READ_ONLY, inner=command_after(positional=1), code=_opens_shell),
    Model("taskset", FAMILY, _RUNS, options=_OPTIONS["taskset"], cls=READ_ONLY, inner=command_after(positional=1)),
    Model("chrt", FAMILY, _RUNS, options=_OPTIONS["chrt"], cls=READ_ONLY, inner=command_after(positional=1)),
    *(Model(n, FAMILY, _RUNS, options=_OPTIONS[n], cls=READ_ONLY, inner=command_after(),
            files=_time_files if n == "time" else None, code=_opens_shell if n == "unbuffer" else None)
      for n in _TRANSPARENT_KNOWN),
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
