"""A program model: everything the policy knows about one program, declared in one place.

The facets (each optional; a program declares the ones it has):

- **names**: the program's name, its aliases (`egrep` reads as `grep -E`), a versioned
  name (`python3.11`), `git-push` for `git push`, a name prefix (`mkfs.ext4`);
- **options**: how it spells them (a `Spec`: short and long names, which take a value,
  combined short flags, long-option abbreviations as getopt reads them; its subcommands
  with their own options);
- **effects** of its options: harmless unless declared (reads FILE, writes FILE, runs
  code, network, changes settings); an option, subcommand or operand shape a model does
  not declare leaves the command *unverified* (`unverified.py`), never allowed by a class
  rule on its own;
- **class**: its side-effect class, a constant or a function of the command read by
  meaning (`classes.py` walks it); a model without one is a program the policy does not
  know (its words may be a command it runs);
- **files**: which of its words name files it reads, writes or links to (`FileUse`), and
  whether a command of it names any (so that path checks are skipped when not);
- **code**: why a command of it runs code the policy cannot read (`python -c`, `sort
  --compress-program`, `git -c core.pager=…`), whether it runs scripts as a shell or an
  interpreter does;
- **wrapper**: where the command it runs is in its words (`sudo CMD`, `find -exec CMD ;`);
- **network**: it talks to the network, and what makes it send a file;
- **environment**: what it does to the shell's environment (`export`, `read NAME`), and
  whether it shows the environment (`env`, `printenv`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..command import SimpleCommand
from .invocation import Invocation
from .kit import CodeCheck, FilesOf, InnerOf, Words, WorkspaceCheck
from .spec import UNKNOWN, Spec

# `cls` of a model that declares no class: the policy does not know what the program does
# with its words (it may run them as a command, as `chronic` does).
UNCLASSIFIED = "\x00unclassified"

# What an option does beyond looking (`Model.effects`): its value is a file read, a file
# written, a directory written into; it runs a program, talks to the network, or reads
# settings that can name programs.
EFFECTS = ("reads", "writes", "writes-tree", "code", "network", "settings")
FILE_EFFECTS = frozenset({"reads", "writes", "writes-tree"})

Classifier = Callable[[Invocation], "str | None"]


@dataclass(frozen=True, eq=False)
class Model:
    """What the policy knows about one program."""

    name: str
    family: str = ""
    summary: str = ""
    # -- names --
    aliases: tuple[str, ...] = ()  # other names that run this program
    alias_options: Mapping[str, str] = field(default_factory=dict)  # `egrep` -> `-E`
    versioned: bool = False  # `python3.11`, `pip3` read as this program
    dash_subcommands: tuple[str, ...] = ()  # `git-push` reads as `git push`
    prefixes: tuple[str, ...] = ()  # `mkfs.` : `mkfs.ext4` has this model's class
    # -- options --
    options: Spec = UNKNOWN
    dashless_first: bool = False  # `tar xzf a.tgz`: the first word is an option cluster
    # what an option does beyond looking: "reads" or "writes" FILE (its value), "code" (runs
    # a program), "network", "settings" (reads settings that can name programs, which the
    # policy does not read); an option not named here is harmless
    effects: Mapping[str, str] = field(default_factory=dict)
    subcommands: frozenset[str] | None = None  # every subcommand it knows (others are unverified)
    # what else a command of it does that its model cannot vouch for (an operand's shape:
    # `git pull URL`, `pip install --user`): why, or None
    verify: CodeCheck | None = None
    # a read of something secret the policy does not see as a file (`kubectl get secrets -o yaml`)
    reveals: CodeCheck | None = None
    # -- class --
    cls: str | None | Classifier = UNCLASSIFIED
    reading: Callable[[SimpleCommand, Invocation], Invocation] | None = None  # re-read run-time words it understands (kill $!)
    # -- files --
    files: FilesOf | None = None
    names_files: Callable[[Invocation], bool] | None = None  # None: a command of it may name files when `files`
    # -- code --
    code: CodeCheck | None = None
    runs_scripts: str | None = None  # "shell" or "interpreter": runs the code it is given
    may_run_code: Callable[[Invocation], bool] | None = None  # a cheap test before `code` (default: has a check)
    # -- wrapper --
    inner: InnerOf | None = None
    # -- network --
    network: bool = False
    network_check: CodeCheck | None = None  # why a command of it sends a file or its input
    # -- environment --
    environment: Callable[[SimpleCommand], str | None] | None = None  # why it changes the environment in a risky way
    declares: bool = False  # `NAME=value` words set variables (export, declare, local)
    assigns_names: Callable[[Words], list[str]] | None = None  # the variables its words name and it sets (read)
    shows_environment: Callable[[SimpleCommand], str | None] | None = None  # why it prints the environment
    # -- the shell's state --
    changes_directory: bool = False  # cd, pushd, popd
    option_sensitive: bool = False  # a run-time word that may be an option changes what it does
    # what of the workspace's own a command of it runs or reads as settings that name
    # programs (git's hooks, a bare repository's config, a venv's pip.conf, a project's
    # .ackrc): the clause that says so, or None; only with the file system
    workspace_code: WorkspaceCheck | None = None
    stales_index: bool = False  # a command of it that is not read-only changes what git tracks
    # -- examples --
    # decision -> commands the default policy gives that decision without a floor, in a
    # workspace `/work/project` read by its paths alone (run by a test: test_program_models)
    examples: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def known(self) -> bool:
        """The policy knows what the program does with its words (it declares a class, or
        none on purpose)."""
        return self.cls != UNCLASSIFIED

    def classify(self, inv: Invocation) -> str | None:
        cls = self.cls
        if cls is None or cls == UNCLASSIFIED:
            return None
        if isinstance(cls, str):
            return cls
        return cls(inv)

    def may_name_files(self, inv: Invocation) -> bool:
        if self.files is None:
            return bool(self.file_options) and not self.file_options.isdisjoint(inv.values)
        return self.names_files(inv) if self.names_files is not None else True

    @functools.cached_property
    def file_options(self) -> frozenset[str]:
        """The options whose value is a file it reads or writes (its effects)."""
        return frozenset(o for o, effect in self.effects.items() if effect in FILE_EFFECTS)
