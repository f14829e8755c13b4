"""The same worker code in both deployment shapes: inside the embedded `serve` process,
and as `manage.py runworker drivers` beside the web process over channels-redis."""

from __future__ import annotations

import json
import os
import urllib.request
import uuid
from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from runs.models import Run
from tests.flow import eventually
from tests.processes import child_env, database_url_of_test_db, free_port, manage, redis_reachable

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("standard_review_default")]

# asked under the default policy: an awk program that writes a file
ECHO = {"steps": [{"tool": "bash", "input": {"command": """awk 'BEGIN { print "scaled" > "out.txt" }'"""}}]}


@pytest.fixture
def redis_layer(settings: Any) -> str:
    if not redis_reachable():
        if os.environ.get("GATEHOUSE_REQUIRE_SERVICES") == "1":
            pytest.fail("Redis is not reachable on 127.0.0.1:6379")
        pytest.skip("Redis is not reachable on 127.0.0.1:6379")
    prefix = f"gh-test-{uuid.uuid4().hex[:8]}"
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [{"address": "redis://127.0.0.1:6379/0", "socket_timeout": 30}], "prefix": prefix},
        }
    }
    return prefix


def blocking_receive_ran_out(client_name: str) -> bool:
    """One of the named client's connections is blocked in a receive (BZPOPMIN, 5 s) that
    began at least 5 s after the connection opened: a blocking receive on it ran out and the
    client went on listening on the same connection. (CLIENT LIST's `age` and `idle` are whole
    seconds: age - idle >= 6 is at least 5 s.)"""
    import redis

    with redis.Redis(host="127.0.0.1", port=6379) as client:
        mine = [c for c in client.client_list() if c.get("name") == client_name]
    return any(c["cmd"] == "bzpopmin" and int(c["age"]) - int(c["idle"]) >= 6 for c in mine)


async def test_runworker_process_runs_a_run_over_redis(api: Any, redis_layer: str, tmp_path: Path) -> None:
    name = f"{redis_layer}-worker"  # its connections, in Redis's CLIENT LIST
    worker = manage(
        ["runworker", "drivers"],
        child_env(
            DATABASE_URL=database_url_of_test_db(),
            REDIS_URL=f"redis://127.0.0.1:6379/0?client_name={name}",
            GATEHOUSE_CHANNEL_PREFIX=redis_layer,
            GATEHOUSE_VAR_DIR=tmp_path / "worker-var",
        ),
    )
    try:
        # Idle longer than a blocking receive (5 s): the worker must still be listening.
        worker.wait_for_line("", timeout=30)

        def ran_out_and_listens() -> bool:
            assert worker.proc.poll() is None, worker.lines[-20:]
            return blocking_receive_ran_out(name)

        await eventually(ran_out_and_listens, timeout=60, interval=0.2)
        assert worker.proc.poll() is None, worker.lines[-20:]
        response = await sync_to_async(api.post)(
            "/api/v1/runs/", {"driver": "scripted", "scenario": ECHO, "workspace": str(tmp_path)}, format="json"
        )
        assert response.status_code == HTTPStatus.CREATED
        run_id = response.json()["id"]

        def pending() -> Any:
            results = api.get(f"/api/v1/approvals/?status=pending&run={run_id}").json()["results"]
            return results[0] if results else None

        approval = await eventually(pending, timeout=60)
        await sync_to_async(api.post)(f"/api/v1/approvals/{approval['id']}/approve/", {"hash": approval["hash"]}, format="json")
        done = await eventually(lambda: Run.objects.filter(pk=run_id, status__in=["completed", "failed"]).first(), timeout=60)
        assert done.status == "completed", (done.failure_reason, worker.lines[-20:])
        assert (tmp_path / "out.txt").read_text() == "scaled\n"
        assert done.owner == ""  # the lease is released at the end
    finally:
        worker.stop()


def test_serve_runs_http_and_the_worker_in_one_process(tmp_path: Path) -> None:
    """`make run`'s process: migrate, serve, demo runs wait on approvals, a decision over
    HTTP (token auth) completes one of them — all in the one `serve` process."""
    env = child_env(GATEHOUSE_VAR_DIR=tmp_path / "var")
    migrate = manage(["migrate", "--noinput"], env)
    assert migrate.proc.wait(timeout=120) == 0, migrate.lines
    port = free_port()
    server = manage(["serve", "--host", "127.0.0.1", "--port", str(port)], env)
    try:
        link = server.wait_for_line("Login link: ").split(": ", 1)[1]
        assert link.startswith(f"http://127.0.0.1:{port}/")
        token_cmd = manage(["create_api_token", "admin"], env)
        assert token_cmd.proc.wait(timeout=60) == 0
        token = token_cmd.lines[-1].strip()

        def call(method: str, path: str, body: Any = None) -> Any:
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}{path}",
                method=method,
                data=json.dumps(body).encode() if body is not None else None,
                headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read())

        import time

        deadline = time.monotonic() + 60
        pending: list[Any] = []
        while time.monotonic() < deadline and len(pending) < 2:
            try:
                pending = call("GET", "/api/v1/approvals/?status=pending")["results"]
            except OSError:
                pass
            time.sleep(0.2)
        assert len(pending) == 2, server.lines[-30:]
        command = next(a for a in pending if a["subtype"] == "command")
        call("POST", f"/api/v1/approvals/{command['id']}/approve/", {"hash": command["hash"]})
        while time.monotonic() < deadline:
            run = call("GET", f"/api/v1/runs/{command['run']}/")
            if run["status"] in ("completed", "failed"):
                break
            time.sleep(0.2)
        assert run["status"] == "completed", run
        assert "hello from Gatehouse" in (Path(run["workspace"]) / "hello.txt").read_text()
    finally:
        server.stop()
