"""An administrator's external decision point (issue 30.9): its place in the rule policy,
the answer it gives, and how that answer combines with Gatehouse's own decision.

Pure, like the rest of the core: the call itself (HTTP in the shape of OPA's data API, or
a command with the same JSON on stdin and stdout) is the gate's (`approvals.gate.external`).

    "external": {"url": "http://127.0.0.1:8181/v1/data/gatehouse/decision", "timeout_ms": 500}
    "external": {"command": ["/usr/local/bin/decide", "--strict"], "timeout_ms": 500, "may_loosen": true}

The answer is `{"result": {"decision": "allow" | "ask" | "deny", "reason": "..."}}`. Most
restrictive wins; with `may_loosen` an `allow` also turns an ask into an allow, never a
deny, an abort, nor an ask about a protected path. No answer in time, an error or a
malformed answer is an `ask`: a person decides, and the card says why.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .errors import json_type
from .verdicts import ALLOW, ASK, DENY, Decision

EXTERNAL_KEYS = ("url", "command", "timeout_ms", "may_loosen")
ANSWERS = (ALLOW, ASK, DENY)
DEFAULT_TIMEOUT_MS = 500
# The gate waits for it on every request (the hook gateway inside its transaction): bounded.
MAX_TIMEOUT_MS = 10_000
MAX_ANSWER_BYTES = 64 * 1024
MAX_REASON = 1000
_MAX_URL = 2000

Problem = Callable[[str, str, Any], None]  # (field, message, value), as `rules._Problems`


@dataclass(frozen=True)
class ExternalPoint:
    """Where the decision point is and how far it is trusted."""

    url: str = field(default="", repr=False)  # may carry a password or a token: never in a repr
    command: tuple[str, ...] = field(default=(), repr=False)
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    may_loosen: bool = False

    def __repr__(self) -> str:
        return f"ExternalPoint({self.target!r}, timeout_ms={self.timeout_ms}, may_loosen={self.may_loosen})"

    @property
    def target(self) -> str:
        """What messages call it, without what may be secret: a URL's user, password and
        query (`http://host:8181/v1/data/x`), a command's program alone."""
        if self.command:
            return self.command[0]
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"url": self.url} if self.url else {"command": list(self.command)}
        return {**out, "timeout_ms": self.timeout_ms, "may_loosen": self.may_loosen}


def read_external(value: Any, problems: Problem) -> ExternalPoint | None:
    """Validate the rule policy's `external` section, each problem named by its field."""
    if not isinstance(value, Mapping):
        problems("external", f"must be an object with url or command (got {json_type(value)})", value)
        return None
    before = _Count(problems)
    for key in value:
        if key not in EXTERNAL_KEYS:
            before(f"external.{key}", f"unknown key {key!r} in external (expected one of {', '.join(EXTERNAL_KEYS)})",
                   value[key])
    url, command = value.get("url"), value.get("command")
    if url is not None and command is not None:
        before("external", "give url or command, not both", value)
    elif url is None and command is None:
        before("external", "needs url (an HTTP endpoint in the shape of OPA's data API) or command (a program "
                           "and its arguments, given the request as JSON on stdin)", value)
    point_url = _url(url, before) if url is not None else ""
    point_command = _command(command, before) if command is not None else ()
    timeout = value.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= MAX_TIMEOUT_MS:
        shown = repr(timeout) if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) else json_type(timeout)
        before("external.timeout_ms", f"must be a whole number of milliseconds from 1 to {MAX_TIMEOUT_MS} (got {shown})",
               timeout)
    may_loosen = value.get("may_loosen", False)
    if not isinstance(may_loosen, bool):
        before("external.may_loosen", f"must be true or false (got {json_type(may_loosen)})", may_loosen)
    if before.count:
        return None
    return ExternalPoint(url=point_url, command=point_command, timeout_ms=int(timeout), may_loosen=may_loosen)


class _Count:
    """Passes problems on and counts them."""

    def __init__(self, problems: Problem) -> None:
        self.problems, self.count = problems, 0

    def __call__(self, field: str, message: str, value: Any) -> None:
        self.count += 1
        self.problems(field, message, value)


def _url(url: Any, problems: Problem) -> str:
    if not isinstance(url, str):
        problems("external.url", f"must be an http:// or https:// URL (got {json_type(url)})", url)
        return ""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        problems("external.url", f"is not a URL ({exc})", url)
        return ""
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problems("external.url", "must be an http:// or https:// URL with a host (got a URL without one)"
                 if parts.scheme in ("http", "https") else
                 f"must be an http:// or https:// URL (got scheme {parts.scheme or 'none'!r})", url)
        return ""
    if parts.fragment or len(url) > _MAX_URL or any(ord(c) < 33 for c in url):
        problems("external.url", f"must be a plain URL: no fragment, spaces or control characters, at most {_MAX_URL} "
                                 "characters", url)
        return ""
    return url


def _command(command: Any, problems: Problem) -> tuple[str, ...]:
    if isinstance(command, str):
        problems("external.command", "must be a list of words, the program and its arguments (no shell reads it): "
                                     f"[{json.dumps(command.split()[0]) if command.split() else '...'}, ...]", command)
        return ()
    if not isinstance(command, list) or not command:
        problems("external.command", f"must be a non-empty list of words, the program and its arguments "
                                     f"(got {json_type(command) if not isinstance(command, list) else 'an empty list'})",
                 command)
        return ()
    for i, word in enumerate(command):
        if not isinstance(word, str) or not word or "\x00" in word:
            problems(f"external.command[{i}]", f"must be a non-empty string (got {json_type(word)})", word)
            return ()
    return tuple(command)


