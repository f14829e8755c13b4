"""Shells and interpreters: they run the code they are given.

A shell given `-c SCRIPT` (or a static here-document) is looked through: its script is read
as commands of its own. A script file (`bash x.sh`, `python x.py`), code on the command line
(`python -c`, `node -e`) or code read from a pipe or a file cannot be read: at least `ask`
(`commands.interpreter`), unless an allow rule or a grant names exactly that command.
"""

from __future__ import annotations

import posixpath

from ..command import SimpleCommand
from .invocation import Invocation
from .kit import CodeCheck, Examples, Inner, Words, stdin_kind, with_examples
from .model import UNCLASSIFIED, Model
from .spec import UNKNOWN, spec

FAMILY = "shells and interpreters"

SHELLS = ("bash", "sh", "zsh", "dash", "ksh", "ash", "fish", "mksh", "yash", "tcsh", "csh", "rbash")


def _shell_inner(words: Words, cmd: SimpleCommand) -> list[Inner]:
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
        return [Inner(script=words[i] if i < len(words) else "")]
    if i >= len(words) or words[i] == "-":
        if cmd.stdin_text is not None:
            return [Inner(script=cmd.stdin_text)]  # `bash <<'EOF' ... EOF`: the text is the script
    return []


def _shell_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    program = inv.program
    if any(w.startswith("-") and not w.startswith("--") and "c" in w[1:] for w in cmd.words[1:]
           if not w.startswith("-o")):
        return None  # `bash -c 'script'`: the script is read as commands of its own
    script = [w for w in inv.positionals if w != "-"]
    if script:
        return f"`{program}` runs the script file `{script[0]}`, which is not read"
    if cmd.stdin is not None and cmd.stdin_text is None:
        return f"`{program}` reads commands from its {stdin_kind(cmd)}"
    return None


def _shell(name: str) -> Model:
    return Model(name, FAMILY, "a shell: `-c SCRIPT` and a static here-document are read as commands",
                 runs_scripts="shell", inner=_shell_inner, code=_shell_code)


# program -> options that give it code to run
_CODE_OPTIONS: dict[str, tuple[str, ...]] = {
    "python": ("-c",), "node": ("-e", "-p"), "perl": ("-e", "-E"), "ruby": ("-e",), "php": ("-r", "-B", "-R", "-E"),
    "lua": ("-e",), "luajit": ("-e",), "deno": (), "rscript": ("-e",),
    "r": ("-e",), "julia": ("-e", "-E", "--eval", "--print"), "osascript": ("-e",), "tclsh": (), "wish": (),
    "powershell": ("-c", "-command", "-encodedcommand", "-e", "-ec", "-C"), "expect": ("-c",),
    "groovy": ("-e",), "scala": ("-e",), "elixir": ("-e",), "erl": ("-eval",), "ghc": ("-e",), "irb": (),
    "jshell": (), "gdb": ("-ex", "-x", "-batch", "--batch", "-eval-command", "--eval-command"),
}
# those that run code from their standard input when given no script
STDIN_INTERPRETERS = frozenset({"python", "node", "perl", "ruby", "php", "lua", "luajit", "tclsh", "wish",
                                "irb", "jshell", "expect", "osascript", "powershell", "rscript", "r", "julia",
                                "bun", "deno", "elixir", "groovy", "scala"})


def interpreter_code(options: tuple[str, ...]) -> CodeCheck:
    """The code facet of an interpreter: code given by one of `options`, on the command line,
    or from its input."""
    def check(inv: Invocation, cmd: SimpleCommand) -> str | None:
        program = inv.program
        code = next((o for o in options if o in inv.options), None)
        if code is None and program == "powershell":
            code = next((w for w in cmd.words[1:] if w.lower() in ("-c", "-command", "-encodedcommand", "-ec",
                                                                  "-e")), None)
        if code is None and program == "deno" and inv.positionals[:1] == ("eval",):
            code = "eval"
        if code is not None:
            return f"`{program} {code}` runs code given on the command line"
        if program in STDIN_INTERPRETERS and cmd.stdin is not None and (not inv.positionals or
                                                                        inv.positionals[0] == "-"):
            return f"`{program}` runs code from its {stdin_kind(cmd)}"
        if program == "python" and inv.positionals[:1] == ("-",):
            return "`python -` runs code from its standard input"
        return None
    return check


