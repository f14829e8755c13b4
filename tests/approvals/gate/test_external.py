"""The gate consults the rule policy's external decision point (issue 30.9): a real HTTP
server in the shape of OPA's data API and a real command, both started by the tests."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from approvals import policy as core
from approvals.gate.request import gate_request
from approvals.models import Approval
from approvals.policy_replay import policy_dry_run
from runs.models import Activity, Run, Step
from runs.services import run_create

pytestmark = pytest.mark.django_db

CLASSES = {"read-only": "allow", "local-mutation": "allow", "outside-workspace": "ask", "remote-mutation": "ask",
           "destructive": "deny", "protected": "ask"}
READ = "ls"  # allowed by the policy (read-only)
PUSH = "git push origin main"  # asked (remote mutation)
DESTROY = "rm -rf src"  # denied (destructive)


# --- The decision points ------------------------------------------------------------------------


@pytest.fixture
def opa() -> Iterator[SimpleNamespace]:
    """An HTTP decision point on 127.0.0.1 answering as `state.mode` says: a decision, or
    slow, garbage, error (HTTP 500), undefined (`{}`, OPA's answer for an undefined rule)."""
    received: list[dict[str, Any]] = []
    state = SimpleNamespace(mode="allow", release=threading.Event())

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            received.append({"path": self.path, "body": body, "authorization": self.headers.get("Authorization")})
            mode = state.mode
            if mode == "slow":
                state.release.wait(30)  # answers only when the test is over
            if mode == "error":
                self.send_error(500)
                return
            if mode == "redirect":
                self.send_response(307)
                self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            payload = {"garbage": b"<html>yes</html>", "undefined": b"{}"}.get(mode) or json.dumps(
                {"result": {"decision": "allow" if mode == "slow" else mode, "reason": f"OPA says {mode}"}}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    yield SimpleNamespace(url=f"http://127.0.0.1:{port}/v1/data/gatehouse/decision", port=port, state=state,
                          received=received)
    state.release.set()
    server.shutdown()
    server.server_close()


DECIDE = """\
import json, os, subprocess, sys, time
mode, dump = sys.argv[1], sys.argv[2]
given = json.loads(sys.stdin.read())
record = {"stdin": given, "env": dict(os.environ), "pid": os.getpid()}
if mode == "slow":
    record["child"] = subprocess.Popen(["sleep", "30"]).pid
with open(dump, "w") as f:
    json.dump(record, f)
if mode == "slow":
    time.sleep(30)
elif mode == "garbage":
    print("yes please")
elif mode == "fail":
    sys.exit(3)
elif mode == "huge":
    sys.stdout.write("x" * 200000)
else:
    print(json.dumps({"result": {"decision": mode, "reason": "the script says " + mode}}))
"""


@pytest.fixture
def decide(tmp_path: Path) -> Callable[[str], SimpleNamespace]:
    """A command decision point: a Python script answering as its first argument says."""
    script = tmp_path / "decide.py"
    script.write_text(DECIDE)

    def command(mode: str) -> SimpleNamespace:
        dump = tmp_path / f"given-{mode}.json"
        return SimpleNamespace(command=[sys.executable, str(script), mode, str(dump)], dump=dump)

    return command


def run_under(user: Any, external: dict[str, Any], *, routing: str = "ask") -> Run:
    """A run whose policy snapshot names `external` (as a run of such a Policy has)."""
    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=user)
    document = {"classes": CLASSES, "default": "ask", "external": external}
    run_policy = {**run.run_policy, "approvals": {**run.run_policy["approvals"], "permission": routing}}
    Run.objects.filter(pk=run.pk).update(policy_document=document, policy_version=core.policy_version(document),
                                         run_policy=run_policy)
    run.refresh_from_db()
    return run


def bash(run: Run, command: str) -> Any:
    return gate_request(run_id=run.pk, tool="bash", input={"command": command}, cwd=run.workspace, tool_call_id="tu_1")


def requested(step: Step) -> dict[str, Any]:
    return Activity.objects.get(run_id=step.run_id, event="tool.requested", payload__step=step.seq).payload


# --- What it is sent, what it says ---------------------------------------------------------------


def test_it_is_sent_the_request_the_verdict_the_run_and_the_session_once(reviewer: Any, opa: SimpleNamespace) -> None:
    run = run_under(reviewer, {"url": opa.url})
    outcome = bash(run, READ)
    assert (outcome.outcome, outcome.decided_by) == ("allow", "policy")
    assert len(opa.received) == 1 and opa.received[0]["path"] == "/v1/data/gatehouse/decision"
    given = opa.received[0]["body"]["input"]
    assert (given["tool"], given["input"], given["cwd"]) == ("bash", {"command": READ}, run.workspace)
    assert (given["kind"], given["subtype"], given["tool_call_id"]) == ("permission", "tool", "tu_1")
    assert given["verdict"]["decision"] == "allow" and given["verdict"]["rule"] and given["verdict"]["reason"]
    assert given["run"] == {"id": run.pk, "driver": "scripted", "workspace": run.workspace, "started_by": "alice"}
    assert given["session"]["id"] == run.session_id and given["session"]["runtime_mode"] == "approval-required"
    assert given["policy_version"] == run.policy_version
    step = Step.objects.get(pk=outcome.step_id)
    assert step.external is not None
    assert (step.external["decision"], step.external["effect"], step.external["failed"]) == ("allow", "agreed", False)
    assert step.external["point"] == opa.url and requested(step)["external"] == step.external


def test_a_deny_tightens_an_allow_and_is_recorded_as_decided_by_external(reviewer: Any, opa: SimpleNamespace) -> None:
    opa.state.mode = "deny"
    run = run_under(reviewer, {"url": opa.url})
    outcome = bash(run, READ)
    assert (outcome.outcome, outcome.decided_by, outcome.reason) == ("deny", "external", "OPA says deny")
    step = Step.objects.get(pk=outcome.step_id)
    assert (step.status, step.decided_by, step.told) == ("denied", "external", "OPA says deny")
    assert (step.verdict, step.rule, step.reason) == ("deny", "external", "OPA says deny")
    assert step.external["verdict"]["decision"] == "allow" and step.external["effect"] == "tightened"
    logged = requested(step)
    assert (logged["decision"], logged["decided_by"], logged["rule"], logged["reason"]) == (
        "deny", "external", "external", "OPA says deny")


def test_an_ask_from_a_command_tightens_an_allow_and_the_card_says_why(
    reviewer: Any, decide: Callable[[str], SimpleNamespace], client: Any
) -> None:
    point = decide("ask")
    run = run_under(reviewer, {"command": point.command, "timeout_ms": 5000})
    outcome = bash(run, READ)
    assert outcome.outcome == "wait"
    approval = Approval.objects.select_related("step").get(pk=outcome.approval_id)
    assert (approval.step.verdict, approval.step.rule, approval.step.reason) == ("ask", "external", "the script says ask")
    client.force_login(reviewer)
    page = client.get("/").content.decode()
    assert "the script says ask" in page
    given = json.loads(point.dump.read_text())["stdin"]
    assert given["input"]["tool"] == "bash" and given["input"]["verdict"]["decision"] == "allow"


def test_by_default_its_allow_does_not_loosen_an_ask_and_that_is_recorded(reviewer: Any, opa: SimpleNamespace) -> None:
    run = run_under(reviewer, {"url": opa.url})
    outcome = bash(run, PUSH)
    assert outcome.outcome == "wait"
    step = Step.objects.get(pk=outcome.step_id)
    assert step.rule != "external" and step.verdict == "ask"
    assert (step.external["decision"], step.external["effect"]) == ("allow", "may-not-loosen")


def test_may_loosen_turns_an_ask_into_an_allow_never_a_deny(reviewer: Any, decide: Callable[[str], SimpleNamespace]) -> None:
    run = run_under(reviewer, {"command": decide("allow").command, "timeout_ms": 5000, "may_loosen": True})
    pushed = bash(run, PUSH)
    assert (pushed.outcome, pushed.decided_by) == ("allow", "external")
    assert Step.objects.get(pk=pushed.step_id).status == "executing"
    destroyed = bash(run, DESTROY)
    assert (destroyed.outcome, destroyed.decided_by) == ("deny", "policy")
    assert Step.objects.get(pk=destroyed.step_id).external["effect"] == "not-looser"


def test_may_loosen_never_lifts_an_ask_about_a_protected_path(reviewer: Any, opa: SimpleNamespace) -> None:
    run = run_under(reviewer, {"url": opa.url, "may_loosen": True})
    outcome = gate_request(run_id=run.pk, tool="write", input={"file_path": ".git/hooks/pre-commit", "content": "x"},
                           cwd=run.workspace)
    assert outcome.outcome == "wait"
    assert Step.objects.get(pk=outcome.step_id).external["effect"] == "protected"


def test_questions_are_not_sent_to_it(reviewer: Any, opa: SimpleNamespace) -> None:
    run = run_under(reviewer, {"url": opa.url})
    questions = {"questions": [{"id": "q", "question": "Which?", "options": [{"label": "A"}], "secret": True}]}
    outcome = gate_request(run_id=run.pk, tool="AskUserQuestion", input={}, cwd=run.workspace, kind="question",
                           presentation=questions)
    assert outcome.outcome == "wait" and opa.received == []
    assert Step.objects.get(pk=outcome.step_id).external is None


# --- Failing closed ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "says"), [
    ("slow", "gave no answer within 300 ms."),
    ("garbage", "gave a malformed answer (not JSON)."),
    ("error", "answered HTTP 500."),
    ("redirect", "answered HTTP 307."),  # never followed
    ("undefined", 'gave a malformed answer (no "result": an undefined rule in OPA answers {}).'),
])
def test_an_http_failure_asks_a_person_and_says_why(reviewer: Any, opa: SimpleNamespace, mode: str, says: str) -> None:
    opa.state.mode = mode
    run = run_under(reviewer, {"url": opa.url, "timeout_ms": 300})
    started = time.monotonic()
    outcome = bash(run, READ)
    assert time.monotonic() - started < 10  # its 300 ms timeout: the slow point never answers meanwhile
    assert outcome.outcome == "wait"
    step = Step.objects.get(pk=outcome.step_id)
    assert (step.verdict, step.rule) == ("ask", "external")
    assert step.reason == f"The external decision point {opa.url} {says} A person decides."
    assert step.external["failed"] and step.external["verdict"]["decision"] == "allow"


