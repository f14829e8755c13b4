"""A launcher's options are read as getopt reads them, so no spelling of them hides the
command it runs: every option letter of each launcher's model, alone, clustered with
another, and given a value that is itself made of option letters (`sudo -ueve` is the user
`eve`, not sudoedit's `-e`), in front of `rm -rf /` under a policy that denies `rm -rf`
and allows the rest. Generated from the models, so a letter added to one is tried too.
Clusters holding a letter that makes the launcher run nothing (`sudo -l` lists, `ionice -p`
takes process ids) are left out, each named below."""

from __future__ import annotations

import itertools

import pytest

from approvals.policy import RunView, compile_policy, evaluate
from approvals.policy.programs.registry import MODELS

from .policytest import DENY_LIST_POLICY, make_sandbox

DENY_LIST = compile_policy(DENY_LIST_POLICY)

# launcher: (the words its command comes after, beside the options; letters that run nothing)
LAUNCHERS = {
    "sudo": ("", "lvVKh"),  # list, validate, version, remove the credentials, help (`-h` alone)
    "env": ("", ""),
    "runuser": ("-u eve", "hV"),
    "nice": ("", ""),
    "timeout": ("5", ""),
    "stdbuf": ("-oL", ""),
    "setsid": ("", "hV"),
    "ionice": ("", "pPuhV"),  # -p/-P/-u: the operands are process, group or user ids
    "watch": ("", "hv"),
    "time": ("", "V"),
    "doas": ("", "CL"),  # -C: checks a configuration; -L: clears the persisted login
    "chrt": ("5", "pmhV"),  # -p: a process id; -m: prints the priorities
    "taskset": ("1", "phV"),  # -p: a process id
    "flock": ("/tmp/lock", "hV"),
    "caffeinate": ("", ""),
    "exec": ("", ""),
}


def _spellings(name: str) -> list[str]:
    spec = MODELS[name].options
    letters = sorted(spec.shorts)
    takes = {letter for letter in letters if spec.shorts[letter] in spec.values}
    flags = [letter for letter in letters if letter not in takes]
    out = [f"-{letter}" for letter in flags]
    out += [f"-{a}{b}" for a, b in itertools.permutations(flags, 2)]
    for letter in takes:
        for value in ("eve", "lk", "5"):
            out += [f"-{letter}{value}", f"-{letter} {value}"]
            out += [f"-{flag}{letter}{value}" for flag in flags]
            out += [f"-{flag}{letter} {value}" for flag in flags]  # the cluster's last letter takes the next word
    return out


CASES = [(name, spelling) for name in LAUNCHERS for spelling in _spellings(name)
         if not set(spelling.split()[0][1:]) & set(LAUNCHERS[name][1])]


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory):
    return make_sandbox(tmp_path_factory.mktemp("launchers"))


def test_every_launcher_in_the_table_has_a_model_with_options() -> None:
    for name in LAUNCHERS:
        assert MODELS[name].inner is not None and MODELS[name].options.shorts, name
    assert len(CASES) > 1000


def test_no_spelling_of_a_launcher_s_options_hides_the_command_it_runs(box) -> None:
    allowed = []
    for name, spelling in CASES:
        base = LAUNCHERS[name][0]
        command = " ".join(w for w in (name, spelling, base, "rm -rf /") if w)
        verdict = evaluate(DENY_LIST, {"tool": "bash", "input": {"command": command}, "cwd": box.workspace},
                           paths=box.context, run_view=RunView(floor=False))
        if verdict.decision == "allow":
            allowed.append(command)
    assert allowed == []
