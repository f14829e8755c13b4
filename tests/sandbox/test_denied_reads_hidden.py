"""A file the policy never lets the agent read (`reads` deny) is empty inside the floor, so
code the policy cannot read — run unasked where `in_floor.code` allows it, or approved by a
person — does not read it either (approvals/policy/floor_reads.py, drivers/runcontext.py).
The control turns the floor off and sees the same code read the secret (so the test can fail)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.models import Policy
from approvals.policy import CLASSES, compile_policy, denied_reads
from approvals.services import policy_save
from drivers import runfloor
from runs.models import Activity
from tests.flow import finished, start_run
from tests.sandbox.conftest import AUTO_APPROVE
from tests.sandbox.floorrun import requires_floor, run_in

SECRET = "sk-live-0123456789abcdef"
DOCUMENT = {"default": "allow", "classes": {name: "allow" for name in CLASSES},
            "reads": {"deny": [".env*"], "allow": ["**"]}, "in_floor": {"default": "allow", "code": "allow"}}
# code the policy cannot read, reading the secret by a name it computes, into a file of the workspace
LEAK = "python3 -c \"import sys; sys.stdout.write(open('.e' + 'nv').read())\" > leaked.txt"


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / ".env").write_text(f"API_KEY={SECRET}\n")
    (ws / "src" / ".env.local").write_text(f"OTHER={SECRET}\n")
    (ws / "src" / "app.py").write_text("print('app')\n")
    return ws


@requires_floor
def test_inside_the_floor_code_reads_an_empty_file_where_the_policy_denies_the_read(tmp_path: Path, settings: Any) -> None:
    settings.GATEHOUSE_SANDBOX_READ_PATHS = []
    ws = _workspace(tmp_path)
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    floor = runfloor.run_floor(workspace=ws, runtime_dir=runtime, run_policy={})
    assert floor is not None
    hidden, _ = denied_reads(compile_policy(DOCUMENT), str(ws))
    floor = floor.replace(hidden_files=(*floor.hidden_files, *hidden))
    done = run_in(floor, "cat .env src/.env.local; python3 -c \"print(open('.e'+'nv').read())\"; "
                         "cat src/app.py; rm -f .env; mv .env gone; echo written > .env; cat .env")
    assert SECRET not in done.stdout
    assert "print('app')" in done.stdout  # what is not denied is read as ever
    assert (ws / ".env").read_text() == f"API_KEY={SECRET}\n"  # nor removed, moved or overwritten


@requires_floor
@pytest.mark.django_db(transaction=True)
async def test_a_runs_code_cannot_read_what_the_policy_denies_and_the_timeline_says_so(
        api: Any, worker: Any, tmp_path: Path, settings: Any) -> None:
    ws = _workspace(tmp_path)
    await _policy()
    run = await start_run(api, {"steps": [{"tool": "bash", "input": {"command": LEAK}}, {"message": "done"}]},
                          policy="deny-secrets", workspace=str(ws), run_policy=AUTO_APPROVE)
    done = await finished(run["id"], timeout=120)
    assert done.status == "completed", (done.failure_reason, done.failure_detail)
    assert (ws / "leaked.txt").exists() and SECRET not in (ws / "leaked.txt").read_text()
    notices = await _notices(run["id"])
    assert any("2 file(s)" in text and ".env" in text and "src/.env.local" in text for text in notices), notices


@requires_floor
@pytest.mark.django_db(transaction=True)
async def test_without_the_floor_the_same_code_reads_the_secret(api: Any, worker: Any, tmp_path: Path, settings: Any) -> None:
    """The control: GATEHOUSE_SANDBOX=off, the same run; the policy cannot see the read."""
    settings.GATEHOUSE_SANDBOX = "off"
    ws = _workspace(tmp_path)
    await _policy()
    run = await start_run(api, {"steps": [{"tool": "bash", "input": {"command": LEAK}}, {"message": "done"}]},
                          policy="deny-secrets", workspace=str(ws), run_policy={**AUTO_APPROVE, "sandbox": "unrestricted"})
    done = await finished(run["id"], timeout=120)
    assert done.status == "completed", (done.failure_reason, done.failure_detail)
    assert SECRET in (ws / "leaked.txt").read_text()


async def _policy() -> None:
    await sync_to_async(policy_save)(policy=Policy(name="deny-secrets", document=DOCUMENT))


async def _notices(run_id: int) -> list[str]:
    rows = await sync_to_async(list)(Activity.objects.filter(run_id=run_id, event="notice").values_list("payload", flat=True))
    return [str(p.get("text", "")) for p in rows]
