"""A sandboxed run's way to the network (issue 28): its commands reach only what the run's
`network` section allows, through the run's egress proxy; an unlisted host becomes a
network approval in the inbox, and the connection waits for the person. Real bubblewrap,
real curl inside, a real worker."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from approvals.policy import CLASSES
from runs.models import Activity
from tests.flow import decide, finished, pending_approval, start_run
from tests.sandbox.targets import HttpTarget

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("floor_available")]

# curl inside the floor, through the proxy for every host (the floor's NO_PROXY keeps the
# sandbox's own loopback direct: `--noproxy ''` sends even `localhost` to the proxy)
CURL = "curl -s -i --noproxy '' --max-time 60"
PUBLIC = "203.0.113.99"  # documentation range: judged below as the names mapped to it are


@pytest.fixture
def target() -> Any:
    server = HttpTarget().start()
    yield server
    server.stop()


@pytest.fixture
def networked(db: Any, target: HttpTarget, settings: Any) -> str:
    """Everything allowed but the network: localhost's target port listed by name, one host
    refused, the rest asked. `ask.test` resolves (for the proxy) to a public address."""
    from approvals.models import Policy
    from approvals.services import policy_save

    settings.GATEHOUSE_EGRESS_HOSTS = {"ask.test": ["1.1.1.1"], "blocked.test": ["1.1.1.1"]}
    document = {"default": "allow", "classes": {name: "allow" for name in CLASSES},
                "network": {"allow": [f"localhost:{target.port}"], "deny": ["blocked.test"], "default": "ask"}}
    policy_save(policy=Policy(name="networked", document=document))
    return "networked"


def workspace_file(run: Any, name: str) -> str:
    from pathlib import Path

    path = Path(run.workspace) / name
    return path.read_text(errors="replace") if path.exists() else ""


async def test_allowed_refused_and_asked_connections(api: Any, worker: Any, networked: str, target: HttpTarget) -> None:
    scenario = {"steps": [
        {"tool": "bash", "input": {"command": f"{CURL} http://localhost:{target.port}/allowed > allowed.txt"}},
        {"tool": "bash", "input": {"command": f"{CURL} http://127.0.0.1:{target.port}/loopback > loopback.txt"}},
        {"tool": "bash", "input": {"command": f"{CURL} http://blocked.test/x > blocked.txt"}},
        {"tool": "bash", "input": {"command": f"{CURL} http://ask.test/first > asked.txt"}},
        {"tool": "bash", "input": {"command": f"{CURL} http://ask.test/again > asked-again.txt"}},
        {"message": "done"},
    ]}
    run = await start_run(api, scenario, policy=networked, run_policy={"approvals": {"timeout_s": 120}})
    approval = await pending_approval(api, run["id"], timeout=60)
    assert (approval["kind"], approval["subtype"]) == ("permission", "network")
    assert approval["request"]["tool"] == "network"
    assert approval["request"]["input"]["host"] == "ask.test" and approval["request"]["input"]["port"] == 80
    assert approval["presentation"]["title"] == "Connect to ask.test:80"
    assert approval["suggested_grant"] == {"tool": "network", "match": "ask.test"}
    await decide(api, approval, "deny", reason="no unknown hosts today")
    done = await finished(run["id"], timeout=120)
    assert done.status == "completed", (done.failure_reason, done.failure_detail)

    # listed: reached, through the proxy (the target saw it)
    assert '"path": "/allowed"' in workspace_file(done, "allowed.txt")
    assert [r["path"] for r in target.requests] == ["/allowed"]
    # the host's loopback by another name, and a denied host: refused with the reason, nothing asked
    assert "403" in workspace_file(done, "loopback.txt") and "loopback" in workspace_file(done, "loopback.txt")
    assert "403" in workspace_file(done, "blocked.txt") and "network.deny[0]" in workspace_file(done, "blocked.txt")
    # asked: the person's reason reaches the command, and a retry is refused without asking again
    assert "403" in workspace_file(done, "asked.txt") and "no unknown hosts today" in workspace_file(done, "asked.txt")
    assert "403" in workspace_file(done, "asked-again.txt")
    approvals = (await sync_to_async(api.get)(f"/api/v1/approvals/?run={run['id']}")).json()["results"]
    assert [a["request"]["tool"] for a in approvals] == ["network"]
    refused = await sync_to_async(lambda: [a.payload for a in Activity.objects.filter(run_id=run["id"], event="notice")
                                           if a.payload.get("warning") == "network_refused"])()
    assert {(p["host"], p["port"]) for p in refused} == {("127.0.0.1", target.port), ("blocked.test", 80)}


async def test_always_allow_this_host_reaches_the_rest_of_the_session(api: Any, worker: Any, networked: str) -> None:
    first = await start_run(api, {"steps": [{"tool": "bash", "input": {"command": f"{CURL} http://ask.test/ > one.txt"}},
                                            {"message": "done"}]}, policy=networked)
    approval = await pending_approval(api, first["id"], timeout=60)
    response = await decide(api, approval, "approve", scope="session")
    assert response.status_code == 200, response.content
    done = await finished(first["id"], timeout=120)
    assert done.status == "completed"
    # approved: the proxy tried the host (which cannot be reached from here), never refused it
    assert "X-Gatehouse-Refused" not in workspace_file(done, "one.txt") or "cannot connect" in workspace_file(done, "one.txt")
    assert "no unknown" not in workspace_file(done, "one.txt")
    # the session's next run connects without asking anyone
    second = await start_run(api, {"steps": [{"tool": "bash", "input": {"command": f"{CURL} http://ask.test/ > two.txt"}},
                                             {"message": "done"}]}, policy=networked, session=first["session"])
    done = await finished(second["id"], timeout=120)
    assert done.status == "completed"
    approvals = (await sync_to_async(api.get)(f"/api/v1/approvals/?run={second['id']}")).json()["results"]
    assert approvals == []
    steps = await sync_to_async(lambda: list(done.steps.values_list("tool", "decided_by")))()
    assert ("network", "grant") in steps


async def test_the_inbox_card_says_which_host_and_port(api: Any, worker: Any, networked: str) -> None:
    from django.test import Client

    from tests.flow import decide as decide_it

    run = await start_run(api, {"steps": [{"tool": "bash", "input": {"command": f"{CURL} http://ask.test:8080/ > x.txt"}},
                                          {"message": "done"}]}, policy=networked)
    approval = await pending_approval(api, run["id"], timeout=60)

    def page() -> str:
        from django.contrib.auth import get_user_model

        client = Client()
        client.force_login(get_user_model().objects.get(username="alice"))
        return client.get("/").content.decode()

    html = await sync_to_async(page)()
    # asked by its name: nothing was looked up in DNS before the person decides
    assert "Connect to <code>ask.test:8080</code> <span class=\"muted\">(not looked up before you decide)</span>" in html
    assert "Always allow ask.test in this session" in html
    await decide_it(api, approval, "deny")
    await finished(run["id"], timeout=60)
