"""Every program model, registered by name: the one place the policy asks what it knows
about a program.

A model is found by its name or an alias (`egrep`), a versioned name (`python3.11`), a
`.exe` suffix or another case (`RM` runs `rm` on a case-insensitive file system); `git-push`
reads as `git push`. The families are modules of this package (`FAMILIES`); adding a
program is adding its model to its family's `MODELS`.
"""

from __future__ import annotations

from . import (
    archivers,
    builtins,
    cloud,
    coreutils,
    databases,
    files,
    git,
    interpreters,
    launchers,
    network,
    packages,
    pagers,
    system,
    text,
)
from .model import Model
from .spec import UNKNOWN, Spec

FAMILIES = (coreutils, files, text, system, builtins, git, network, archivers, packages, pagers, interpreters,
            databases, cloud, launchers)


def _register() -> tuple[dict[str, Model], dict[str, str], dict[str, str]]:
    models: dict[str, Model] = {}
    aliases: dict[str, str] = {}
    alias_options: dict[str, str] = {}
    for family in FAMILIES:
        for model in family.MODELS:
            if model.name in models:
                raise ValueError(f"two models of `{model.name}`")
            models[model.name] = model
    for model in models.values():
        for alias in model.aliases:
            if alias in models or alias in aliases:
                raise ValueError(f"`{alias}` names two programs")
            aliases[alias] = model.name
        alias_options.update(model.alias_options)
    return models, aliases, alias_options


MODELS, ALIASES, ALIAS_OPTIONS = _register()
_VERSIONED = tuple(m.name for m in MODELS.values() if m.versioned)
_DASHED = tuple((m.name + "-", frozenset(m.dash_subcommands)) for m in MODELS.values() if m.dash_subcommands)
_PREFIXED = tuple((prefix, m) for m in MODELS.values() for prefix in m.prefixes)
_KNOWN = frozenset(n for n, m in MODELS.items() if m.known) | frozenset(
    a for a, n in ALIASES.items() if MODELS[n].known)
_WRAPPERS = frozenset(n for n, m in MODELS.items() if m.inner is not None)
# Programs `risks.py` has something to look at in (code, network, the environment).
_RISKY = frozenset(n for n, m in MODELS.items() if m.code is not None or m.runs_scripts is not None or m.network
                   or m.shows_environment is not None or m.environment is not None or m.assigns_names is not None
                   or m.declares or "code" in m.effects.values())


def program_name(word: str) -> tuple[str, tuple[str, ...]]:
    """(model name, extra leading words) of a command word: `python3.11` -> python,
    `git-push` -> git push, `RM` -> rm (a case-insensitive file system runs it as rm)."""
    alias = ALIASES.get(word)
    if alias is not None:
        return alias, ()
    if word.isalpha() and word.islower():
        return word, ()  # the common case: a plain lower-case name
    name = word.lower()
    if name.endswith(".exe"):
        name = name[:-4]
    if name in ALIASES:
        return ALIASES[name], ()
    for stem in _VERSIONED:
        if name.startswith(stem) and name[len(stem):].replace(".", "").isdigit():
            return stem, ()
    for prefix, subcommands in _DASHED:
        if name.startswith(prefix) and name[len(prefix):] in subcommands:
            return prefix[:-1], (name[len(prefix):],)
    return name, ()


def model_of(program: str) -> Model | None:
    """The model of a program (as `program_name` gives it), or None."""
    model = MODELS.get(program)
    if model is None and "." in program:
        for prefix, prefixed in _PREFIXED:
            if program.startswith(prefix):
                return prefixed
    return model


def spec_of(program: str) -> Spec:
    model = MODELS.get(program)
    return model.options if model is not None else UNKNOWN


def known(name: str) -> bool:
    """Whether the policy knows what the program of this exact name does with its words."""
    return name in _KNOWN


def looks_through(name: str) -> bool:
    """Whether a command of this name runs another command the policy reads (a wrapper)."""
    if name in _WRAPPERS:
        return True
    return program_name(name)[0] in _WRAPPERS if (not name.islower() or name[-1:].isdigit() or "-" in name
                                                  or "." in name) else False


def risky(program: str) -> bool:
    """Whether a command of this program could run code, talk to the network or touch the
    environment (the checks of `risks.py` have something to look at)."""
    return program in _RISKY
