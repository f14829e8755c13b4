"""`manage.py serve`: the embedded default in one process.

Daphne serves HTTP and WebSocket, and the driver worker listens on the `drivers` channel in
the same event loop (so the in-memory channel layer reaches it). On first start it creates
a local admin account (no password: it signs in through a one-time link) and two demo runs.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from channels.layers import get_channel_layer
from daphne.server import Server
from django.core.management.base import BaseCommand
from django.db import transaction
from twisted.internet import defer, reactor

from approvals.models import Policy
from approvals.services import policy_save
from drivers import runfloor
from drivers.worker import DriverWorker, supervisor
from project.asgi import application
from project.login_links import make_login_link
from runs.management.commands.ensure_admin import ensure_admin
from runs.models import Run
from runs.services import run_create


class _DemoRun(TypedDict):
    prompt: str
    scenario: dict[str, Any]


DEMO_RUNS: list[_DemoRun] = [
    {
        "prompt": "Demo: say hello from the shell",
        "scenario": {
            "steps": [
                {"message": "I will greet you from the shell."},
                {"tool": "bash", "input": {"command": "echo 'hello from Gatehouse' > hello.txt && cat hello.txt"}},
                {"message": "Done: hello.txt is in the workspace."},
            ]
        },
    },
    {
        "prompt": "Demo: write release notes",
        "scenario": {
            "steps": [
                {"tool": "bash", "input": {"command": "ls -la"}},
                {"tool": "write", "input": {"file_path": "NOTES.md", "content": "# Release notes\n\n- First release.\n"}},
                {"message": "NOTES.md is written."},
            ]
        },
    },
]
# A tour needs time to read: the demo runs wait for a person up to an hour.
DEMO_RUN_POLICY = {"approvals": {"timeout_s": 3600, "on_reject": "abort"}}
# The demo's rule policy (editable in the admin): reads run, every change asks a person.
DEMO_POLICY = {
    "commands": {
        "allow": ["ls", "cat", "git status", "git diff"],
        "deny": [{"match": "rm -rf", "reason": "Deleting trees is not part of the demo."}],
    },
    "edits": {"deny": [".env*"], "default": "ask"},
    "classes": {"read-only": "allow", "local-mutation": "ask", "remote-mutation": "ask", "destructive": "deny"},
    "default": "ask",
}


class Command(BaseCommand):
    help = "Serve the console (Daphne) and run the driver worker in one process."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true", help="Do not create the demo runs on first start.")

    def handle(self, *args: Any, **options: Any) -> None:
        state, floor_line = runfloor.status()
        self.stdout.write(floor_line)
        user, created = self._admin()
        if created and not options["no_demo"] and state != "unavailable":
            self._demo_runs(user)
        base = f"http://{options['host']}:{options['port']}"
        self.stdout.write(f"Gatehouse console: {base}/")
        self.stdout.write(f"Login link: {base}{make_login_link(user)}")
        self.stdout.write("(the link works once and expires; run `manage.py login_link` for a new one)")
        self.stdout.flush()

        worker = DriverWorker(application=application, channels=["drivers"], channel_layer=get_channel_layer())

        def start_worker() -> None:
            loop = asyncio.get_event_loop()
            loop.call_soon(lambda: loop.create_task(worker.arun()))

        def stop_runs() -> Any:
            # SIGTERM/SIGINT: stop the agents (resumable) and free their runs before exiting;
            # an agent process never outlives the server (see drivers/processes.py).
            return defer.Deferred.fromFuture(asyncio.ensure_future(supervisor().shutdown()))

        reactor.addSystemEventTrigger("before", "shutdown", stop_runs)  # type: ignore[arg-type, attr-defined, unused-ignore]

        Server(
            application=application,
            endpoints=[f"tcp:port={options['port']}:interface={options['host']}"],
            ready_callable=start_worker,
            verbosity=0,
        ).run()

    def _admin(self) -> tuple[Any, bool]:
        return ensure_admin()

    def _demo_runs(self, user: Any) -> None:
        if Run.objects.exists():
            return
        with transaction.atomic():
            if not Policy.objects.filter(name="demo").exists():
                policy_save(policy=Policy(name="demo", description="Reads run; every change asks a person.", document=DEMO_POLICY))
            for demo in DEMO_RUNS:
                run_create(
                    driver="scripted", prompt=demo["prompt"], scenario=demo["scenario"],
                    run_policy=DEMO_RUN_POLICY, policy_name="demo", user=user,
                )