# --- Its answer ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExternalAnswer:
    """What the decision point said (`decision` one of ANSWERS), or why it said nothing
    usable (`failed`: `reason` says why, and the request is asked of a person)."""

    decision: Decision
    reason: str
    failed: bool = False

    def __post_init__(self) -> None:
        # (an answer named by its string, `ExternalAnswer("deny", …)`, is read into its Decision)
        if type(self.decision) is not Decision:
            object.__setattr__(self, "decision", Decision(self.decision))

    @classmethod
    def failure(cls, why: str) -> ExternalAnswer:
        return cls(decision=ASK, reason=why, failed=True)

    def to_dict(self) -> dict[str, Any]:
        return {"decision": self.decision, "reason": self.reason, "failed": self.failed}


def parse_answer(raw: bytes, target: str) -> ExternalAnswer:
    """Read `{"result": {"decision": ..., "reason": ...}}`; anything else is a failure
    that says what was wrong (never echoing the answer itself)."""
    def bad(what: str) -> ExternalAnswer:
        return ExternalAnswer.failure(f"The external decision point {target} gave a malformed answer ({what}).")

    if len(raw) > MAX_ANSWER_BYTES:
        return bad(f"longer than {MAX_ANSWER_BYTES // 1024} KiB")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return bad("not JSON")
    if not isinstance(body, Mapping):
        return bad(f"a JSON {json_type(body)}, not an object")
    if "result" not in body:
        return bad('no "result": an undefined rule in OPA answers {}')
    result = body["result"]
    if not isinstance(result, Mapping):
        return bad(f'"result" is a {json_type(result)}, not an object with decision and reason')
    decision = result.get("decision")
    if decision not in ANSWERS:
        shown = repr(decision) if isinstance(decision, str) and len(decision) <= 20 else json_type(decision)
        return bad(f'"result.decision" must be one of {", ".join(ANSWERS)} (got {shown})')
    reason = result.get("reason", "")
    if not isinstance(reason, str):
        return bad(f'"result.reason" must be a string (got {json_type(reason)})')
    # one line of printable text: the agent is told it, the card and the log show it
    reason = " ".join("".join(c if c.isprintable() else " " for c in reason).split())[:MAX_REASON]
    return ExternalAnswer(decision=Decision(decision), reason=reason or f"The external decision point {target} said {decision}.")


# --- Combined with Gatehouse's decision -----------------------------------------------------------


@dataclass(frozen=True)
class Combined:
    decision: Decision  # after the point's answer
    decided: bool  # the point's answer changed the decision: it decided (or asks a person)
    effect: str  # tightened | loosened | agreed | not-looser | may-not-loosen | protected | failed
    # A person must decide: the point asked or failed. The run's auto-approve routing and
    # the session's runtime mode do not answer it (auto-deny still denies: no one would).
    person: bool = False


def combine(decision: Decision | str, answer: ExternalAnswer, *, may_loosen: bool, protected: bool = False
            ) -> Combined:
    """Gatehouse's `decision` (after grants and the runtime mode) with the point's answer:
    the most restrictive wins; with `may_loosen`, an `allow` turns an ask into an allow,
    unless the request touches a protected path. A deny or abort always stands."""
    decision = Decision(decision)  # the gate's own decisions come as strings
    wanted = answer.decision
    if wanted.worse(decision):
        return Combined(wanted, True, "failed" if answer.failed else "tightened", person=wanted == ASK)
    if answer.failed:
        return Combined(decision, False, "failed", person=decision == ASK)
    if wanted == ALLOW and decision == ASK:
        if not may_loosen:
            return Combined(ASK, False, "may-not-loosen")
        if protected:
            return Combined(ASK, False, "protected")
        return Combined(ALLOW, True, "loosened")
    if wanted == decision:
        return Combined(decision, False, "agreed", person=decision == ASK)
    return Combined(decision, False, "not-looser")


def replay(decision: Decision | str, recorded: Mapping[str, Any] | None, point: ExternalPoint, *, protected: bool = False
           ) -> Combined | None:
    """What `point` would make of `decision`, given the answer a step recorded (`Step.external`)
    instead of asking again (the dry run replays history: the answer as it was then, a
    failure included). None when nothing was recorded (no point was consulted then)."""
    if not recorded or recorded.get("decision") not in ANSWERS:
        return None
    answer = ExternalAnswer(decision=Decision(recorded["decision"]), reason=str(recorded.get("reason", "")),
                            failed=bool(recorded.get("failed")))
    return combine(decision, answer, may_loosen=point.may_loosen, protected=protected)


def failure_note(answer: ExternalAnswer) -> str:
    """Added to the policy's own reason when the point failed on a request already asked."""
    return f" ({answer.reason} A person decides.)"


__all__ = [
    "ANSWERS", "Combined", "DEFAULT_TIMEOUT_MS", "EXTERNAL_KEYS", "ExternalAnswer", "ExternalPoint", "MAX_ANSWER_BYTES",
    "MAX_TIMEOUT_MS", "combine", "failure_note", "parse_answer", "read_external", "replay",
]
