"""Every program model: its own table of examples holds, and nothing it does not declare
(an option, a subcommand) is allowed without a floor (issue 29)."""

from __future__ import annotations

import string

import pytest

from approvals.policy import DEFAULT_POLICY, PathContext, RunView, compile_policy, evaluate
from approvals.policy.programs.registry import ALIASES, FAMILIES, MODELS, model_of, program_name

DEFAULT = compile_policy(DEFAULT_POLICY)
WORKSPACE = "/work/project"
CONTEXT = PathContext(workspace=WORKSPACE, homes=("/home/agent",), filesystem=False)


def decide(command: str, *, floor: bool = False):
    return evaluate(DEFAULT, {"tool": "bash", "input": {"command": command}, "cwd": WORKSPACE}, paths=CONTEXT,
                    run_view=RunView(floor=floor))


def _examples():
    for name, model in sorted(MODELS.items()):
        for decision, commands in model.examples.items():
            for command in commands:
                yield pytest.param(name, decision, command, id=f"{name}: {command}")


@pytest.mark.parametrize("program, decision, command", list(_examples()))
def test_each_model_s_examples_get_their_decision(program, decision, command):
    verdict = decide(command)
    assert verdict.decision == decision, (command, verdict.rule, verdict.reason)


def test_every_program_with_a_class_has_examples():
    missing = [name for name, model in MODELS.items() if model.known and not model.examples]
    assert not missing, missing


def _spec_of(model, sub=None):
    spec = model.options
    return spec.subcommands[sub] if sub is not None else spec


def _unlisted_short(spec) -> str | None:
    taken = set(spec.shorts) | {f[1:] for f in spec.flags if len(f) == 2}
    return next((ch for ch in string.ascii_letters if ch not in taken), None)


def _unlisted():
    """For every model with a class: an option it does not declare (long and short), at the
    top and in each subcommand it models, and a subcommand it does not know."""
    for name, model in sorted(MODELS.items()):
        if not model.known or model.cls is None:
            continue
        top = model.options
        heads = [(name, top)] + [(f"{name} {sub}", sub_spec) for sub, sub_spec in sorted((top.subcommands or {}).items())]
        for head, spec in heads:
            if spec.any_option:
                continue
            yield pytest.param(f"{head} --zz-not-an-option", id=f"{head} --zz")
            letter = _unlisted_short(spec)
            if letter is not None and not spec.single_dash:
                yield pytest.param(f"{head} -{letter}", id=f"{head} -{letter}")
        if top.subcommands is not None or getattr(model.cls, "table", None) or model.verify is not None:
            yield pytest.param(f"{name} zz-not-a-subcommand", id=f"{name} zz-sub")


@pytest.mark.parametrize("command", list(_unlisted()))
def test_nothing_a_model_does_not_declare_is_allowed_without_a_floor(command):
    verdict = decide(command)
    assert verdict.decision != "allow", (command, verdict.rule, verdict.reason)


def test_inside_the_floor_an_unlisted_option_of_a_read_only_program_is_allowed():
    assert decide("ls --zz-not-an-option", floor=True).decision == "allow"
    assert decide("git log --zz-not-an-option", floor=True).decision == "allow"


def test_the_registry_finds_each_model_by_its_names():
    for name, model in MODELS.items():
        assert program_name(name)[0] == name and model_of(name) is model
        assert model.family in {family.FAMILY for family in FAMILIES}, name
    for alias, name in ALIASES.items():
        assert program_name(alias)[0] == name
    assert program_name("python3.11")[0] == "python" and program_name("git-push") == ("git", ("push",))
    assert model_of("mkfs.ext4") is MODELS["mkfs"]
