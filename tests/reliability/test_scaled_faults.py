"""Faults in the scaled shape (PostgreSQL + Redis, 2 web processes, 2 workers, real processes).

Nothing is lost, nothing runs twice, no denied command runs, no run is stuck: through a
worker SIGKILLed with 50 runs waiting, a web process SIGKILLed mid-decision, Redis down for
10 s, 50 concurrent decisions on one approval across both web processes, and decisions
racing their deadline. Skipped on SQLite: the scaled shape is PostgreSQL's (CI runs these
in its PostgreSQL + Redis pass).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from approvals.models import Approval, Policy
from runs.models import Activity, Run, Step
from tests.reliability.cluster import Cluster

pytestmark = [pytest.mark.django_db(transaction=True)]

ASK_TOUCH = {"commands": {"ask": ["touch"]}, "default": "allow"}


@pytest.fixture
def cluster(tmp_path: Path, db: Any) -> Iterator[Cluster]:
    if connection.vendor != "postgresql":
        pytest.skip("the scaled shape runs on PostgreSQL (CI's PostgreSQL + Redis pass runs this)")
    Policy.objects.get_or_create(name="ask-touch", defaults={"document": ASK_TOUCH})
    scaled = Cluster(tmp_path)
    scaled.start()
    try:
        yield scaled
    finally:
        scaled.stop()


def start_runs(cluster: Cluster, tmp_path: Path, count: int, **run_policy: Any) -> list[dict[str, Any]]:
    runs = []
    for i in range(count):
        workspace = tmp_path / f"ws-{i}"
        workspace.mkdir()
        scenario = {"steps": [
            {"tool": "bash", "input": {"command": "echo x >> log.txt"}},   # allowed: runs before the fault
            {"tool": "bash", "input": {"command": "touch decided.txt"}},   # asked: decided during the fault
            {"message": "done"},
        ]}
        status, run = cluster.call("POST", "/api/v1/runs/", {
            "driver": "scripted", "prompt": f"run {i}", "scenario": scenario, "workspace": str(workspace),
            "policy": "ask-touch", "run_policy": {"approvals": {"timeout_s": 600, "on_reject": "continue", **run_policy}},
        }, web=i % 2)
        assert status == 201, run
        runs.append(run)
    return runs


def all_waiting(cluster: Cluster, runs: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    ids = [r["id"] for r in runs]

    def check() -> dict[int, dict[str, Any]] | None:
        pending = {a.run_id: {"id": a.pk, "hash": a.hash} for a in Approval.objects.filter(run_id__in=ids, status="pending")}
        return pending if len(pending) == len(ids) else None

    return cluster.wait(check, what=f"{len(ids)} runs waiting")


def all_finished(cluster: Cluster, runs: list[dict[str, Any]], timeout: float = 120) -> dict[int, Run]:
    ids = [r["id"] for r in runs]

    def check() -> dict[int, Run] | None:
        done = {r.pk: r for r in Run.objects.filter(pk__in=ids, status__in=Run.FINISHED)}
        return done if len(done) == len(ids) else None

    try:
        return cluster.wait(check, timeout=timeout, what=f"{len(ids)} runs finished")
    except AssertionError as failure:
        stuck = Run.objects.filter(pk__in=ids).exclude(status__in=Run.FINISHED)
        states = [(r.pk, r.status, r.owner, list(Activity.objects.filter(run=r).values_list("event", flat=True))[-4:],
                   list(Step.objects.filter(run=r).values_list("status", flat=True))) for r in stuck[:5]]
        raise AssertionError(f"{failure}\nstuck: {stuck.count()} e.g. {states}") from None


def assert_each_decision_applied_once(runs: list[dict[str, Any]], approved: set[int]) -> None:
    for run in runs:
        workspace = Path(run["workspace"])
        assert (workspace / "log.txt").read_text() == "x\n", f"run {run['id']}: a finished step ran again"
        assert (workspace / "decided.txt").exists() == (run["id"] in approved), f"run {run['id']}: decision not applied as made"
        assert Approval.objects.filter(run_id=run["id"]).count() == 1, f"run {run['id']}: asked twice"
        resolved = Activity.objects.filter(run_id=run["id"], event="approval.resolved").count()
        assert resolved == 1, f"run {run['id']}: {resolved} resolutions"
        second = Step.objects.get(run_id=run["id"], seq=2)
        assert second.status == ("finished" if run["id"] in approved else "denied")


def test_a_worker_killed_with_fifty_runs_waiting_loses_nothing(cluster: Cluster, tmp_path: Path) -> None:
    runs = start_runs(cluster, tmp_path, 50)
    pending = all_waiting(cluster, runs)
    owners = set(Run.objects.filter(pk__in=[r["id"] for r in runs]).values_list("owner", flat=True))
    assert len(owners) == 2, f"the runs should be spread across both workers: {owners}"
    cluster.kill("worker-1")
    approved = set()
    for i, run in enumerate(runs):  # decided while worker-1 is dead, through both web processes
        approval = pending[run["id"]]
        verb = "approve" if i % 2 == 0 else "deny"
        status, body = cluster.call("POST", f"/api/v1/approvals/{approval['id']}/{verb}/", {"hash": approval["hash"]}, web=i % 2)
        assert status == 200, body
        if verb == "approve":
            approved.add(run["id"])
    finished = all_finished(cluster, runs)
    assert {r.status for r in finished.values()} == {"completed"}
    assert_each_decision_applied_once(runs, approved)
    assert {r.owner for r in finished.values()} == {""}  # every lease released at the end


def test_a_web_process_killed_mid_decision_leaves_each_decision_whole_or_absent(cluster: Cluster, tmp_path: Path) -> None:
    runs = start_runs(cluster, tmp_path, 30)
    pending = all_waiting(cluster, runs)
    answers: dict[int, int] = {}

    def approve(run_id: int) -> None:
        approval = pending[run_id]
        try:
            status, _ = cluster.call("POST", f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, timeout=10)
        except OSError:
            status = 0  # the connection died with the process
        answers[run_id] = status

    threads = [threading.Thread(target=approve, args=(r["id"],)) for r in runs]
    for thread in threads:
        thread.start()
        time.sleep(0.01)
        if thread is threads[10]:
            cluster.kill("web-1")  # mid-stream: some decisions done, some in flight, some never sent
    for thread in threads:
        thread.join(timeout=30)
    for run in runs:
        approval = Approval.objects.get(pk=pending[run["id"]]["id"])
        resolved = Activity.objects.filter(run_id=run["id"], event="approval.resolved").count()
        # Whole or absent: a resolved approval has its activity; a pending one has none.
        assert (approval.status, resolved) in (("approved", 1), ("pending", 0)), (run["id"], approval.status, resolved)
        if answers.get(run["id"]) == 200:
            assert approval.status == "approved"
    # The survivor takes the rest; every run then finishes, each command once.
    for run in runs:
        approval = Approval.objects.get(pk=pending[run["id"]]["id"])
        if approval.status == "pending":
            status, body = cluster.call("POST", f"/api/v1/approvals/{approval.pk}/approve/", {"hash": approval.hash}, web=1)
            assert status == 200, body
    finished = all_finished(cluster, runs)
    assert {r.status for r in finished.values()} == {"completed"}
    assert_each_decision_applied_once(runs, {r["id"] for r in runs})


def test_redis_down_for_ten_seconds_decisions_still_reach_the_agents(cluster: Cluster, tmp_path: Path) -> None:
    runs = start_runs(cluster, tmp_path, 10)
    pending = all_waiting(cluster, runs)
    cluster.redis.kill()
    down_at = time.monotonic()
    status, health = cluster.call("GET", "/healthz", web=1)
    assert (status, health["channel_layer"]) == (200, "down")
    for i, run in enumerate(runs):
        approval = pending[run["id"]]
        status, body = cluster.call("POST", f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, web=i % 2)
        assert status == 200, body
    finished = all_finished(cluster, runs, timeout=60)  # the database is the mailbox
    assert {r.status for r in finished.values()} == {"completed"}
    assert_each_decision_applied_once(runs, {r["id"] for r in runs})
    time.sleep(max(0.0, 10 - (time.monotonic() - down_at)))
    cluster.redis.start()  # back on the same port: no process is restarted
    cluster.wait(lambda: cluster.call("GET", "/healthz")[1]["channel_layer"] == "ok", timeout=30, what="the layer back")
    (tmp_path / "later").mkdir()
    later = start_runs(cluster, tmp_path / "later", 1)
    again = all_waiting(cluster, later)
    status, _ = cluster.call("POST", f"/api/v1/approvals/{again[later[0]['id']]['id']}/approve/", {"hash": again[later[0]['id']]['hash']})
    assert status == 200
    assert all_finished(cluster, later, timeout=30)[later[0]["id"]].status == "completed"


def test_fifty_concurrent_decisions_on_one_approval_have_one_winner(cluster: Cluster, tmp_path: Path) -> None:
    runs = start_runs(cluster, tmp_path, 1)
    approval = all_waiting(cluster, runs)[runs[0]["id"]]
    results: list[tuple[int, Any]] = []
    lock = threading.Lock()
    barrier = threading.Barrier(50)

    def decide(i: int) -> None:
        barrier.wait()
        verb = "approve" if i % 2 == 0 else "deny"
        outcome = cluster.call("POST", f"/api/v1/approvals/{approval['id']}/{verb}/", {"hash": approval["hash"]}, web=i % 2)
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=decide, args=(i,)) for i in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    statuses = sorted(status for status, _ in results)
    assert statuses.count(200) == 1 and statuses.count(409) == 49, statuses
    assert {body["code"] for status, body in results if status == 409} == {"already_resolved"}
    row = Approval.objects.get(pk=approval["id"])
    finished = all_finished(cluster, runs)[runs[0]["id"]]
    assert finished.status == "completed"
    assert_each_decision_applied_once(runs, {runs[0]["id"]} if row.status == "approved" else set())


def test_a_decision_racing_its_deadline_either_wins_or_the_timeout_does(cluster: Cluster, tmp_path: Path) -> None:
    runs = start_runs(cluster, tmp_path, 8, timeout_s=3, on_timeout="abort")
    pending = all_waiting(cluster, runs)
    outcomes: dict[int, int] = {}
    for i, run in enumerate(runs):
        approval = Approval.objects.get(pk=pending[run["id"]]["id"])
        assert approval.deadline is not None
        from django.utils import timezone

        # Aim around the deadline: from 150 ms before to 150 ms after it.
        target = (approval.deadline - timezone.now()).total_seconds() + (i - 4) * 0.04
        time.sleep(max(0.0, target))
        outcomes[run["id"]], _ = cluster.call("POST", f"/api/v1/approvals/{approval.pk}/approve/", {"hash": approval.hash}, web=i % 2)
    finished = all_finished(cluster, runs)
    for run in runs:
        approval = Approval.objects.get(pk=pending[run["id"]]["id"])
        done = finished[run["id"]]
        if outcomes[run["id"]] == 200:
            assert approval.status == "approved" and done.status == "completed", (run["id"], approval.status, done.status)
            assert (Path(run["workspace"]) / "decided.txt").exists()
        else:
            assert outcomes[run["id"]] == 410, outcomes[run["id"]]
            assert approval.status == "expired" and (done.status, done.failure_reason) == ("failed", "approval_timeout")
            assert not (Path(run["workspace"]) / "decided.txt").exists()
