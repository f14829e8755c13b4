"""How one command of a verdict was read: which program model, what it recognised.

The policy admin's "Try it" shows it beside each command, so an administrator who adds or
overrides a model in the rule policy (`"programs"`) sees it at work: the model that read
the command (the policy's own, the built-in one, or none: an unknown program), the
subcommand and options it recognised, the operands, and the words it did not recognise
(what leaves a command unverified).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .programs.invocation import WILD
from .programs.model import Model
from .programs.registry import known, model_of
from .verdicts import Segment


@dataclass(frozen=True)
class Reading:
    program: str
    model: str  # "policy" (the rule policy's `programs`), "built-in", or "none" (an unknown program)
    summary: str = ""
    subcommand: str | None = None
    options: tuple[str, ...] = ()  # as written, in order
    operands: tuple[str, ...] = ()  # "…" for a word only known at run time
    unrecognised: tuple[str, ...] = ()  # words the model does not declare


def reading_of(segment: Segment, policy_programs: Mapping[str, Model] | None = None) -> Reading | None:
    """How `segment`'s command was read, given the rule policy's own models
    (`CompiledPolicy.programs`); None when the evaluation kept no reading."""
    inv = segment.invocation
    if inv is None:
        return None
    program = inv.program
    model = (policy_programs or {}).get(program)
    if model is not None:
        origin = "policy"
    else:
        model = model_of(program)
        origin = "built-in" if model is not None or known(program) else "none"
    words = segment.words
    unrecognised = tuple(words[i] for i in inv.unrecognised if 0 <= i < len(words))
    return Reading(
        program=program, model=origin, summary=model.summary if model is not None else "",
        subcommand=inv.subcommand, options=inv.option_words,
        operands=tuple("…" if w == WILD else w for w in inv.operands), unrecognised=unrecognised,
    )
