"""Fuzzing the API (hypothesis): whatever a client sends, the answer is never a 500.

The rule (docs/api.md, "API"): bad input gets a clear 4xx naming the problem
(`{"code", "message", ...}`) and stores nothing. These properties send arbitrary JSON,
near-valid bodies (a valid body with one field replaced), raw bytes and odd query strings
to every writing endpoint and the list filters, and check:

* the status is always below 500;
* a 4xx body is a JSON object with `code` and `message`;
* a refused run creation stores no Run and no AgentSession.

Each example runs in a savepoint that is rolled back, so a body that happens to approve
the fixture's approval does not leave it decided for the next example.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.models import AgentSession, Run
from tests.approvals.policy.policytest import ISSUE_POLICY

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("standard_review_default")]

FUZZ = settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,  # the same examples on every run: a failure here is a bug, not bad luck
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Asked under the default policy: an awk program that writes a file (`echo hi > f` inside
# the workspace is a local edit, allowed).
WRITE_F_COMMAND = """awk 'BEGIN { print "hi" > "f" }'"""
WRITE_F = {"steps": [{"tool": "bash", "input": {"command": WRITE_F_COMMAND}}]}
QUESTIONS = [
    {
        "id": "color",
        "header": "Color",
        "question": "Which?",
        "options": [{"label": "Red"}, {"label": "Blue"}],
        "multi_select": False,
        "allow_other": True,
    },
    {
        "id": "extras",
        "header": "Extras",
        "question": "Which ones?",
        "options": [{"label": "A"}, {"label": "B"}],
        "multi_select": True,
        "allow_other": False,
    },
]
POLICY_DOCUMENT = ISSUE_POLICY


# --- Strategies ---------------------------------------------------------------------------------

# Numbers at the edges: past 64 bits, past float range as an integer literal, float extremes.
EDGE_INTS = st.sampled_from([0, -1, 2**31, 2**63, -(2**63) - 1, 2**64, 10**30, 10**400, -(10**400)])
EDGE_FLOATS = st.sampled_from([0.5, -0.0, 1e-300, 1e12, -1e12, 1e300, 1.7976931348623157e308, float("inf"), float("nan")])
# Text that has tripped parsers and path handling: unicode digits, NUL, home-dir and
# over-long paths, shell metacharacters.
EDGE_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "²",
        "١٢",
        "~",
        "~nosuchuser",
        "~nosuchuser/x",
        "/" + "a" * 300,
        "/tmp/" + "a" * 5000,
        "relative/dir",
        "/",
        "..",
        "$(rm -rf /)",
        "`x`",
        "[z-a]",
        "!",
        "**",
        "\ufeff",
        "\u2028",
        "x" * 3000,
        "inherit",
        "ask",
        "auto-approve",
        "auto-deny",
        "once",
        "session",
        "default",
        "accept-edits",
        "plan",
        "auto",
        "full-access",
    ]
)
SCALARS = st.none() | st.booleans() | st.integers() | EDGE_INTS | st.floats() | EDGE_FLOATS | st.text(max_size=20) | EDGE_TEXT
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10) | EDGE_TEXT, children, max_size=4),
    max_leaves=15,
)
SHELLISH = st.text(alphabet="ab ls$()`'\"|&;<>*?[]{}~\\\n=-./0", max_size=40)
PATHISH = st.text(alphabet="ab./*~\\ -_[]!\x00é", max_size=30) | EDGE_TEXT


def _dumps(value: Any) -> str:
    # json.dumps writes NaN/Infinity for non-finite floats: the strict parser must refuse them.
    return json.dumps(value)


# --- Helpers -----------------------------------------------------------------------------------


class _Rollback(Exception):
    pass


@contextmanager
def rolled_back() -> Iterator[None]:
    """Run one example in a savepoint that is always rolled back."""
    try:
        with transaction.atomic():
            yield
            raise _Rollback
    except _Rollback:
        pass


def _send(client: Any, method: str, url: str, body: Any = None, *, raw: bytes | None = None) -> Any:
    client.raise_request_exception = False  # a crash must show up as the 500 a client would see
    if raw is not None:
        data: bytes | str = raw
    elif body is None and method == "GET":
        data = ""
    else:
        data = _dumps(body)
    response = client.generic(method, url, data, content_type="application/json")
    _check(response, method, url, raw if raw is not None else body)
    return response


def _check(response: Any, method: str, url: str, sent: Any) -> None:
    where = f"{method} {url} with {sent!r:.300}"
    if response.status_code >= 500:
        exc_info = getattr(response, "exc_info", None)
        if exc_info and exc_info[1] is not None:
            # Re-raise the server's own exception: its traceback points at the line to fix,
            # and hypothesis reports each distinct crash site separately.
            exc_info[1].add_note(f"{where} answered {response.status_code}")
            raise exc_info[1]
        raise AssertionError(f"{where} answered {response.status_code}: {response.content[:300]!r}")
    if 400 <= response.status_code < 500:
        try:
            body = json.loads(response.content)
        except ValueError:
            raise AssertionError(
                f"{where} answered {response.status_code} without a JSON body: {response.content[:300]!r}"
            ) from None
        assert isinstance(body, dict), f"{where}: the {response.status_code} body is not an object: {body!r}"
        assert isinstance(body.get("code"), str) and body["code"], f"{where}: no code in {body!r}"
        assert isinstance(body.get("message"), str) and body["message"], f"{where}: no message in {body!r}"


def _post_run(client: Any, body: Any = None, *, raw: bytes | None = None) -> Any:
    runs, sessions = Run.objects.count(), AgentSession.objects.count()
    response = _send(client, "POST", "/api/v1/runs/", body, raw=raw)
    if response.status_code != 201:
        assert (Run.objects.count(), AgentSession.objects.count()) == (runs, sessions), (
            f"a refused run ({response.status_code}: {response.content[:200]!r}) stored rows"
        )
    return response


# --- Fixtures ----------------------------------------------------------------------------------


@pytest.fixture
def permission_approval(db: Any) -> Any:
    from approvals.gate import gate_request
    from approvals.models import Approval
    from runs.services import run_create

    # A negative timeout: no deadline, so the approval cannot expire during a slow run.
    run = run_create(driver="scripted", scenario=WRITE_F, run_policy={"approvals": {"timeout_s": -1}})
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": WRITE_F_COMMAND}, cwd=run.workspace, subtype="command")
    assert outcome.outcome == "wait", outcome
    return Approval.objects.get(pk=outcome.approval_id)


@pytest.fixture
def question_approval(db: Any) -> Any:
    from approvals.gate import gate_request
    from approvals.models import Approval
    from runs.services import run_create

    run = run_create(
        driver="scripted",
        scenario={"steps": [{"question": {"questions": QUESTIONS}}]},
        run_policy={"approvals": {"timeout_s": -1, "question": "ask"}},
    )
    outcome = gate_request(
        run_id=run.pk,
        tool="AskUserQuestion",
        input={"questions": QUESTIONS},
        cwd=run.workspace,
        kind="question",
        subtype="question",
        presentation={"title": "The agent asks", "questions": QUESTIONS},
    )
    assert outcome.outcome == "wait", outcome
    return Approval.objects.get(pk=outcome.approval_id)


@pytest.fixture
def policy(db: Any) -> Any:
    from approvals.models import Policy
    from approvals.services import policy_save

    return policy_save(policy=Policy(name="fuzz", document=POLICY_DOCUMENT))


@pytest.fixture
def session(db: Any) -> Any:
    from runs.services import session_create

    return session_create(title="fuzz")


# --- POST /api/v1/runs/ ------------------------------------------------------------------------

VALID_RUN = {"driver": "scripted", "prompt": "p", "scenario": WRITE_F}
RUN_FIELDS = ["driver", "prompt", "scenario", "workspace", "run_policy", "policy", "session", "colour"]


@FUZZ
@given(body=JSON)
def test_runs_any_json_body(api: Any, body: Any) -> None:
    with rolled_back():
        _post_run(api, body)


@st.composite
def run_policies(draw: Any) -> Any:
    approvals = draw(
        st.dictionaries(
            st.sampled_from(["permission", "plan_review", "question", "timeout_s", "on_timeout", "on_reject", "max_retries"])
            | st.text(max_size=8),
            JSON,
            max_size=3,
        )
    )
    top = draw(st.dictionaries(st.sampled_from(["sandbox", "web_search", "browser"]), JSON, max_size=2))
    return draw(st.sampled_from([{**top, "approvals": approvals}, {"approvals": approvals}, top]) | JSON)


@st.composite
def steps(draw: Any) -> Any:
    """A scenario step with random fields: a known key or two, random values."""
    keys = draw(st.lists(st.sampled_from(["tool", "input", "message", "question", "plan"]) | st.text(max_size=6), max_size=3))
    step: dict[str, Any] = {}
    for key in keys:
        if key == "tool":
            step[key] = draw(st.sampled_from(["bash", "write", "edit", "read", "webSearch", ""]) | JSON)
        elif key == "input":
            step[key] = draw(
                st.dictionaries(
                    st.sampled_from(["command", "file_path", "content", "old_string", "new_string", "notebook_path"]),
                    SHELLISH | JSON,
                    max_size=3,
                )
                | JSON
            )
        elif key == "question":
            step[key] = draw(
                st.fixed_dictionaries(
                    {"questions": st.lists(st.dictionaries(st.text(max_size=8), JSON, max_size=5) | JSON, max_size=2)}
                )
                | JSON
            )
        else:
            step[key] = draw(JSON)
    return step


@FUZZ
@given(field=st.sampled_from(RUN_FIELDS), value=JSON | EDGE_TEXT | EDGE_INTS, drop=st.booleans())
def test_runs_valid_body_with_one_field_replaced(api: Any, session: Any, field: str, value: Any, drop: bool) -> None:
    body = dict(VALID_RUN)
    if drop and field in body:
        del body[field]
    else:
        body[field] = value
    with rolled_back():
        _post_run(api, body)


@FUZZ
@given(run_policy=run_policies())
def test_runs_with_random_run_policy(api: Any, run_policy: Any) -> None:
    with rolled_back():
        _post_run(api, {**VALID_RUN, "run_policy": run_policy})


@FUZZ
@given(workspace=PATHISH | st.text(max_size=40))
def test_runs_with_random_workspace(api: Any, workspace: str) -> None:
    with rolled_back():
        _post_run(api, {**VALID_RUN, "workspace": workspace})


@FUZZ
@given(scenario_steps=st.lists(steps(), min_size=1, max_size=3), extra=st.dictionaries(st.text(max_size=6), JSON, max_size=1))
def test_runs_with_random_scenario_steps(api: Any, scenario_steps: list[Any], extra: dict[str, Any]) -> None:
    with rolled_back():
        _post_run(api, {**VALID_RUN, "scenario": {"steps": scenario_steps, **extra}})


@FUZZ
@given(
    timeout=st.integers(min_value=-(10**6), max_value=10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | EDGE_INTS.filter(lambda n: abs(n) < 10**300)
    | EDGE_FLOATS.filter(lambda x: x == x and abs(x) != float("inf"))
)
def test_an_accepted_run_policy_can_gate_a_request(api: Any, timeout: Any) -> None:
    """A run policy the API accepts must not crash the gate later (the run would end
    `driver_crashed` instead of the client hearing a 400 at creation)."""
    from approvals.gate import gate_request

    with rolled_back():
        response = _post_run(api, {**VALID_RUN, "run_policy": {"approvals": {"timeout_s": timeout}}})
        if response.status_code == 201:
            run = Run.objects.get(pk=response.json()["id"])
            gate_request(run_id=run.pk, tool="bash", input={"command": WRITE_F_COMMAND}, cwd=run.workspace, subtype="command")


# --- Approvals: approve / deny / answer --------------------------------------------------------


def _decision_value(approval_hash: str) -> Any:
    return st.sampled_from([approval_hash, approval_hash.upper(), approval_hash + " "]) | JSON


@FUZZ
@given(verb=st.sampled_from(["approve", "deny", "answer"]), body=JSON, which=st.sampled_from(["permission", "question"]))
def test_decisions_any_json_body(
    api: Any, permission_approval: Any, question_approval: Any, verb: str, body: Any, which: str
) -> None:
    approval = permission_approval if which == "permission" else question_approval
    with rolled_back():
        _send(api, "POST", f"/api/v1/approvals/{approval.pk}/{verb}/", body)


@FUZZ
@given(data=st.data(), verb=st.sampled_from(["approve", "deny", "answer"]), which=st.sampled_from(["permission", "question"]))
def test_decisions_near_valid_bodies(
    api: Any, permission_approval: Any, question_approval: Any, data: Any, verb: str, which: str
) -> None:
    approval = permission_approval if which == "permission" else question_approval
    fields = {
        "approve": ["hash", "scope", "mode"],
        "deny": ["hash", "reason"],
        "answer": ["hash", "answers", "decline"],
    }[verb]
    body: dict[str, Any] = {"hash": approval.hash}
    for name in data.draw(st.lists(st.sampled_from([*fields, "extra"]), max_size=3, unique=True)):
        if name == "hash":
            body[name] = data.draw(_decision_value(approval.hash))
        elif name == "answers":
            body[name] = data.draw(
                st.dictionaries(
                    st.sampled_from(["color", "extras", "nope"]) | st.text(max_size=5),
                    st.sampled_from(["Red", "Blue", "A", "B", "Other"])
                    | st.lists(st.sampled_from(["A", "B", "Red"]) | JSON, max_size=3)
                    | JSON,
                    max_size=3,
                )
                | JSON
            )
        else:
            body[name] = data.draw(EDGE_TEXT | JSON)
    with rolled_back():
        _send(api, "POST", f"/api/v1/approvals/{approval.pk}/{verb}/", body)


# --- POST /api/v1/policies/<id>/evaluate/ ------------------------------------------------------

TOOLS = st.sampled_from(
    ["bash", "write", "edit", "MultiEdit", "NotebookEdit", "read", "TodoWrite", "webSearch", "dropDatabase", "mcp__x__y", "", " "]
)


@st.composite
def tool_requests(draw: Any) -> Any:
    request: dict[str, Any] = {"tool": draw(TOOLS | JSON)}
    request["input"] = draw(
        st.dictionaries(
            st.sampled_from(["command", "file_path", "notebook_path", "path", "content"]), SHELLISH | PATHISH | JSON, max_size=3
        )
        | JSON
    )
    if draw(st.booleans()):
        request["cwd"] = draw(st.sampled_from(["/", "/work", "/tmp/x/../y", "relative"]) | PATHISH | JSON)
    if draw(st.integers(0, 9)) == 0:
        request[draw(st.text(max_size=5))] = draw(JSON)
    return request


GRANTS = st.lists(
    st.fixed_dictionaries({"tool": TOOLS | JSON}, optional={"match": SHELLISH | PATHISH | JSON, "x": JSON}) | JSON, max_size=3
)


@FUZZ
@given(body=JSON)
def test_policy_evaluate_any_json_body(api: Any, policy: Any, body: Any) -> None:
    with rolled_back():
        _send(api, "POST", f"/api/v1/policies/{policy.pk}/evaluate/", body)


@FUZZ
@given(request=tool_requests(), grants=GRANTS, with_grants=st.booleans())
def test_policy_evaluate_near_valid_requests(api: Any, policy: Any, request: Any, grants: Any, with_grants: bool) -> None:
    body: dict[str, Any] = {"request": request}
    if with_grants:
        body["grants"] = grants
    with rolled_back():
        _send(api, "POST", f"/api/v1/policies/{policy.pk}/evaluate/", body)


# --- PATCH /api/v1/sessions/<id>/ --------------------------------------------------------------


@FUZZ
@given(
    body=JSON
    | st.dictionaries(
        st.sampled_from(["runtime_mode", "interaction_mode", "title"]),
        st.sampled_from(["approval-required", "auto-accept-edits", "auto", "full-access", "default", "plan"]) | EDGE_TEXT | JSON,
        max_size=2,
    )
)
def test_session_patch(api: Any, session: Any, body: Any) -> None:
    with rolled_back():
        _send(api, "PATCH", f"/api/v1/sessions/{session.pk}/", body)


# --- Raw bytes ---------------------------------------------------------------------------------

RAW_BODIES = [
    b"\xff\xfe\xfd",
    b'{"driver": "\xc3\x28"}',
    b'{"driver": "scripted", "driver": "codex"}',
    b'{"a": 1, "a": 2}',
    b"[" * 300 + b"]" * 300,
    b"[" * 256 + b"]" * 256,
    b"[" * 255 + b"]" * 255,
    b'{"a":' * 300 + b"1" + b"}" * 300,
    b"[" * 100000,
    b'{"driver": "\\ud800"}',
    b'{"driver": "\\udc00x"}',
    b'{"\\ud800": 1}',
    b'{"session": 1e400}',
    b'{"session": -1e400}',
    b'{"session": 1' + b"0" * 5000 + b"}",
    b'{"session": 99999999999999999999999999}',
    b'{"session": NaN}',
    b'{"session": Infinity}',
    b'{"hash": 1e400}',
    b'{"request": 1e400}',
    b'{"answers": {"color": 1e400}}',
    b"\xef\xbb\xbf{}",
    b"{} {}",
    b"{}x",
    b"   ",
    b"",
    b"\x00",
    b'"just a string"',
    b"null",
    b"true",
    b"12",
]


def _post_urls(permission_approval: Any, question_approval: Any, policy: Any, session: Any) -> list[tuple[str, str]]:
    return [
        ("POST", "/api/v1/runs/"),
        ("POST", f"/api/v1/approvals/{permission_approval.pk}/approve/"),
        ("POST", f"/api/v1/approvals/{permission_approval.pk}/deny/"),
        ("POST", f"/api/v1/approvals/{question_approval.pk}/answer/"),
        ("POST", f"/api/v1/policies/{policy.pk}/evaluate/"),
        ("PATCH", f"/api/v1/sessions/{session.pk}/"),
    ]


@pytest.mark.parametrize("raw", RAW_BODIES, ids=lambda b: repr(b[:24]))
def test_raw_bodies(api: Any, permission_approval: Any, question_approval: Any, policy: Any, session: Any, raw: bytes) -> None:
    for method, url in _post_urls(permission_approval, question_approval, policy, session):
        with rolled_back():
            if url == "/api/v1/runs/":
                _post_run(api, raw=raw)
            else:
                _send(api, method, url, raw=raw)


@FUZZ
@given(
    raw=st.binary(max_size=64) | st.text(max_size=40).map(lambda s: s.encode("utf-8", "surrogatepass")), index=st.integers(0, 5)
)
def test_random_bytes(
    api: Any, permission_approval: Any, question_approval: Any, policy: Any, session: Any, raw: bytes, index: int
) -> None:
    method, url = _post_urls(permission_approval, question_approval, policy, session)[index]
    with rolled_back():
        if url == "/api/v1/runs/":
            _post_run(api, raw=raw)
        else:
            _send(api, method, url, raw=raw)


# --- Query strings and ids ---------------------------------------------------------------------

QUERY_VALUES = st.sampled_from(
    ["²", "١", "٣٢", "-1", "0", "1.5", "1e3", " 1", "0x10", str(2**63), str(10**30), "\x00", "pending", ""]
) | st.text(max_size=8)


@FUZZ
@given(
    path=st.sampled_from(["/api/v1/runs/", "/api/v1/approvals/", "/api/v1/runs/{run}/activities/"]),
    params=st.dictionaries(st.sampled_from(["status", "run", "after", "limit", "offset"]), QUERY_VALUES, max_size=3),
)
def test_list_filters_and_pagination(api: Any, permission_approval: Any, path: str, params: dict[str, str]) -> None:
    from urllib.parse import urlencode

    url = path.format(run=permission_approval.run_id) + "?" + urlencode(params)
    _send(api, "GET", url)


@pytest.mark.parametrize(
    "method,url",
    [
        ("GET", "/api/v1/runs/{n}/"),
        ("GET", "/api/v1/runs/{n}/activities/"),
        ("POST", "/api/v1/runs/{n}/cancel/"),
        ("GET", "/api/v1/approvals/{n}/"),
        ("POST", "/api/v1/approvals/{n}/approve/"),
        ("POST", "/api/v1/approvals/{n}/deny/"),
        ("POST", "/api/v1/approvals/{n}/answer/"),
        ("GET", "/api/v1/sessions/{n}/"),
        ("PATCH", "/api/v1/sessions/{n}/"),
        ("GET", "/api/v1/sessions/{n}/grants/"),
        ("DELETE", "/api/v1/grants/{n}/"),
        ("POST", "/api/v1/policies/{n}/evaluate/"),
    ],
)
@pytest.mark.parametrize("n", [0, 2**31, 2**63, 10**30])
def test_unknown_ids_are_404(api: Any, method: str, url: str, n: int) -> None:
    response = _send(api, method, url.format(n=n), {} if method != "GET" else None)
    assert response.status_code == 404, response.content


# --- Inputs that once crashed the server (found by fuzzing), and what they get now ------------


@pytest.mark.parametrize(
    "method,url,body,status,field",
    [
        # `"²".isdigit()` is true, and int("²") raised ValueError.
        pytest.param("GET", "/api/v1/approvals/?run=%C2%B2", None, 400, "run", id="approvals-run-superscript-digit"),
        # A run id past 64 bits reached SQLite (OverflowError).
        pytest.param("GET", "/api/v1/approvals/?run=99999999999999999999999", None, 400, "run", id="approvals-run-huge"),
        pytest.param("GET", "/api/v1/runs/{run}/activities/?after=99999999999999999999999", None, 400, "after", id="activities-after-huge"),
        # A huge ?limit= reached SQLite; the pagination now caps it.
        pytest.param("GET", "/api/v1/runs/?limit=99999999999999999999999", None, 200, None, id="runs-limit-huge"),
        pytest.param("GET", "/api/v1/approvals/?limit=99999999999999999999999", None, 200, None, id="approvals-limit-huge"),
        pytest.param("GET", "/api/v1/runs/{run}/activities/?limit=99999999999999999999999", None, 200, None, id="activities-limit-huge"),
        pytest.param("GET", "/api/v1/runs/?offset=99999999999999999999999", None, 200, None, id="runs-offset-huge"),
        # Path.expanduser() raised RuntimeError for an unknown user; is_dir() raised ENAMETOOLONG.
        pytest.param("POST", "/api/v1/runs/", {**VALID_RUN, "workspace": "~nosuchuser"}, 400, "workspace", id="workspace-unknown-user"),
        pytest.param("POST", "/api/v1/runs/", {**VALID_RUN, "workspace": "/tmp/" + "a" * 300}, 400, "workspace", id="workspace-name-too-long"),
        # float(10**400) raised OverflowError; 1e12 s was accepted and then overflowed the deadline.
        pytest.param(
            "POST", "/api/v1/runs/", {**VALID_RUN, "run_policy": {"approvals": {"timeout_s": 10**400}}}, 400,
            "approvals.timeout_s", id="timeout-int-too-large",
        ),
        pytest.param(
            "POST", "/api/v1/runs/", {**VALID_RUN, "run_policy": {"approvals": {"timeout_s": 1e12}}}, 400,
            "approvals.timeout_s", id="timeout-past-the-calendar",
        ),
    ],
)
def test_inputs_that_once_crashed_get_a_clear_answer(
    api: Any, permission_approval: Any, method: str, url: str, body: Any, status: int, field: str | None
) -> None:
    url = url.format(run=permission_approval.run_id)
    with rolled_back():
        response = _post_run(api, body) if url == "/api/v1/runs/" else _send(api, method, url, body)
        assert response.status_code == status, response.content
        if field is not None:
            assert response.json()["field"] == field


def test_the_longest_accepted_timeout_still_gates_a_request(api: Any) -> None:
    from approvals.gate import gate_request
    from approvals.policy.run_policy import MAX_TIMEOUT_S

    response = _post_run(api, {**VALID_RUN, "run_policy": {"approvals": {"timeout_s": MAX_TIMEOUT_S}}})
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": WRITE_F_COMMAND}, cwd=run.workspace, subtype="command")
    assert outcome.outcome == "wait"


def test_answers_and_decline_together_are_refused(api: Any, question_approval: Any) -> None:
    with rolled_back():
        response = _send(
            api, "POST", f"/api/v1/approvals/{question_approval.pk}/answer/",
            {"hash": question_approval.hash, "answers": {"color": ["Red"]}, "decline": True},
        )
        assert response.status_code == 400
        assert response.json()["code"] == "invalid_decision"