def test_an_unreachable_point_asks_and_never_shows_the_urls_secrets(reviewer: Any) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    run = run_under(reviewer, {"url": f"http://gate:s3cret@127.0.0.1:{port}/v1/data/x?token=abc"})
    outcome = bash(run, READ)
    step = Step.objects.get(pk=outcome.step_id)
    assert outcome.outcome == "wait"
    assert step.reason == (f"The external decision point http://127.0.0.1:{port}/v1/data/x could not be reached "
                           "(Connection refused). A person decides.")
    assert "s3cret" not in json.dumps(step.external) and "abc" not in json.dumps(requested(step))


def test_no_proxy_of_the_environment_stands_between(reviewer: Any, opa: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    opa.state.mode = "deny"
    run = run_under(reviewer, {"url": opa.url.replace("127.0.0.1", "localhost")})
    assert bash(run, READ).outcome == "deny"


def test_a_password_in_the_url_is_sent_as_basic_authentication(reviewer: Any, opa: SimpleNamespace) -> None:
    run = run_under(reviewer, {"url": opa.url.replace("127.0.0.1", "gate:s3cret@127.0.0.1")})
    assert bash(run, READ).outcome == "allow"
    assert opa.received[0]["authorization"] == "Basic Z2F0ZTpzM2NyZXQ="  # gate:s3cret


@pytest.mark.parametrize(("mode", "says"), [
    ("garbage", "gave a malformed answer (not JSON)."),
    ("fail", "exited with status 3."),
    ("huge", "gave a malformed answer (longer than 64 KiB)."),
])
def test_a_command_failure_asks_a_person_and_says_why(
    reviewer: Any, decide: Callable[[str], SimpleNamespace], mode: str, says: str
) -> None:
    point = decide(mode)
    run = run_under(reviewer, {"command": point.command, "timeout_ms": 5000})
    outcome = bash(run, READ)
    assert outcome.outcome == "wait"
    assert Step.objects.get(pk=outcome.step_id).reason == f"The external decision point {sys.executable} {says} A person decides."


def test_a_command_that_cannot_start_asks_a_person(reviewer: Any, tmp_path: Path) -> None:
    run = run_under(reviewer, {"command": [str(tmp_path / "missing")]})
    outcome = bash(run, READ)
    assert outcome.outcome == "wait"
    assert Step.objects.get(pk=outcome.step_id).reason == (
        f"The external decision point {tmp_path / 'missing'} could not be started (No such file or directory). "
        "A person decides.")


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_a_slow_command_is_killed_with_what_it_started(reviewer: Any, decide: Callable[[str], SimpleNamespace]) -> None:
    point = decide("slow")
    run = run_under(reviewer, {"command": point.command, "timeout_ms": 1500})
    started = time.monotonic()
    outcome = bash(run, READ)
    assert time.monotonic() - started < 5
    assert outcome.outcome == "wait"
    assert Step.objects.get(pk=outcome.step_id).reason.endswith("gave no answer within 1500 ms. A person decides.")
    record = json.loads(point.dump.read_text())
    assert _gone(record["pid"])
    deadline = time.monotonic() + 5
    while not _gone(record["child"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(record["child"])


def test_a_command_gets_no_secret_of_the_servers_environment(
    reviewer: Any, decide: Callable[[str], SimpleNamespace], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEHOUSE_SECRET_KEY", "do-not-leak")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-do-not-leak")
    point = decide("allow")
    run = run_under(reviewer, {"command": point.command, "timeout_ms": 5000})
    assert bash(run, READ).outcome == "allow"
    env = json.loads(point.dump.read_text())["env"]
    assert "do-not-leak" not in json.dumps(env) and env.get("PATH") == os.environ.get("PATH")


def test_its_ask_and_its_failures_are_never_auto_approved(reviewer: Any, opa: SimpleNamespace) -> None:
    opa.state.mode = "ask"
    run = run_under(reviewer, {"url": opa.url}, routing="auto-approve")
    assert bash(run, PUSH).outcome == "wait"  # the policy asks, and so does the point
    assert bash(run, READ).outcome == "wait"  # the point asks about what the policy allows
    opa.state.mode = "garbage"
    assert bash(run, PUSH).outcome == "wait"
    opa.state.mode = "allow"
    auto = bash(run, PUSH)  # the policy's own ask, which the point does not ask about: routed as ever
    assert (auto.outcome, auto.decided_by) == ("allow", "policy")


def test_auto_deny_routing_still_denies_what_it_asks_about(reviewer: Any, opa: SimpleNamespace) -> None:
    opa.state.mode = "ask"
    run = run_under(reviewer, {"url": opa.url}, routing="auto-deny")
    assert bash(run, READ).outcome == "deny"


# --- The dry run replays what it answered ---------------------------------------------------------


def test_the_dry_run_replays_the_recorded_answers_without_asking_again(reviewer: Any, opa: SimpleNamespace) -> None:
    opa.state.mode = "deny"
    run = run_under(reviewer, {"url": opa.url})
    assert bash(run, READ).outcome == "deny"
    opa.state.mode = "allow"
    assert bash(run, PUSH).outcome == "wait"
    asked = len(opa.received)
    same = dict(run.policy_document)
    result = policy_dry_run(document=same)
    assert (result.changed, result.external_unrecorded) == ([], 0)
    assert policy_dry_run(document={"default": "ask"}).external_unrecorded is None
    # Without the point, its deny is gone; trusting it more, its recorded allow lifts the ask.
    without = {k: v for k, v in same.items() if k != "external"}
    assert [(c.was, c.now) for c in policy_dry_run(document=without).changed] == [("deny", "allow")]
    trusting = {**same, "external": {"url": opa.url, "may_loosen": True}}
    changed = policy_dry_run(document=trusting).changed
    assert [(c.request["input"]["command"], c.was, c.now, c.rule) for c in changed] == [(PUSH, "ask", "allow", "external")]
    assert len(opa.received) == asked  # never asked again


def test_the_dry_run_counts_the_requests_no_point_answered(reviewer: Any, opa: SimpleNamespace) -> None:
    plain = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, user=reviewer)
    gate_request(run_id=plain.pk, tool="bash", input={"command": READ}, cwd=plain.workspace)
    result = policy_dry_run(document={"classes": CLASSES, "default": "ask", "external": {"url": opa.url}})
    assert result.external_unrecorded == 1 and opa.received == []


def test_the_run_page_shows_what_it_answered(reviewer: Any, opa: SimpleNamespace, client: Any) -> None:
    opa.state.mode = "deny"
    run = run_under(reviewer, {"url": opa.url})
    bash(run, READ)
    client.force_login(reviewer)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "External decision point: <span class=\"verdict verdict-deny\">deny</span> — OPA says deny" in page
    assert "(tightened; the rules alone: allow)" in page and "by <strong>external</strong>" in page


def test_an_answer_about_a_verdict_that_changed_since_only_tightens() -> None:
    from approvals.gate.external import Consulted, external_apply
    from approvals.policy.external import ExternalAnswer, ExternalPoint

    point = ExternalPoint(url="http://127.0.0.1:1/x", may_loosen=True)
    asked = core.Verdict(decision=core.Decision.ASK, reason="asked", rule="classes.remote-mutation")
    allow = ExternalAnswer(decision="allow", reason="fine")
    # asked about this very ask: it may loosen it
    assert external_apply(Consulted(point, allow, "ask"), verdict=asked, decision="ask").decision == "allow"
    # asked about an allow (a grant since revoked): its allow does not lift the ask now
    stale = external_apply(Consulted(point, allow, "allow"), verdict=asked, decision="ask")
    assert (stale.decision, stale.decided_by, stale.record["effect"]) == ("ask", None, "may-not-loosen")
    deny = ExternalAnswer(decision="deny", reason="no")
    assert external_apply(Consulted(point, deny, "allow"), verdict=asked, decision="ask").decision == "deny"


def test_a_grant_it_overrules_is_not_recorded_as_deciding(reviewer: Any, opa: SimpleNamespace) -> None:
    from approvals.services import grant_create

    run = run_under(reviewer, {"url": opa.url})
    grant_create(session_id=run.session_id, rule={"tool": "bash", "match": "git push"})
    granted = bash(run, PUSH)
    assert (granted.outcome, granted.decided_by) == ("allow", "grant")
    assert Step.objects.get(pk=granted.step_id).grant_id is not None
    opa.state.mode = "deny"
    overruled = bash(run, PUSH)
    assert (overruled.outcome, overruled.decided_by) == ("deny", "external")
    step = Step.objects.get(pk=overruled.step_id)
    assert step.grant_id is None and requested(step)["grant"] is None
    assert opa.received[-1]["body"]["input"]["verdict"]["rule"] == "grant"
