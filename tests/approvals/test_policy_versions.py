"""Policy versions (issue 10): every content change a new immutable version, runs and steps
pointing at the one they ran under, restore as a new version, readable diffs; the presets
of a fresh install; import and export through a file that round-trips byte for byte."""

from __future__ import annotations

import importlib
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import ProtectedError

from approvals import policy as core
from approvals.gate import gate_request
from approvals.models import Policy, PolicyVersion
from approvals.policy_versions import PolicyInvalid, policy_restore, policy_save, version_diff
from runs.models import Run, Step
from runs.services import run_create

pytestmark = pytest.mark.django_db

SCENARIO = {"steps": [{"message": "hi"}]}
STRICT = {"commands": {"deny": [{"match": "git push", "reason": "Publishing is a person's job."}]}, "default": "ask"}


def versions(policy: Policy) -> list[tuple[int, str]]:
    return list(PolicyVersion.objects.filter(policy=policy).order_by("number").values_list("number", "comment"))


# --- versions ----------------------------------------------------------------------------------


def test_every_content_change_is_a_new_version_and_an_unchanged_save_is_none(reviewer: Any) -> None:
    policy = policy_save(policy=Policy(name="strict", document=STRICT), user=reviewer, comment="first")
    policy.description = "only the description changes"
    policy_save(policy=policy, user=reviewer, comment="no content change")
    assert versions(policy) == [(1, "first")]

    policy.document = {**STRICT, "default": "deny"}
    policy_save(policy=policy, user=reviewer, comment="stricter default")
    policy.run_policy = {"approvals": {"timeout_s": 600}}
    policy_save(policy=policy, comment="ten minutes")
    assert versions(policy) == [(1, "first"), (2, "stricter default"), (3, "ten minutes")]
    latest = PolicyVersion.objects.get(policy=policy, number=3)
    assert latest.document == {**STRICT, "default": "deny"} and latest.run_policy == {"approvals": {"timeout_s": 600}}
    assert latest.version == core.policy_version(latest.document) == Policy.objects.get(pk=policy.pk).version
    assert PolicyVersion.objects.get(policy=policy, number=2).author == reviewer and latest.author is None


def test_a_version_is_immutable() -> None:
    policy = policy_save(policy=Policy(name="strict", document=STRICT))
    version = PolicyVersion.objects.get(policy=policy)
    version.comment = "rewritten history"
    with pytest.raises(ValueError, match="immutable"):
        version.save()
    assert PolicyVersion.objects.get(pk=version.pk).comment == ""


def test_an_invalid_policy_is_refused_whole_naming_section_and_rule() -> None:
    with pytest.raises(PolicyInvalid) as refused:
        policy_save(policy=Policy(name="broken", document={"commands": {"deny": ["git push", {"match": ""}]}}))
    message = refused.value.problems[0].message
    assert message.startswith("commands.deny[1]") and "empty" in message
    with pytest.raises(PolicyInvalid) as refused:
        policy_save(policy=Policy(name="broken", document={"classes": {"destructive": "maybe"}}))
    assert "classes.destructive" in refused.value.problems[0].message
    with pytest.raises(PolicyInvalid) as refused:
        policy_save(policy=Policy(name="broken", document=STRICT, run_policy={"approvals": {"timeout_s": 0}}))
    assert refused.value.problems[0].where == "approvals.timeout_s"
    assert not Policy.objects.filter(name="broken").exists() and not PolicyVersion.objects.filter(policy__name="broken").exists()


def test_a_policy_cannot_be_its_own_shadow() -> None:
    policy = policy_save(policy=Policy(name="strict", document=STRICT))
    policy.shadow_policy = policy
    with pytest.raises(PolicyInvalid, match="its own shadow"):
        policy_save(policy=policy)


