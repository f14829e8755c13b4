"""Closed world for allow: what a command's program model does not recognise.

A program the policy knows is read against its model (`programs/`). An option the model
does not declare (`sort --compress-program` once it was not listed, `ls --weird`), a
subcommand it does not know (`gh extension install`), a setting it cannot read (`man -C
FILE`) or an operand shape it cannot vouch for (`git pull https://other.example/repo`)
leaves the command *unverified*: it is never allowed by a class rule on its own. Inside
the sandbox floor the rule policy's `unverified` setting decides (default allow: the floor
bounds what it can do); without a floor it is asked about (denied when the setting says
deny). An allow rule that names the command, or a session grant, still allows it; an
unknown program has no class and is decided by the rules or the default, as before.
"""

from __future__ import annotations

from .command import SimpleCommand
from .programs.invocation import Invocation
from .programs.model import Model


def _own_words(inv: Invocation, model: Model) -> int:
    """How many of a launcher's words are its own: up to its first operand, where the
    command it runs starts (`timeout 5 ls -la`: `-la` is ls's)."""
    spec = model.options
    if model.inner is None or spec.subcommands is not None or spec.single_dash or not inv.positional_at:
        return 1 << 30
    return inv.positional_at[0]


def unverified(inv: Invocation, cmd: SimpleCommand, model: Model | None) -> str | None:
    """What the model of a known program does not recognise in this command (None: all)."""
    if model is None or not model.known:
        return None
    program = inv.program
    if inv.unrecognised:
        words = cmd.words
        own = _own_words(inv, model)
        for index in inv.unrecognised:
            if index < own:
                word = words[index] if 0 <= index < len(words) else "?"
                return f"`{program} {word}` is not in {program}'s model"
    if model.effects:
        for option in sorted(inv.options):
            if model.effects.get(option) == "settings":
                return f"`{program} {option}` reads settings that can name programs, which the policy does not read"
    if model.verify is not None:
        return model.verify(inv, cmd)
    return None
