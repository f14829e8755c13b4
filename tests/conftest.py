"""Shared fixtures: users, API clients, and a driver worker running in the test's loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from infra import broadcast
from tests.processes import TEST_READ_PATHS

# No timing decides a test: Hypothesis's per-example deadline failed the option-respelling
# property on a loaded machine (250 ms for an example that takes 0.3 ms). It still stops
# at its example budget.
hypothesis_settings.register_profile("gatehouse", deadline=None)
hypothesis_settings.load_profile("gatehouse")


@pytest.fixture(autouse=True)
def _isolated_var(settings: Any, tmp_path: Any) -> None:
    """Each test gets its own workspaces and runtime dirs, and a fast wait loop."""
    settings.GATEHOUSE_WORKSPACES_DIR = tmp_path / "workspaces"
    settings.GATEHOUSE_RUNTIME_DIR = tmp_path / "runtime"
    # The test's own directory is shown read-only inside the floor (its workspace and agent
    # home writable, as always): fake CLIs and MCP servers are written there. The escape
    # suite (tests/sandbox/) shows nothing extra.
    settings.GATEHOUSE_SANDBOX_READ_PATHS = [*TEST_READ_PATHS, str(tmp_path)]
    settings.GATEHOUSE_WAIT_POLL_S = 0.2
    settings.GATEHOUSE_RECONCILE_S = 0.5
    settings.GATEHOUSE_LEASE_HEARTBEAT_S = 0.5


_DB_FIXTURES = ("db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server")


@pytest.fixture(autouse=True)
def _fresh_install(request: pytest.FixtureRequest) -> None:
    """A database test starts from what `migrate` leaves on an empty database: the policy
    presets, "Sandboxed" the default. A transactional test's flush removes the rows
    the data migration made, so they are made again (idempotent) for every test after it."""
    if request.node.get_closest_marker("django_db") is not None:
        request.getfixturevalue("_django_db_helper")
    else:
        used = [name for name in _DB_FIXTURES if name in request.fixturenames]
        if not used:
            return
        request.getfixturevalue(used[0])
    import importlib

    from django.apps import apps

    importlib.import_module("approvals.migrations.0005_policy_presets").create_presets(apps, None)
    importlib.import_module("approvals.migrations.0010_sandboxed_preset").create_sandboxed(apps, None)
    importlib.import_module("approvals.migrations.0012_presets_confirm").add_confirm(apps, None)
    from approvals.gate.shadow import clear_cache

    clear_cache()  # a rolled-back test's PolicyVersion ids are handed out again


@pytest.fixture
def standard_review_default(_fresh_install: None) -> None:
    """"Standard review" the default policy, as before the sandbox floor: for tests of the
    approval lifecycle that need ordinary local commands (`npm run build`, `touch x`) to be
    asked — which the default of a fresh install, "Sandboxed", runs unasked inside the
    floor (tests/approvals/policy/test_sandboxed_preset.py is about that default)."""
    from approvals.models import Policy

    Policy.objects.filter(is_default=True).update(is_default=False)
    assert Policy.objects.filter(name="Standard review").update(is_default=True) == 1


@pytest.fixture(autouse=True)
def _fresh_channel_layer() -> Any:
    """The in-memory layer binds its queues to one event loop: give each test a new one."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture
def make_user(db: Any) -> Callable[..., Any]:
    def make(username: str = "reviewer", *, superuser: bool = True, perms: tuple[str, ...] = ()) -> Any:
        from django.contrib.auth.models import Permission

        User = get_user_model()
        user = User.objects.create_user(username=username, password=None, is_superuser=superuser, is_staff=superuser)
        for perm in perms:
            app_label, codename = perm.split(".")
            user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
        return user

    return make


@pytest.fixture
def reviewer(make_user: Callable[..., Any]) -> Any:
    return make_user("alice")


@pytest.fixture
def api(reviewer: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(reviewer)
    return client


@pytest.fixture
async def worker() -> Any:
    """The real driver worker (DriverWorker on the `drivers` channel) in this test's loop."""
    from channels.layers import get_channel_layer

    from drivers import worker as worker_module
    from project.asgi import application

    worker_module._supervisor = None
    instance = worker_module.DriverWorker(application=application, channels=["drivers"], channel_layer=get_channel_layer())
    task = asyncio.create_task(instance.arun())
    yield worker_module.supervisor()
    sup = worker_module.supervisor()
    for run_task in list(sup.tasks.values()):
        run_task.cancel()
    if sup._background:
        sup._background.cancel()
    task.cancel()
    await asyncio.gather(task, *sup.tasks.values(), *( [sup._background] if sup._background else []), return_exceptions=True)
    # A doorbell handled during the teardown may have started one more run (or a handler):
    # stop whatever the worker left on this loop, so the loop closes (seen on Redis).
    for _ in range(5):
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
        if not left:
            break
        for leftover in left:
            leftover.cancel()
        await asyncio.wait(left, timeout=5)
    worker_module._supervisor = None


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: Any, django_db_blocker: Any) -> Any:
    """On PostgreSQL, end connections left open by worker threads before the test
    database is dropped (otherwise the drop fails with "being accessed by other users")."""
    yield
    with django_db_blocker.unblock():
        from django.db import connection

        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


@pytest.fixture
def floor_available() -> None:
    """The sandbox floor can be built here (else skipped; GATEHOUSE_REQUIRE_SANDBOX=1 fails)."""
    from tests.sandbox.floorrun import require_floor

    require_floor()


@pytest.fixture
def clock() -> Any:
    """The deadline clock, to move forward instead of sleeping (reset after the test)."""
    from infra import clock as deadline_clock

    deadline_clock.reset()
    yield deadline_clock
    deadline_clock.reset()


@pytest.fixture
def console_fragments(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The console fragments scheduled after commit: (fragment, approval id)."""
    seen: list[tuple[str, int]] = []
    real = broadcast.fragment_on_commit

    def recorded(groups: list[str], fragment: str, **args: Any) -> None:
        seen.append((fragment, int(args.get("approval_id", 0))))
        real(groups, fragment, **args)

    monkeypatch.setattr(broadcast, "fragment_on_commit", recorded)
    return seen