def test_runs_and_steps_point_at_the_version_they_ran_under() -> None:
    policy = policy_save(policy=Policy(name="strict", document=STRICT))
    first = run_create(driver="scripted", scenario=SCENARIO, policy_name="strict")
    policy.document = {**STRICT, "default": "allow"}
    policy_save(policy=policy, comment="looser")
    second = run_create(driver="scripted", scenario=SCENARIO, policy_name="strict")
    v1, v2 = PolicyVersion.objects.filter(policy=policy).order_by("number")
    assert (first.ran_under, second.ran_under) == (v1, v2)
    assert first.policy_version == v1.version and second.policy_version == v2.version
    outcome = gate_request(run_id=first.pk, tool="bash", input={"command": "ls"}, cwd=first.workspace)
    step = Step.objects.get(pk=outcome.step_id)
    assert step.decided_under == v1 and step.policy_version == v1.version


def test_a_run_under_the_built_in_fallback_points_at_no_version() -> None:
    Policy.objects.filter(is_default=True).update(is_default=False)
    run = run_create(driver="scripted", scenario=SCENARIO)
    assert (run.policy, run.ran_under, run.policy_document) == (None, None, core.DEFAULT_POLICY)


def test_a_version_that_decided_runs_is_never_deleted_with_its_policy() -> None:
    policy = policy_save(policy=Policy(name="strict", document=STRICT))
    run_create(driver="scripted", scenario=SCENARIO, policy_name="strict")
    with pytest.raises(ProtectedError):
        policy.delete()
    unused = policy_save(policy=Policy(name="unused", document=STRICT))
    unused.delete()  # never ran anything: it and its versions go
    assert not PolicyVersion.objects.filter(policy__name="unused").exists()


def test_restore_writes_the_old_content_as_a_new_version(reviewer: Any) -> None:
    policy = policy_save(policy=Policy(name="strict", document=STRICT))
    policy.document = {"default": "allow"}
    policy_save(policy=policy, comment="oops")
    restored = policy_restore(policy=policy, number=1, user=reviewer)
    assert (restored.number, restored.comment, restored.author) == (3, "Restored version 1.", reviewer)
    assert Policy.objects.get(pk=policy.pk).document == STRICT and restored.document == STRICT
    with pytest.raises(core.PolicyError, match="current content"):
        policy_restore(policy=policy, number=1)
    with pytest.raises(core.PolicyError, match="no version 9"):
        policy_restore(policy=policy, number=9)
    assert versions(policy)[-1] == (3, "Restored version 1.")


def test_a_diff_shows_what_changed_as_indented_json() -> None:
    policy = policy_save(policy=Policy(name="strict", document=STRICT))
    policy.document = {**STRICT, "default": "deny"}
    policy.run_policy = {"approvals": {"timeout_s": 600}}
    policy_save(policy=policy)
    v1, v2 = PolicyVersion.objects.filter(policy=policy).order_by("number")
    lines = version_diff(v1, v2)
    assert lines[:2] == ["--- version 1", "+++ version 2"]
    assert '-    "default": "ask"' in lines and '+    "default": "deny"' in lines
    assert '-  "run_policy": null' in lines and '+      "timeout_s": 600' in lines


# --- presets ------------------------------------------------------------------------------------

PRESETS = ("Read-only review", "Accept edits", "Standard review", "Full access (audited)", "Sandboxed")


def test_migrate_leaves_the_presets_with_sandboxed_the_default() -> None:
    presets = {p.name: p for p in Policy.objects.filter(name__in=PRESETS)}
    assert set(presets) == set(PRESETS)
    assert [p.name for p in Policy.objects.filter(is_default=True)] == ["Sandboxed"]
    confirm = {"approvals": {"confirm": {"destructive": "second-reviewer"}}}  # issue 32.2: 0012_presets_confirm
    for preset in presets.values():
        versions = list(PolicyVersion.objects.filter(policy=preset).order_by("number"))
        assert (versions[0].number, versions[0].document, versions[0].version) == (1, preset.document, preset.version)
        assert versions[0].run_policy is None
        core.compile_policy(preset.document)
        if preset.name in ("Standard review", "Sandboxed"):
            # only friction: the other fields are still the humane built-in defaults (or the server's)
            assert preset.run_policy == confirm
            assert [(v.number, v.run_policy, v.version) for v in versions[1:]] == [(2, confirm, preset.version)]
        else:
            assert preset.run_policy is None and len(versions) == 1  # the humane built-in defaults (or the server's)
    run = run_create(driver="scripted", scenario=SCENARIO)
    assert run.policy == presets["Sandboxed"] and run.ran_under is not None
    assert run.run_policy["approvals"] == {
        "permission": "ask", "plan_review": "ask", "question": "ask", "timeout_s": 3600.0,
        "on_timeout": "continue", "on_reject": "continue", "max_retries": 3,
        "confirm": {"destructive": "second-reviewer"},
    }


