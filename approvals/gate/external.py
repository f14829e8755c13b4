"""Consulting the administrator's external decision point (issue 30.9).

The rule policy names it (`"external"`, validated in `approvals.policy.external`); the gate
asks it about every well-formed permission request of a run under that policy, after the
policy's own verdict (grants and the session's runtime mode included) and before anything
is recorded, then combines the answers (`approvals.policy.external.combine`):

- HTTP, in the shape of OPA's data API: `POST <url>` with `{"input": {...}}`, answered
  `{"result": {"decision": "allow|ask|deny", "reason": "..."}}`. No proxy from the
  environment, no redirect followed, at most `MAX_ANSWER_BYTES` read, all within `timeout_ms`.
  A user and password in the URL are sent as HTTP basic authentication, never shown.
- a command: the same JSON on its stdin, the same answer on its stdout; started without a
  shell, in a new process group with a minimal environment (not Gatehouse's secrets), and
  killed with its group when `timeout_ms` has passed; stdout bounded, stderr discarded.

Whatever goes wrong (no answer in time, an error, a malformed answer) is an answer too: a
failure, which asks a person and says why. Nothing here raises.

What it is sent (`decision_input`) is the canonical request (`tool`, `input`, `cwd`), the
request's kind, subtype and tool-call id, Gatehouse's verdict, the run, the session and the
policy version: never a question's answers, the presentation, nor anything of the server's.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import logging
import os
import selectors
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from approvals import policy as core
from approvals.policy.external import (
    MAX_ANSWER_BYTES,
    ExternalAnswer,
    ExternalPoint,
    combine,
    failure_note,
    parse_answer,
)
from runs.models import Run

logger = logging.getLogger(__name__)

# What a command inherits of Gatehouse's environment: enough to find and run a program.
_KEPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
_CHUNK = 64 * 1024


class _Failed(Exception):
    """The decision point gave no usable answer; the message says why, for the card."""


@dataclass(frozen=True)
class Consulted:
    """The point's answer about one request, and the verdict it was told."""

    point: ExternalPoint
    answer: ExternalAnswer
    asked_about: str  # the verdict's decision in what it was sent
    elapsed_ms: int = 0


@dataclass(frozen=True)
class ExternalQuestion:
    """What the point is to be asked about one request (read from the database), asked by
    `external_ask` (no database: off the database thread)."""

    point: ExternalPoint
    payload: dict[str, Any]
    asked_about: str


@dataclass(frozen=True)
class Applied:
    """The gate's decision after the point's answer, and what the step records."""

    decision: core.Decision
    verdict: core.Verdict  # as the step records it: the point's rule and reason when it decided
    decided_by: str | None  # "external" when it settled the request, else the gate's own
    person: bool  # a person must decide: the run's auto-approve routing does not answer it
    record: dict[str, Any]  # `Step.external`, also in `tool.requested`
    decided: bool = False  # its answer changed the decision (a grant that allowed it did not decide)


def external_point_of(run_id: int) -> ExternalPoint | None:
    """The decision point of run `run_id`'s policy snapshot (a run context reads it once:
    the snapshot never changes)."""
    row = Run.objects.filter(pk=run_id).values_list("policy_document", "policy_version").first()
    if row is None:
        return None
    try:
        return core.compile_policy(row[0], version=row[1]).external
    except core.PolicyError:
        return None


def point_of(run: Run) -> ExternalPoint | None:
    """The run's decision point, from its policy snapshot (compiled once per version). A
    snapshot that no longer compiles has none: the gate denies every request of it."""
    try:
        return core.compile_policy(run.policy_document, version=run.policy_version).external
    except core.PolicyError:
        return None