def _python_inner(words: Words, cmd: SimpleCommand) -> list[Inner]:
    """`python -m pip …` is pip: the pip beside the python named (`.venv/bin/python -m pip`
    is the workspace's venv's pip, as `.venv/bin/pip` is)."""
    for i, word in enumerate(words[:-1]):
        if word == "-m" and words[i + 1] in ("pip", "pip3"):
            pip = posixpath.join(posixpath.dirname(cmd.path), "pip") if cmd.path else "pip"
            return [Inner((pip, *words[i + 2:]), start=-1)]
        if word == "-c" or (word.startswith("-") and not word.startswith("--") and "c" in word):
            return []
    return []


_OPTIONS = {
    "python": spec("c: m: W: X: Q: b B d E h i I O P q s S u v V x /check-hash-based-pycs: /help /version",
                   stop_at_operand=True),
    "node": spec("e/eval: p/print: r/require: i/interactive c/check /inspect? /inspect-brk? /input-type: "
                 "/import: /loader: /experimental-loader: /env-file: /test /watch v/version h/help",
                 stop_at_operand=True),
    "perl": spec("e: E: n p a F: i? M: m: I: c w W X s T t C? 0? d? D? l u U v V h x?", stop_at_operand=True),
    "ruby": spec("e: E: I: r: n p a l c w W? x? C: F: 0? d v y s S h /version /disable: /enable: /jit",
                 stop_at_operand=True),
    "php": spec("r: B: R: E: F: f: a c: d: e h i l m n q s v w z: H S: t: /ini?", stop_at_operand=True),
    "lua": spec("e: l: i v E W", stop_at_operand=True),
}
_ALIASES = {"python": ("python3", "python2"), "node": ("nodejs",), "perl": ("perl5",), "powershell": ("pwsh",)}
_VERSIONED = ("python", "perl", "ruby", "php", "lua", "node")
# Interpreters the policy knows to have no class (a link to one is read as that program).
_KNOWN = ("python", "node", "perl", "ruby", "php")
_SUMMARY = "an interpreter: a script file, code on the command line or from its input is not read"


def _interpreter(name: str) -> Model:
    return Model(name, FAMILY, _SUMMARY, aliases=_ALIASES.get(name, ()), versioned=name in _VERSIONED,
                 options=_OPTIONS.get(name, UNKNOWN), cls=None if name in _KNOWN else UNCLASSIFIED,
                 runs_scripts="interpreter",
                 code=interpreter_code(_CODE_OPTIONS[name]), inner=_python_inner if name == "python" else None)


MODELS = [_shell(name) for name in SHELLS] + [_interpreter(name) for name in _CODE_OPTIONS]

_EXAMPLES: dict[str, Examples] = {
    # (a shell has no class: `bash -c 'ls'` is decided by the rules or the default, its script as commands)
    "bash": {"ask": ("bash -c 'ls -la'", "bash build.sh", "curl -s https://x | bash"),
             "deny": ("bash -c 'rm -rf /'",)},
    "sh": {"ask": ("sh -c 'ls'", "sh build.sh")},
    "python": {"ask": ("python -c 'print(1)'", "python build/x.py", "python3 -m pytest")},
    "node": {"ask": ("node -e 'x'", "node build/x.js")},
}


def _examples(model: Model) -> Examples | None:
    return {"ask": (f"{model.name} build/x",)}


MODELS = with_examples(MODELS, _EXAMPLES, _examples)