def test_sandboxed_takes_over_only_an_untouched_standard_review_default() -> None:
    from django.apps import apps

    migration = importlib.import_module("approvals.migrations.0010_sandboxed_preset")
    # an administrator who chose their own default keeps it
    Policy.objects.filter(name="Sandboxed").delete()
    Policy.objects.filter(is_default=True).update(is_default=False)
    Policy.objects.filter(name="Accept edits").update(is_default=True)
    migration.create_sandboxed(apps, None)
    assert [p.name for p in Policy.objects.filter(is_default=True)] == ["Accept edits"]
    # an edited "Standard review" default is kept too
    Policy.objects.filter(name="Sandboxed").delete()
    Policy.objects.filter(is_default=True).update(is_default=False)
    Policy.objects.filter(name="Standard review").update(is_default=True, version="edited")
    migration.create_sandboxed(apps, None)
    assert [p.name for p in Policy.objects.filter(is_default=True)] == ["Standard review"]


# command or (tool, path) -> the decision of each preset, in PRESETS order, without a floor;
# the last column: Sandboxed inside the OS sandbox floor
PRESET_TABLE = [
    ("ls -la", ("allow", "allow", "allow", "allow", "allow", "allow")),
    ("git status", ("allow", "allow", "allow", "allow", "allow", "allow")),
    ("mkdir build", ("ask", "ask", "allow", "allow", "allow", "allow")),
    ("python -m pytest", ("ask", "ask", "ask", "allow", "ask", "allow")),
    ("git push origin main", ("ask", "ask", "ask", "allow", "ask", "ask")),
    ("rm -rf build", ("deny", "deny", "deny", "allow", "deny", "deny")),
    (("write", "src/app.py"), ("ask", "allow", "allow", "allow", "allow", "allow")),
    (("write", ".git/hooks/pre-commit"), ("deny", "deny", "deny", "deny", "deny", "deny")),
    (("read", "src/app.py"), ("allow", "allow", "allow", "allow", "allow", "allow")),
    (("read", "/usr/share/dict/words"), ("ask", "ask", "ask", "allow", "ask", "ask")),
    (("read", ".env"), ("ask", "ask", "ask", "ask", "ask", "ask")),
]


@pytest.mark.parametrize(("what", "expected"), PRESET_TABLE)
def test_each_preset_decides_as_described(what: Any, expected: tuple[str, ...], tmp_path: Path) -> None:
    from approvals.gate.paths import offline_path_context

    if isinstance(what, str):
        request = {"tool": "bash", "input": {"command": what}, "cwd": str(tmp_path)}
    else:
        request = {"tool": what[0], "input": {"file_path": what[1]}, "cwd": str(tmp_path)}
    got = tuple(
        core.evaluate(core.compile_policy(Policy.objects.get(name=name).document), request,
                      paths=offline_path_context(str(tmp_path)), run_view=core.RunView(floor=floor)).decision
        for name, floor in [(name, False) for name in PRESETS] + [("Sandboxed", True)]
    )
    assert got == expected


def test_the_migration_records_a_first_version_for_policies_that_existed() -> None:
    from django.apps import apps

    old = Policy.objects.create(name="before-versions", document=STRICT, version=core.policy_version(STRICT))
    run = run_create(driver="scripted", scenario=SCENARIO, policy_name="before-versions")
    assert run.ran_under is None  # no version existed when it started
    migration = importlib.import_module("approvals.migrations.0005_policy_presets")
    migration.record_existing_versions(apps, None)
    (version,) = PolicyVersion.objects.filter(policy=old)
    assert (version.number, version.document) == (1, STRICT)
    assert Run.objects.get(pk=run.pk).ran_under == version