def decision_input(
    run: Run, *, request: dict[str, Any], verdict: core.Verdict, kind: str, subtype: str, tool_call_id: str
) -> dict[str, Any]:
    """The JSON the point is sent, `{"input": {...}}` as OPA's data API reads it."""
    started_by = run.created_by.get_username() if run.created_by_id is not None and run.created_by else None
    session = run.session
    return {"input": {
        **request,
        "kind": kind,
        "subtype": subtype,
        "tool_call_id": tool_call_id,
        "verdict": {"decision": verdict.decision, "reason": verdict.reason, "rule": verdict.rule,
                    "side_effect_class": verdict.side_effect_class},
        "run": {"id": run.pk, "driver": run.driver, "workspace": run.workspace, "started_by": started_by},
        "session": {"id": session.pk, "runtime_mode": session.runtime_mode, "interaction_mode": session.interaction_mode},
        "policy_version": run.policy_version,
    }}


def consult(point: ExternalPoint, payload: dict[str, Any]) -> ExternalAnswer:
    """Ask the point; a failure is an answer that says why (logged by target, never with
    the request or a secret of the URL)."""
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    try:
        raw = _post(point, body) if point.url else _run_command(point, body)
    except _Failed as exc:
        answer = ExternalAnswer.failure(str(exc))
    else:
        answer = parse_answer(raw, point.target)
    if answer.failed:
        logger.warning("external decision point %s: %s", point.target, answer.reason)
    return answer


def question_about(
    run: Run, point: ExternalPoint, *, request: dict[str, Any], verdict: core.Verdict, kind: str, subtype: str,
    tool_call_id: str,
) -> ExternalQuestion:
    payload = decision_input(run, request=request, verdict=verdict, kind=kind, subtype=subtype, tool_call_id=tool_call_id)
    return ExternalQuestion(point, payload, verdict.decision)


def external_ask(question: ExternalQuestion) -> Consulted:
    """Ask the point (no database read or write: any thread)."""
    started = time.monotonic()
    answer = consult(question.point, question.payload)
    return Consulted(question.point, answer, question.asked_about, int((time.monotonic() - started) * 1000))


def consult_about(
    run: Run, point: ExternalPoint, *, request: dict[str, Any], verdict: core.Verdict, kind: str, subtype: str,
    tool_call_id: str,
) -> Consulted:
    return external_ask(question_about(run, point, request=request, verdict=verdict, kind=kind, subtype=subtype,
                                       tool_call_id=tool_call_id))


def external_apply(consulted: Consulted, *, verdict: core.Verdict, decision: core.Decision) -> Applied:
    """Combine the point's answer with the gate's `decision` (the policy's `verdict` after
    the runtime mode). It may loosen only what it was asked about: an answer about a verdict
    that changed since (a grant made meanwhile) only tightens."""
    point, answer = consulted.point, consulted.answer
    may_loosen = point.may_loosen and consulted.asked_about == verdict.decision
    combined = combine(decision, answer, may_loosen=may_loosen, protected=verdict.touches_protected)
    recorded = verdict
    if combined.decided:
        reason = f"{answer.reason} A person decides." if answer.failed else answer.reason
        recorded = dataclasses.replace(verdict, decision=combined.decision, rule="external", reason=reason)
    elif answer.failed and combined.decision == "ask":
        recorded = dataclasses.replace(verdict, reason=verdict.reason + failure_note(answer))
    record = {
        "point": point.target, **answer.to_dict(), "effect": combined.effect, "ms": consulted.elapsed_ms,
        "verdict": {"decision": verdict.decision, "rule": verdict.rule, "reason": verdict.reason},
    }
    decided_by = "external" if combined.decided and combined.decision != "ask" else None
    return Applied(combined.decision, recorded, decided_by, combined.person, record, combined.decided)


# --- HTTP ----------------------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: the administrator named the endpoint that decides."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


