"""Sessions pages, follow-up prompts, the New run form's session choice, and the run page's
paginated timeline (issue 11)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

from runs.models import Activity, Run
from tests.console.conftest import DECIDE, htmx_headers

pytestmark = pytest.mark.django_db

PERMS = (DECIDE, "runs.add_run", "runs.change_run", "runs.change_agentsession", "approvals.change_grant")
SCENARIO = {"steps": [{"message": "hi"}]}


def scripted_run(user: Any, *, prompt: str = "first", session: Any = None, **extra: Any) -> Run:
    from runs.services import run_create

    return run_create(driver="scripted", prompt=prompt, scenario=SCENARIO, user=user, session=session, **extra)


# --- Sessions list and page --------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/sessions/", "/sessions/1/"])
def test_sessions_pages_require_login(client: Client, path: str) -> None:
    response = client.get(path)
    assert response.status_code == HTTPStatus.FOUND and "/accounts/login/" in response["Location"]


def test_sessions_list_shows_runs_modes_grants_and_last_activity(
    client: Client, alice: Any, make_approval: Callable[..., Any], django_assert_max_num_queries: Any
) -> None:
    from approvals.services import grant_create
    from runs.services import session_set_modes

    first = scripted_run(alice, prompt="Refactor the parser\nmore text")
    for i in range(4):
        scripted_run(alice, prompt=f"turn {i}", session=first.session)
    session_set_modes(session=first.session, runtime_mode="auto-accept-edits", interaction_mode="plan", user=alice)
    grant_create(session_id=first.session_id, rule={"tool": "bash", "match": "npm run build"})
    waiting = make_approval()
    client.force_login(alice)
    client.get("/sessions/")
    with django_assert_max_num_queries(8):
        html = client.get("/sessions/").content.decode()
    card = html[html.index(f'href="/sessions/{first.session_id}/"'):]
    card = card[: card.index("</li>\n  \n")] if "</li>\n  \n" in card else card
    assert "<dt>Runs</dt><dd>5</dd>" in card and "Auto-accept edits" in card and "Plan" in card
    assert "<dt>Grants</dt><dd>1</dd>" in card
    assert "Last activity" in card and "just now" in card
    assert card.count('href="/runs/') == 3  # the latest three runs, and how many there are
    assert "5 runs in all" in card
    assert f'href="/sessions/{waiting.run.session_id}/"' in html and "1 waiting" in html


def test_session_page_lists_its_runs_and_waiting_cards_and_offers_a_follow_up(
    client: Client, alice: Any, make_approval: Callable[..., Any]
) -> None:
    approval = make_approval(user=alice)
    session = approval.run.session
    other = make_approval("git push origin elsewhere")
    client.force_login(alice)
    html = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f'id="approval-{approval.pk}"' in html and f'id="approval-{other.pk}"' not in html
    assert f'id="run-row-{approval.run_id}"' in html
    assert f'ws-connect="/ws/inbox/?session={session.pk}&amp;view=session"' in html
    assert "Continue this session" in html and f'action="/sessions/{session.pk}/continue/"' in html
    assert 'name="scenario"' in html  # a scripted session's next turn is a scenario
    assert 'id="session-modes"' in html and 'name="from" value="session"' in html
    cards = client.get(f"/sessions/{session.pk}/", headers={"HX-Request": "true", "HX-Target": "approvals"}).content.decode()
    assert "<html" not in cards and f'id="approval-{approval.pk}"' in cards
    assert client.get("/sessions/999999/").status_code == HTTPStatus.NOT_FOUND


def test_modes_and_grants_change_from_the_session_page(csrf_client: Callable[[Any], Client], alice: Any) -> None:
    from approvals.services import grant_create

    run = scripted_run(alice)
    grant = grant_create(session_id=run.session_id, rule={"tool": "bash", "match": "npm run build"})
    client = csrf_client(alice)
    modes = client.post(f"/sessions/{run.session_id}/modes/", {"runtime_mode": "auto-accept-edits", "from": "session"},
                        headers=htmx_headers(client))
    assert "Saved." in modes.content.decode() and 'name="from" value="session"' in modes.content.decode()
    revoked = client.post(f"/grants/{grant.pk}/revoke/", {"from": "session"}, headers=htmx_headers(client))
    assert 'id="session-grants"' in revoked.content.decode() and "Nothing yet." in revoked.content.decode()
    grant.refresh_from_db()
    assert grant.revoked_at is not None


# --- Follow-up prompts -----------------------------------------------------------------------


def test_a_follow_up_starts_the_next_run_of_the_session_under_the_same_policy(
    csrf_client: Callable[[Any], Client], alice: Any, tmp_path: Any
) -> None:
    from approvals.models import Policy
    from approvals.services import policy_save

    policy_save(policy=Policy(name="strict", document={"default": "deny"}))  # stricter than the default: anyone may name it
    workspace = tmp_path / "project"
    workspace.mkdir()
    first = scripted_run(alice, policy_name="strict", workspace=str(workspace), run_policy={"approvals": {"timeout_s": 20}})
    client = csrf_client(alice)
    page = client.get(f"/runs/{first.pk}/").content.decode()
    assert "Continue this session" in page  # on the session's latest run

    scenario = json.dumps({"steps": [{"message": "second turn"}]})
    response = client.post(f"/sessions/{first.session_id}/continue/", {"prompt": "And now the tests", "scenario": scenario},
                           headers=htmx_headers(client))

    second = Run.objects.exclude(pk=first.pk).get()
    assert response.status_code == HTTPStatus.OK and response["HX-Redirect"] == f"/runs/{second.pk}/"
    assert (second.session_id, second.driver, second.policy, second.workspace) == (first.session_id, "scripted", first.policy, first.workspace)
    assert second.prompt == "And now the tests" and second.scenario == {"steps": [{"message": "second turn"}]}
    assert second.run_policy_input == {"approvals": {"timeout_s": 20}} and second.created_by == alice
    assert "Continue this session" not in client.get(f"/runs/{first.pk}/").content.decode()  # an older run of the session


def test_a_follow_up_for_an_agent_takes_only_a_prompt(csrf_client: Callable[[Any], Client], alice: Any) -> None:
    from runs.services import run_create

    first = run_create(driver="claude-code", prompt="Remember banana", user=alice)
    client = csrf_client(alice)
    assert 'name="scenario"' not in client.get(f"/sessions/{first.session_id}/").content.decode()
    response = client.post(f"/sessions/{first.session_id}/continue/", {"prompt": "What was the word?", "csrfmiddlewaretoken": client.csrf_token})  # type: ignore[attr-defined]
    second = Run.objects.exclude(pk=first.pk).get()
    assert response.status_code == HTTPStatus.FOUND and response["Location"] == f"/runs/{second.pk}/"
    assert (second.driver, second.session_id, second.scenario) == ("claude-code", first.session_id, None)


def test_a_follow_up_is_refused_with_its_reason(
    csrf_client: Callable[[Any], Client], alice: Any, viewer: Any, make_user: Callable[..., Any]
) -> None:
    first = scripted_run(alice)
    scenario = json.dumps(SCENARIO)
    carol = csrf_client(make_user("carol", superuser=False, perms=PERMS))
    assert "Continue this session" not in carol.get(f"/sessions/{first.session_id}/").content.decode()
    refused = carol.post(f"/sessions/{first.session_id}/continue/", {"prompt": "mine now", "scenario": scenario, "csrfmiddlewaretoken": carol.csrf_token})  # type: ignore[attr-defined]
    assert refused.status_code == HTTPStatus.FORBIDDEN
    assert "created by someone else" in refused.content.decode() and "runs.override_policy" in refused.content.decode()
    swapped = carol.post(f"/sessions/{first.session_id}/continue/", {"prompt": "mine now", "scenario": scenario}, headers=htmx_headers(carol))
    assert swapped.status_code == HTTPStatus.OK and 'role="alert"' in swapped.content.decode()  # htmx swaps it in the form

    client = csrf_client(alice)
    missing = client.post(f"/sessions/{first.session_id}/continue/", {"prompt": ""}, headers=htmx_headers(client))
    assert "This field is required." in missing.content.decode() and "needs a scenario" in missing.content.decode()
    victor = csrf_client(viewer)
    assert victor.post(f"/sessions/{first.session_id}/continue/", {"prompt": "x"}, headers=htmx_headers(victor)).status_code == HTTPStatus.FORBIDDEN
    assert Run.objects.count() == 1


# --- New run: pick a session --------------------------------------------------------------------


def test_new_run_form_offers_the_users_own_sessions(csrf_client: Callable[[Any], Client], alice: Any, make_user: Callable[..., Any]) -> None:
    mine = scripted_run(alice)
    theirs = scripted_run(make_user("bob", superuser=False))
    client = csrf_client(alice)
    form = client.get("/runs/new/").content.decode()
    select = re.search(r'<select name="session"[^>]*>(.*?)</select>', form, re.S)
    assert select, form
    assert '<option value="" selected>New session</option>' in select.group(1)
    assert f'<option value="{mine.session_id}">' in select.group(1) and f'value="{theirs.session_id}"' not in select.group(1)

    response = client.post("/runs/new/", {"driver": "scripted", "scenario": json.dumps(SCENARIO), "session": mine.session_id,
                                          "csrfmiddlewaretoken": client.csrf_token})  # type: ignore[attr-defined]
    assert response.status_code == HTTPStatus.FOUND
    assert Run.objects.filter(session_id=mine.session_id).count() == 2


# --- Run page: the timeline in pages ------------------------------------------------------------


def test_long_timelines_show_the_latest_activities_and_load_earlier_ones(client: Client, alice: Any) -> None:
    from runs.timeline import activity_record

    run = scripted_run(alice)
    for i in range(130):
        activity_record(run_id=run.pk, kind="message", event="message", payload={"text": f"note {i}"})
    client.force_login(alice)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    seqs = [int(s) for s in re.findall(r'data-seq="(\d+)"', html)]
    assert seqs == list(range(32, 132))  # the latest 100 of 131
    earlier = re.search(r'hx-get="(/runs/\d+/\?before=(\d+))"', html)
    assert earlier and earlier.group(2) == "32"

    older = client.get(earlier.group(1), headers={"HX-Request": "true", "HX-Target": "timeline"}).content.decode()
    assert [int(s) for s in re.findall(r'data-seq="(\d+)"', older)] == list(range(1, 32))
    assert 'id="timeline-earlier"' in older and 'hx-swap-oob="true"' in older and "before=" not in older

    caught_up = client.get(f"/runs/{run.pk}/?after=129", headers={"HX-Request": "true", "HX-Target": "timeline"}).content.decode()
    assert [int(s) for s in re.findall(r'data-seq="(\d+)"', caught_up)] == [130, 131]


def test_tool_results_show_exit_code_duration_and_fold_long_output(client: Client, alice: Any) -> None:
    from approvals.gate import gate_request, step_finish
    from runs.models import Step

    run = scripted_run(alice)
    short = gate_request(run_id=run.pk, tool="bash", input={"command": "ls"}, cwd=run.workspace, subtype="command")
    step_finish(run_id=run.pk, step_id=short.step_id, output="a\nb", exit_code=0)
    long = gate_request(run_id=run.pk, tool="bash", input={"command": "cat log"}, cwd=run.workspace, subtype="command")
    step_finish(run_id=run.pk, step_id=long.step_id, output="\n".join(f"line {i}" for i in range(40)), exit_code=2)
    assert Step.objects.filter(run=run, started_at__isnull=False, finished_at__isnull=False).count() == 2
    client.force_login(alice)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert re.search(r'exit code <span class="exit">0</span> in <span class="duration">\d+\.\d s</span>', html)
    assert re.search(r'exit code <span class="exit exit-bad">2</span>', html)
    assert '<details class="fold"><summary>Output: 40 lines (show)</summary>' in html
    assert html.count('<details class="fold">') == 1


def test_an_edit_is_shown_as_a_unified_diff(client: Client, alice: Any, make_approval: Callable[..., Any]) -> None:
    make_approval(tool="edit", subtype="file-change",
                  input={"file_path": "src/app.py", "old_string": "a = 1\nb = 2\n", "new_string": "a = 1\nb = 3\n"},
                  presentation={"title": "Edit src/app.py"}, policy={"default": "ask", "classes": {"local-mutation": "ask"}})
    client.force_login(alice)
    html = client.get("/").content.decode()
    diff = html[html.index('aria-label="Edit from the agent, as a unified diff"'):]
    diff = diff[: diff.index("</pre>")]
    assert '<span class="file">--- a/src/app.py</span>' in diff and '<span class="hunk">@@' in diff
    assert '<span class="del">-b = 2</span>' in diff and '<span class="add">+b = 3</span>' in diff
    assert '<span class="ctx"> a = 1</span>' in diff


def test_a_pushed_tool_result_row_has_its_duration(alice: Any) -> None:
    from approvals.gate import gate_request, step_finish
    from runs import fragments

    run = scripted_run(alice)
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": "ls"}, cwd=run.workspace, subtype="command")
    step_finish(run_id=run.pk, step_id=outcome.step_id, output="x", exit_code=0)
    finished = Activity.objects.get(run=run, event="tool.finished")
    assert 'class="duration"' in fragments.activity_appended(finished.pk)