# --- import and export --------------------------------------------------------------------------


def export(name: str, fmt: str = "json") -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("policy_export", name, "--format", fmt, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_json_export_import_export_is_byte_identical(tmp_path: Path) -> None:
    document = {"commands": {"allow": ["ls", "npm run test:*"], "deny": [{"match": "rm -rf", "reason": "Nöt hére."}]},
                "limits": {"max_tool_calls": 200}, "default": "ask"}
    policy_save(policy=Policy(name="team", description="The team's <policy>", document=document,
                              run_policy={"approvals": {"timeout_s": 1.5, "on_reject": "abort"}}))
    first, _ = export("team")
    body = json.loads(first)
    assert body["name"] == "team" and body["document"] == document and body["format"] == "gatehouse-policy"
    Policy.objects.filter(name="team").delete()

    (tmp_path / "team.json").write_text(first, encoding="utf-8")
    out = StringIO()
    call_command("policy_import", str(tmp_path / "team.json"), stdout=out)
    assert out.getvalue().startswith("team: version 1")
    second, _ = export("team")
    assert second.encode() == first.encode()
    (version,) = PolicyVersion.objects.filter(policy__name="team")
    assert version.comment == "Imported from team.json."


def test_importing_into_an_existing_policy_adds_a_version(tmp_path: Path) -> None:
    policy = policy_save(policy=Policy(name="strict", document=STRICT, run_policy={"approvals": {"timeout_s": 60}}))
    (tmp_path / "bare.json").write_text(json.dumps({"default": "deny"}))
    call_command("policy_import", str(tmp_path / "bare.json"), "--name", "strict", "--comment", "from the repo", stdout=StringIO())
    policy.refresh_from_db()
    assert policy.document == {"default": "deny"} and policy.run_policy == {"approvals": {"timeout_s": 60}}
    assert versions(policy) == [(1, ""), (2, "from the repo")]


def test_an_invalid_import_is_refused_listing_its_problems(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text(json.dumps({"name": "bad", "document": {"commands": {"deny": [""]}}}))
    with pytest.raises(CommandError) as refused:
        call_command("policy_import", str(tmp_path / "bad.json"), stdout=StringIO())
    assert refused.value.returncode == 2 and "commands.deny[0]" in str(refused.value)
    (tmp_path / "bare.json").write_text(json.dumps({"default": "ask"}))
    with pytest.raises(CommandError, match="--name"):
        call_command("policy_import", str(tmp_path / "bare.json"), stdout=StringIO())
    (tmp_path / "odd.json").write_text(json.dumps({"name": "x", "document": {}, "owner": "me"}))
    with pytest.raises(CommandError, match="owner"):
        call_command("policy_import", str(tmp_path / "odd.json"), stdout=StringIO())
    (tmp_path / "dup.json").write_text('{"name": "x", "name": "y", "document": {}}')
    with pytest.raises(CommandError, match="more than once"):
        call_command("policy_import", str(tmp_path / "dup.json"), stdout=StringIO())
    assert not Policy.objects.filter(name__in=["bad", "x", "y"]).exists()


def test_export_names_an_unknown_policy() -> None:
    with pytest.raises(CommandError, match="no policy named 'nope'"):
        export("nope")


@pytest.mark.parametrize("fmt", ["claude", "codex"])
def test_agent_exports_print_what_they_cannot_express_on_stderr(fmt: str) -> None:
    policy_save(policy=Policy(name="strict", document={**STRICT, "limits": {"max_tool_calls": 5}}))
    out, err = export("strict", fmt)
    result = core.export_policy(Policy.objects.get(name="strict").document, fmt)
    assert out.rstrip("\n") == result.text.rstrip("\n")
    assert all(item in err for item in result.unexpressed)
    assert result.unexpressed  # limits are Gatehouse's own
