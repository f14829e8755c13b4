"""The shell's own commands: moving around, variables, running other commands, jobs.

Most only look (`cd`, `echo`, `pwd`, `test`); those that set a variable are judged by the
variable (`export PATH=…` asks: `variables.risky_variable`); those that run a command or a
script are looked through (`command`, `exec`, `eval`, `trap`, `coproc`) or asked about
(`source`, `alias`).
"""

from __future__ import annotations

from typing import Any

from ..classnames import LOCAL, READ_ONLY
from ..command import SimpleCommand
from ..fileuse import FileUse
from ..variables import risky_variable
from .invocation import WILD, Invocation, read_invocation
from .kit import Examples, Inner, Words, command_after, operands, runs_code, skip_options, with_examples
from .model import Model
from .spec import Spec, flags, spec

FAMILY = "shell builtins"

# The second word of the `let` that stands for arithmetic which may run code (arith.py);
# its third word says why (shell.ARITHMETIC_MARK).
_ARITHMETIC_MARK = "\x02arithmetic"


def _let_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    if len(cmd.words) == 3 and cmd.words[1] == _ARITHMETIC_MARK:
        return cmd.words[2]  # arithmetic over a value the command does not fix (arith.py)
    return None


def _source_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    return f"`{inv.program}` runs the script file it names, which is not read"


def _first_operand_read(inv: Invocation, words: Words) -> list[FileUse]:
    return [FileUse("read", w, at) for w, at in operands(inv, words)[:1]]


def _history_files(inv: Invocation, words: Words) -> list[FileUse]:
    if not inv.options & {"-w", "-a", "-r", "-n"}:
        return []
    access = "write" if inv.options & {"-w", "-a"} else "read"
    return [FileUse(access, w, at) for w, at in operands(inv, words)]


def _kill(inv: Invocation) -> str | None:
    """`kill %1` signals a job of the agent's own shell (local); a process id (`kill 4242`,
    `kill -9 -1`, `kill $PID`, `xargs kill`) can be any process of the user the agent runs
    as — Gatehouse's own server and workers among them: no class. `kill -l` only lists."""
    targets = list(inv.positionals)
    words = list(inv.option_words)
    if words and words[0] in ("-s", "-n", "--signal"):
        targets = targets[1:]  # the signal's name or number
        words = words[1:]
    elif words:
        words = words[1:]  # `-9`, `-TERM`, `-SIGKILL`: the signal
    targets += words  # after the signal, a negative number is a process group (`kill -9 -1`)
    if inv.options & {"-l", "-L", "--list", "--table"} and not [t for t in targets if not t.isdigit()]:
        return READ_ONLY
    if targets and all(t != WILD and t.startswith("%") for t in targets):
        return LOCAL
    return None


_LAST_JOB = ("$!", "${!}")


def _own_jobs(cmd: SimpleCommand, inv: Invocation) -> Invocation:
    """`kill $!` signals the job this shell last started in the background, as `kill %+`
    does: read it so; any other run-time word stays unknown."""
    if not any(w in _LAST_JOB for w in cmd.words):
        return inv
    words = tuple("%+" if w in _LAST_JOB else w for w in cmd.words)
    return read_invocation(words, frozenset(i for i in cmd.wild_at if cmd.words[i] not in _LAST_JOB))


# --- running other commands ----------------------------------------------------------------

def _eval(words: Words, cmd: SimpleCommand) -> list[Inner]:
    return [Inner(script=" ".join(words[1:]))] if len(words) > 1 else []


def _trap(words: Words, cmd: SimpleCommand) -> list[Inner]:
    args = [w for w in words[1:] if w != "--"]
    if not args or args[0] in ("-p", "-l", "-") or len(args) < 2:
        return []
    return [Inner(script=args[0])]


def _coproc(words: Words, cmd: SimpleCommand) -> list[Inner]:
    out = [Inner(tuple(words[1:]), start=1)] if len(words) > 1 else []
    if len(words) > 2 and words[1].isidentifier() and words[1].isupper():
        out.append(Inner(tuple(words[2:]), start=2))  # `coproc NAME cmd` as well as `coproc cmd`
    return out


