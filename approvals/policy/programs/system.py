"""The system: processes, the machine, disks, scheduling, binaries.

Looking at the machine is read-only (`uname`, `ps`, `free`); killing processes by name,
shutting down and formatting disks are destructive; setting the clock or the host name
has no class. `ps e` and `printenv` show environments, which hold credentials.
"""

from __future__ import annotations

from ..classnames import DESTRUCTIVE, READ_ONLY
from ..command import SimpleCommand
from ..fileuse import FileUse
from ..variables import secret_variable
from .coreutils import reads_all
from .invocation import Invocation
from .kit import Examples, Words, runs_code, value_uses, with_examples
from .model import UNCLASSIFIED, Model
from .spec import gnu, spec

FAMILY = "the system"

def _hostname(inv: Invocation) -> str | None:
    """`hostname NAME`/`-F FILE`/`-b` set the system's name (no class); without, it prints."""
    sets = bool(inv.operands) or bool(inv.options & {"-F", "-b"})
    return None if sets else READ_ONLY


def _hostname_files(inv: Invocation, words: Words) -> list[FileUse]:
    return value_uses(inv, ("-f", "-F"), "read")  # it quotes back each line it cannot use


def _ps_shows(cmd: SimpleCommand) -> str | None:
    if cmd.words[0] == "ps" and any(not w.startswith("-") and "e" in w for w in cmd.words[1:]):
        # BSD-style `e` (`ps eww`, `ps axe`): every process's environment, the server's too
        return "`ps e` prints the environment of processes, which holds credentials"
    return None


def _printenv_shows(cmd: SimpleCommand) -> str | None:
    if cmd.words[0] != "printenv":
        return None
    names = [w for w in cmd.words[1:] if not w.startswith("-")]
    if not names or any(secret_variable(n) for n in names):
        return "`printenv` prints the environment, which holds the agent's credentials"
    return None


def _crontab_files(inv: Invocation, words: Words) -> list[FileUse]:
    return [] if inv.options & {"-l"} else [FileUse("write", "/var/spool/cron", ())]


def _crontab_code(inv: Invocation, cmd: SimpleCommand) -> str | None:
    return None if inv.options & {"-l"} else "`crontab` installs commands that run later"


_OPTIONS = {
    "uname": gnu("a/all s/kernel-name n/nodename r/kernel-release v/kernel-version m/machine p/processor "
                 "i/hardware-platform o/operating-system"),
    "id": gnu("a Z/context g/group G/groups n/name r/real u/user z/zero"),
    "groups": gnu(""), "whoami": gnu(""), "arch": gnu(""), "tty": gnu("s/silent /quiet=s"),
    "nproc": gnu("/all /ignore:"), "getconf": spec("a v:"),
    "locale": spec("a/all-locales m/charmaps c/category-name k/keyword-name v/verbose /help /usage V/version"),
    "lscpu": spec("a/all b/online B/bytes C/caches? c/offline J/json e/extended? p/parse? s/sysroot: x/hex y/physical "
                  "/output-all h/help V/version"),
    "free": spec("b/bytes /kilo /mega /giga /tera /peta k/kibi m/mebi g/gibi /tebi /pebi h/human /si l/lohi "
                 "t/total v/committed s/seconds: c/count: w/wide /help V/version"),
    "uptime": spec("p/pretty h/help s/since V/version"),
    # (lsof's options: the common ones; `+D DIR` is an operand to the reader)
    "lsof": spec("h a b c: d: D: g? i? K? l n N o O P p: Q R s? S? t T? u: U v V w x? X Z? E F?"),
    # procps: UNIX (`-ef`), GNU (`--pid`) and BSD (`aux`, an operand) options
    "ps": spec("A a d e f F g: G: H j l L M N n: O: o: p: q: r s: t: T u: U: V v w x X y Z k: /cols: /columns: "
               "/cumulative /deselect /forest /format: /group: /Group: /headers /info /lines: /no-headers "
               "/pid: /ppid: /quick-pid: /rows: /sid: /sort: /tty: /user: /User: /width: /help? /version"),
    "printenv": gnu("0/null"),
}
_LOOKS = ("free", "uptime", "uname", "whoami", "id", "groups", "tty", "locale", "getconf", "nproc", "arch", "lscpu",
          "lsof")
_DESTROYS = ("pkill", "killall", "shutdown", "reboot", "halt", "poweroff", "mkswap", "fdisk", "sfdisk", "parted",
             "wipefs")

MODELS = [
    *(Model(n, FAMILY, "only looks", options=_OPTIONS[n], cls=READ_ONLY) for n in _LOOKS),
    Model("ps", FAMILY, "lists processes; `ps e` shows their environments", options=_OPTIONS["ps"], cls=READ_ONLY,
          shows_environment=_ps_shows),
    Model("printenv", FAMILY, "prints variables (alone, or a credential's name: asked)", options=_OPTIONS["printenv"],
          cls=READ_ONLY, shows_environment=_printenv_shows),
    Model("hostname", FAMILY, "prints the host name; an operand, `-F` or `-b` sets it (no class)",
          options=spec("a/alias A/all-fqdns b/boot d/domain f/fqdn /long F/file: i/ip-address "
                       "I/all-ip-addresses s/short y/yp /nis V/version h/help"), cls=_hostname, files=_hostname_files,
          effects={"-F": "reads"}),
    *(Model(n, FAMILY, "kills processes by name, stops the machine or changes disks", cls=DESTRUCTIVE)
      for n in _DESTROYS),
    Model("mkfs", FAMILY, "formats a disk (`mkfs.ext4` too)", cls=DESTRUCTIVE, prefixes=("mkfs.",)),
    *(Model(n, FAMILY, "reads the files it names", cls=UNCLASSIFIED, files=reads_all)
      for n in ("readelf", "objdump", "nm", "ldd", "gpg")),
    Model("crontab", FAMILY, "installs commands that run later (`-l` lists them)", files=_crontab_files,
          code=_crontab_code),
    Model("at", FAMILY, "schedules commands from its input", code=runs_code("`at` schedules commands from its input")),
    Model("batch", FAMILY, "schedules commands from its input",
          code=runs_code("`batch` schedules commands from its input")),
]

_EXAMPLES: dict[str, Examples] = {
    "ps": {"allow": ("ps aux", "ps -eo pid,comm"), "ask": ("ps eww",)},
    "printenv": {"allow": ("printenv PATH",), "ask": ("printenv", "printenv AWS_SECRET_ACCESS_KEY")},
    "hostname": {"allow": ("hostname -f",), "ask": ("hostname box",)},
    "mkfs": {"deny": ("mkfs /dev/sda1", "mkfs.ext4 /dev/sdb")},
    "crontab": {"ask": ("crontab -l", "crontab build/jobs")}, "at": {"ask": ("at now",)},
    "batch": {"ask": ("batch",)}, "lsof": {"allow": ("lsof -i :8000",)},
}


def _examples(model: Model) -> Examples | None:
    if model.cls == DESTRUCTIVE:
        return {"deny": (model.name,)}
    if model.files is not None:
        return {"ask": (f"{model.name} build/x",)}
    return {"allow": (model.name,)}


MODELS = with_examples(MODELS, _EXAMPLES, _examples)