# No proxy from the environment: the point is where the administrator said it is.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def _post(point: ExternalPoint, body: bytes) -> bytes:
    timeout = point.timeout_ms / 1000
    deadline = time.monotonic() + timeout
    url, headers = _without_credentials(point.url)
    request = urllib.request.Request(url, data=body, method="POST", headers={
        **headers, "Content-Type": "application/json", "Accept": "application/json", "User-Agent": "gatehouse",
    })
    late = _Failed(f"The external decision point {point.target} gave no answer within {point.timeout_ms} ms.")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            out = bytearray()
            while len(out) <= MAX_ANSWER_BYTES:
                if time.monotonic() > deadline:
                    raise late
                chunk = response.read1(_CHUNK)
                if not chunk:
                    break
                out += chunk
            if time.monotonic() > deadline:
                raise late
            return bytes(out)
    except urllib.error.HTTPError as exc:
        raise _Failed(f"The external decision point {point.target} answered HTTP {exc.code}.") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise late from None
        raise _Failed(f"The external decision point {point.target} could not be reached ({_why(exc.reason)}).") from None
    except TimeoutError:
        raise late from None
    except (OSError, ValueError) as exc:  # a reset connection, a broken HTTP answer
        raise _Failed(f"The external decision point {point.target} failed ({_why(exc)}).") from None


def _without_credentials(url: str) -> tuple[str, dict[str, str]]:
    """The URL without its user and password, and those as a basic authorization header."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, {}
    host = parts.hostname or ""
    netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
    bare = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return bare, {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}


def _why(reason: object) -> str:
    """An OS error's own words (`Connection refused`), never a URL."""
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return type(reason).__name__ if not isinstance(reason, str) else reason[:200]


# --- A command -----------------------------------------------------------------------------------


def _run_command(point: ExternalPoint, body: bytes) -> bytes:
    """Run the command with `body` on stdin; its stdout, once it exited 0 in time."""
    deadline = time.monotonic() + point.timeout_ms / 1000
    late = _Failed(f"The external decision point {point.target} gave no answer within {point.timeout_ms} ms.")
    env = {name: os.environ[name] for name in _KEPT_ENV if name in os.environ}
    try:
        proc = subprocess.Popen(
            list(point.command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, cwd="/", start_new_session=True, close_fds=True,
        )
    except OSError as exc:
        raise _Failed(f"The external decision point {point.target} could not be started ({_why(exc)}).") from None
    try:
        out = _exchange(proc, body, deadline, late)
        if len(out) > MAX_ANSWER_BYTES:
            return out  # parse_answer refuses it, saying so; the command is killed below
        try:
            code = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise late from None
        if code != 0:
            raise _Failed(f"The external decision point {point.target} exited with status {code}.")
        return out
    finally:
        if proc.poll() is None:
            _kill(proc)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


def _exchange(proc: subprocess.Popen[bytes], body: bytes, deadline: float, late: _Failed) -> bytes:
    """Write `body` to the command's stdin and read its stdout until it closes, both at
    once (a command may answer before it has read everything), bounded in time and size."""
    assert proc.stdin is not None and proc.stdout is not None
    pending = memoryview(body)
    out = bytearray()
    with selectors.DefaultSelector() as sel:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE)
        sel.register(proc.stdout, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise late
            for key, _ in sel.select(left):
                if key.fileobj is proc.stdin:
                    try:
                        pending = pending[os.write(proc.stdin.fileno(), pending[:_CHUNK]):]
                    except BrokenPipeError:
                        pending = pending[:0]  # it stopped reading: its answer decides
                    if not pending:
                        sel.unregister(proc.stdin)
                        proc.stdin.close()
                else:
                    chunk = os.read(proc.stdout.fileno(), _CHUNK)
                    if not chunk:
                        sel.unregister(proc.stdout)
                        continue
                    out += chunk
                    if len(out) > MAX_ANSWER_BYTES:
                        return bytes(out)
    return bytes(out)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the command and whatever it started (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


__all__ = [
    "Applied", "Consulted", "ExternalQuestion", "consult", "consult_about", "decision_input", "external_apply",
    "external_ask", "external_point_of", "point_of", "question_about",
]