def _command(words: Words, cmd: SimpleCommand) -> list[Inner]:
    if len(words) > 1 and words[1] in ("-v", "-V"):
        return []  # `command -v x` looks x up, it does not run it
    i = skip_options(words, 1, frozenset())
    return [Inner(tuple(words[i:]), start=i)] if i < len(words) else []


# --- the environment -------------------------------------------------------------------------

_PRINTS_VARIABLES = {"export": ("-p",), "declare": ("-p", "-x"), "typeset": ("-p", "-x"), "readonly": ("-p",)}


def _prints_variables(cmd: SimpleCommand) -> str | None:
    name = cmd.words[0]
    if name in _PRINTS_VARIABLES and not [w for w in cmd.words[1:] if not w.startswith("-")]:
        return f"`{name}` prints the environment, which holds the agent's credentials"
    return None


def _set_shows(cmd: SimpleCommand) -> str | None:
    if cmd.words[0] == "set" and len(cmd.words) == 1:
        return "`set` prints every variable, the agent's credentials among them"
    return None


def _compgen_shows(cmd: SimpleCommand) -> str | None:
    if cmd.words[0] == "compgen" and any(w in ("-e", "-v", "variable", "export") for w in cmd.words[1:]):
        return "`compgen` lists the variables"
    return None


def _assigned_names(words: Words) -> list[str]:
    """The variables `read`, `mapfile`/`readarray`, `getopts` and `printf -v` assign (every
    word that could be a name: an option's value too, which only over-reads)."""
    if words[0] != "printf":
        return [w for w in words[1:] if w.isidentifier()]
    names = []
    for i, word in enumerate(words):
        if word == "-v" and i + 1 < len(words):
            names.append(words[i + 1])
        elif word.startswith("-v") and len(word) > 2:
            names.append(word[2:])  # `-vNAME`
    return names


def _unset(cmd: SimpleCommand) -> str | None:
    if cmd.words[0] != "unset":
        return None
    for word in cmd.words[1:]:
        if not word.startswith("-") and risky_variable(word):
            return f"`unset {word}` drops a setting Gatehouse gave the agent (where git looks, which programs run)"
    return None


def _bash(table: str, **kwargs: Any) -> Spec:
    """A bash builtin's options (`help NAME`), and the `--help` bash gives each."""
    return spec(table + " /help", **kwargs)


# bash's own options of each builtin (`help NAME`)
_DECLARE = _bash("a A f F g i I l n r t u x p")
_OPTIONS = {
    "pwd": spec("L P"), "echo": spec("", any_option=True),  # (echo prints an option it does not know)
    "true": spec("", any_option=True), "false": spec("", any_option=True),  # (they ignore their words)
    # test's operators (`-f FILE`, `A -eq B`)
    "test": flags("-a -b -c -d -e -f -g -h -k -p -r -s -t -u -w -x -O -G -L -N -S -z -n -o -v -R -eq -ne -lt -le "
                  "-gt -ge -ef -nt -ot"),
    "exit": _bash("", numeric=True), "return": _bash("", numeric=True), "shopt": _bash("s u q p o"),
    "type": _bash("a f p P t"), "help": _bash("d m s"), "wait": _bash("n f p:"),
    "printf": _bash("v:"), "cd": _bash("L P e @"), "pushd": _bash("n", numeric=True), "popd": _bash("n", numeric=True),
    "export": _bash("f n p"), "declare": _DECLARE, "typeset": _DECLARE, "local": _DECLARE,
    "readonly": _bash("a A f p"), "unset": _bash("f v n"),
    "set": spec("a b e f h k m n p t u v x B C E H P T o:"), "let": Spec(),
    "alias": _bash("p"), "hash": _bash("r p: d t l"), "history": _bash("c d: a n r w p s"),
    # (kill takes a signal as an option: `-9`, `-TERM`, `-SIGKILL`)
    "kill": spec("s n l L", any_option=True),  # (`-s SIG`: the classifier takes SIG from the operands)
    "eval": Spec(), "trap": _bash("l p P"), "coproc": Spec(), "command": _bash("p v V"),
    # their command follows their options: the options stop at the first operand
    "builtin": _bash("", stop_at_operand=True), "exec": _bash("c l a:", stop_at_operand=True),
}
_OPTIONS["["] = _OPTIONS["test"]


