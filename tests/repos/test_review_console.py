"""The console around a run's changes: the run page's "Changes so far" section, fetched
again after each finished step (pushed over the run's WebSocket); the inbox card of a run on
a repository links to its changes; a delivery's card shows what will be pushed."""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from repos.models import Repository
from repos.services import delivery_request, workspace_prepare
from runs.fragments import activity_appended
from runs.models import Run
from runs.services import run_create
from runs.timeline import activity_record
from tests.repos.test_delivery import finished_run

pytestmark = pytest.mark.django_db


def console(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_run_page_shows_the_changes_so_far_and_refreshes_them_after_each_step(reviewer: Any, remote: Path,
                                                                                 tmp_path: Path) -> None:
    Repository.objects.create(name="app", url=f"file://{remote}", default_ref="main")
    run = workspace_prepare(run_id=run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, repository="app",
                                              user=reviewer, prompt="p").pk)
    client = console(reviewer)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="changes-live"' in page and f'hx-get="/runs/{run.pk}/changes/"' in page
    (Path(run.workspace) / "NOTES.md").write_text("one\ntwo\n")
    section = client.get(f"/runs/{run.pk}/changes/", headers={"HX-Request": "true"})
    assert section.status_code == HTTPStatus.OK
    html = section.content.decode()
    assert "<html" not in html  # the section only, for the run page
    assert "1 file changed" in html and "<code>NOTES.md</code> added" in html and "+2" in html
    # A finished step, pushed to the run page: the section fetches itself again.
    step = activity_record(run_id=run.pk, kind="tool", event="tool.finished", payload={"step": 1, "tool": "bash"})
    pushed = activity_appended(step.pk)
    assert 'id="changes-refresh" hx-swap-oob="true"' in pushed and 'hx-trigger="load"' in pushed
    assert f'hx-get="/runs/{run.pk}/changes/"' in pushed
    message = activity_record(run_id=run.pk, kind="message", event="message", payload={"text": "hi"})
    assert "changes-refresh" not in activity_appended(message.pk)  # only what can change files


def test_a_run_without_a_repository_has_no_changes_section(reviewer: Any, tmp_path: Path) -> None:
    run = run_create(driver="scripted", scenario={"steps": [{"message": "x"}]}, workspace=str(tmp_path), user=reviewer)
    assert 'id="changes-live"' not in console(reviewer).get(f"/runs/{run.pk}/").content.decode()
    step = activity_record(run_id=run.pk, kind="tool", event="tool.finished", payload={"step": 1, "tool": "bash"})
    assert "changes-refresh" not in activity_appended(step.pk)


def test_a_delivery_card_shows_what_will_be_pushed_and_links_to_the_changes(reviewer: Any, make_user: Any,
                                                                            remote: Path) -> None:
    run = finished_run(reviewer, remote)
    (Path(run.workspace) / "logo.bin").write_bytes(b"\0\1\2")
    delivery = delivery_request(run=run, user=reviewer)
    inbox = console(make_user("bob")).get("/").content.decode()
    card = inbox[inbox.index(f'id="approval-{delivery.approval_id}"'):]
    card = card[:card.index("</article>")]
    assert "What Gatehouse will push" in card
    assert f'<code class="delivery-branch">gatehouse/run-{run.pk}</code>' in card and "<strong>app</strong>" in card
    assert f'title="{delivery.commit}">{delivery.commit[:12]}</code>' in card
    assert f'title="{run.base_commit}">{run.base_commit[:12]}</code>' in card
    rows = card[card.index("<tbody>"):card.index("</tbody>")]
    assert "<td><code>NOTES.md</code></td><td>added</td>" in rows and '<span class="added-count">+1</span>' in rows
    assert "<td><code>README.md</code></td><td>modified</td>" in rows
    assert "<td><code>logo.bin</code></td><td>modified</td><td class=\"file-stats\">binary</td>" in rows
    assert "From the agent" not in card  # Gatehouse asks this, not the agent
    assert f'<a href="/runs/{run.pk}/changes/" class="changes-link">Changes so far</a>' in card


def test_a_permission_card_of_a_repository_run_links_to_its_changes(reviewer: Any, make_user: Any, remote: Path) -> None:
    from approvals.models import Approval

    run = finished_run(reviewer, remote)
    Run.objects.filter(pk=run.pk).update(status="waiting", finished_at=None)
    approval = Approval.objects.create(run=run, kind=Approval.Kind.PERMISSION, capability={}, presentation={"title": "t"},
                                       request={"tool": "bash", "input": {"command": "git push"}}, hash="h" * 64)
    inbox = console(make_user("bob")).get("/").content.decode()
    card = inbox[inbox.index(f'id="approval-{approval.pk}"'):]
    assert f'<a href="/runs/{run.pk}/changes/" class="changes-link">Changes so far</a>' in card[:card.index("</article>")]