def _declarer(name: str) -> Model:
    return Model(name, FAMILY, "sets variables (judged by the variable) or prints them", options=_OPTIONS[name],
                 cls=READ_ONLY, declares=True,
                 shows_environment=_prints_variables if name in _PRINTS_VARIABLES else None)


def _looks(name: str, summary: str = "only looks") -> Model:
    return Model(name, FAMILY, summary, options=_OPTIONS.get(name, Spec()), cls=READ_ONLY)


MODELS = [
    *(_looks(n) for n in ("pwd", "echo", "true", "false", "test", "[", "exit", "return", "shopt", "type", "help",
                          "wait")),
    Model("printf", FAMILY, "prints; `printf -v NAME` sets a variable", options=_OPTIONS["printf"], cls=READ_ONLY,
          assigns_names=_assigned_names),
    *(Model(n, FAMILY, "changes the working directory", options=_OPTIONS[n], cls=READ_ONLY, changes_directory=True)
      for n in ("cd", "pushd", "popd")),
    *(_declarer(n) for n in ("export", "declare", "local", "readonly", "typeset")),
    Model("unset", FAMILY, "unsets variables", options=_OPTIONS["unset"], cls=READ_ONLY, environment=_unset),
    Model("set", FAMILY, "sets shell options; alone it prints every variable", options=_OPTIONS["set"], cls=READ_ONLY,
          shows_environment=_set_shows),
    Model("compgen", FAMILY, "lists completions (`-v`, `-e`: variables)", shows_environment=_compgen_shows),
    *(Model(n, FAMILY, "reads a line into variables", assigns_names=_assigned_names) for n in ("read", "getopts")),
    *(Model(n, FAMILY, "reads lines into an array; `-C` runs a command", assigns_names=_assigned_names,
            code=runs_code("`-C` names a command run as lines are read", frozenset({"-C"})))
      for n in ("mapfile", "readarray")),
    *(Model(n, FAMILY, "runs the script file it names (not read)", cls=None, code=_source_code,
            files=_first_operand_read) for n in ("source", ".")),
    Model("let", FAMILY, options=_OPTIONS["let"], summary="arithmetic", cls=READ_ONLY, code=_let_code),
    Model("alias", FAMILY, options=_OPTIONS["alias"], summary="defines a command name that runs something else", cls=READ_ONLY,
          code=runs_code("`alias` defines a command name that runs something else")),
    Model("hash", FAMILY, options=_OPTIONS["hash"], summary="remembers where programs are; `-p` makes a name run another program", cls=READ_ONLY,
          code=runs_code("`hash -p` makes a command name run another program", frozenset({"-p"}))),
    Model("enable", FAMILY, "turns builtins on or off; `-f` loads one from a library",
          code=runs_code("`enable -f` loads a builtin from a library", frozenset({"-f"}))),
    Model("bind", FAMILY, "binds keys; `-x` to a command",
          code=runs_code("`bind -x` binds a key to a command", frozenset({"-x"}))),
    Model("complete", FAMILY, "defines completions; `-C` runs a command",
          code=runs_code("`complete -C` runs a command to complete", frozenset({"-C"}))),
    Model("history", FAMILY, options=_OPTIONS["history"], summary="shows the history; `-w`/`-a` write and `-r`/`-n` read a file", cls=READ_ONLY,
          files=_history_files),
    Model("kill", FAMILY, options=_OPTIONS["kill"], summary="signals a job of the shell (`%1`: local) or a process (no class)", cls=_kill,
          reading=_own_jobs),
    Model("eval", FAMILY, options=_OPTIONS["eval"], summary="runs its words as a script (read)", cls=READ_ONLY, inner=_eval),
    Model("trap", FAMILY, options=_OPTIONS["trap"], summary="runs a script on a signal (read)", cls=READ_ONLY, inner=_trap),
    Model("coproc", FAMILY, options=_OPTIONS["coproc"], summary="runs a command in the background (looked through)", cls=READ_ONLY, inner=_coproc),
    Model("command", FAMILY, options=_OPTIONS["command"], summary="runs a command (looked through); `-v` looks one up", cls=READ_ONLY, inner=_command),
    Model("builtin", FAMILY, options=_OPTIONS["builtin"], summary="runs a builtin (looked through)", cls=READ_ONLY, inner=command_after()),
    Model("exec", FAMILY, options=_OPTIONS["exec"], summary="replaces the shell with a command (looked through)", cls=READ_ONLY, inner=command_after()),
]

_EXAMPLES: dict[str, Examples] = {
    "echo": {"allow": ("echo hello", "echo -n x --anything")}, "pwd": {"allow": ("pwd -P",)},
    "test": {"allow": ("test -f src/app.py", "test 1 -eq 1")}, "[": {"allow": ("'[' -d src ']'",)},
    "exit": {"allow": ("exit 1",)}, "shopt": {"allow": ("shopt -s nullglob",)}, "type": {"allow": ("type -a ls",)},
    "printf": {"allow": ("printf '%s\\n' x", "printf -v out %s x"), "ask": ("printf -v PATH %s ./bin",)},
    "cd": {"allow": ("cd src",)}, "pushd": {"allow": ("pushd src",)}, "popd": {"allow": ("popd",)},
    "export": {"allow": ("export FOO=1",), "ask": ("export PATH=./bin:$PATH", "export -p")},
    "declare": {"allow": ("declare -a arr",), "ask": ("declare -x PATH=./bin",)},
    "local": {"allow": ("local x=1",), "ask": ("local PATH=./bin",)},
    "readonly": {"allow": ("readonly X=1",)}, "typeset": {"allow": ("typeset -i n=1",)},
    "unset": {"allow": ("unset FOO",), "ask": ("unset PATH",)},
    "set": {"allow": ("set -euo pipefail",), "ask": ("set",)},
    "compgen": {"ask": ("compgen -v",)}, "read": {"ask": ("read PATH",)}, "getopts": {"ask": ("getopts ab opt",)},
    "mapfile": {"ask": ("mapfile -C ./x lines",)}, "readarray": {"ask": ("readarray lines",)},
    "source": {"ask": ("source build/env.sh",)}, ".": {"ask": (". build/env.sh",)},
    "let": {"allow": ("let x=1+2",)}, "alias": {"ask": ("alias ls=rm",)},
    "hash": {"allow": ("hash -r",), "ask": ("hash -p ./x ls",)},
    "enable": {"ask": ("enable -f ./x.so x",)}, "bind": {"ask": ("bind -x '\\C-x: id'",)},
    "complete": {"ask": ("complete -C ./x git",)},
    "history": {"allow": ("history 10",), "ask": ("history -w /tmp/h",)},
    "kill": {"allow": ("kill %1", "kill -9 %2", "kill -l"), "ask": ("kill 1234", "kill -9 -1")},
    "eval": {"allow": ("eval echo hi",), "deny": ("eval 'rm -rf /'",)},
    "trap": {"allow": ("trap 'echo bye' EXIT",)}, "coproc": {"allow": ("coproc cat",)},
    "command": {"allow": ("command -v git", "command ls")}, "builtin": {"allow": ("builtin echo hi",)},
    "exec": {"allow": ("exec ls",)}, "true": {"allow": ("true",)}, "false": {"allow": ("false",)},
    "help": {"allow": ("help cd",)}, "wait": {"allow": ("wait",)}, "return": {"allow": ("return 0",)},
}
MODELS = with_examples(MODELS, _EXAMPLES)
