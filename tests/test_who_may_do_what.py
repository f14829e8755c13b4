"""Who may see and do what, on every surface (issue 34): roles × surfaces, each cell checked.

The roles (`approvals.access`): nobody (signed in, no permission), two run starters
(`runs.add_run`), a reviewer (`approvals.change_approval`), an administrator (superuser).
The world: the starter's run A waits on an approval, in a session with a grant; the other
starter's run B asked nothing. A cell is the status a request answers, or the rows a
list shows; what a role may not see answers 404, as if it did not exist.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import Client
from rest_framework.test import APIClient

from project.routing import websocket_urlpatterns
from runs.models import Run

ROLES = ("nobody", "starter", "other", "reviewer", "admin")
PERMS = {
    "nobody": (),
    "starter": ("runs.add_run",),
    "other": ("runs.add_run",),
    "reviewer": ("approvals.change_approval",),
}
ASKED = "git push origin main"  # asked under the default policy


@dataclass
class World:
    users: dict[str, Any]
    run_a: Run
    run_b: Run
    approval: Any
    grant: Any

    def api(self, role: str) -> APIClient:
        client = APIClient()
        client.force_authenticate(self.users[role])
        return client

    def console(self, role: str) -> Client:
        client = Client()
        client.force_login(self.users[role])
        return client

    def fill(self, path: str) -> str:
        return path.format(a=self.run_a.pk, b=self.run_b.pk, approval=self.approval.pk, session=self.run_a.session_id,
                           grant=self.grant.pk, session_b=self.run_b.session_id)


def make_world(make_user: Callable[..., Any]) -> World:
    from approvals.gate import gate_request
    from approvals.models import Approval
    from approvals.services import grant_create
    from runs.services import run_create

    users = {role: make_user(role, superuser=False, perms=PERMS[role]) for role in PERMS}
    users["admin"] = make_user("admin")
    scenario = {"steps": [{"message": "hello"}]}
    run_a = run_create(driver="scripted", prompt="secret prompt A", scenario=scenario, user=users["starter"])
    outcome = gate_request(run_id=run_a.pk, tool="bash", input={"command": ASKED}, cwd=run_a.workspace,
                           presentation={"title": "Run a command", "command": ASKED})
    assert outcome.outcome == "wait"
    approval = Approval.objects.get(pk=outcome.approval_id)
    grant = grant_create(session_id=run_a.session_id, rule={"tool": "bash", "match": "npm test"}, user=users["admin"])
    run_b = run_create(driver="scripted", prompt="secret prompt B", scenario=scenario, user=users["other"])
    return World(users, run_a, run_b, approval, grant)


@pytest.fixture
def world(make_user: Callable[..., Any]) -> World:
    return make_world(make_user)


# --- REST: what each list shows ------------------------------------------------------------------

A, B, APPROVAL, SESSION, SESSION_B, GRANT = "A", "B", "approval", "session", "session_b", "grant"


def _ids(world: World, rows: list[dict[str, Any]], kind: str) -> set[str]:
    names = {
        "runs": {world.run_a.pk: A, world.run_b.pk: B},
        "approvals": {world.approval.pk: APPROVAL},
        "sessions": {world.run_a.session_id: SESSION, world.run_b.session_id: SESSION_B},
        "grants": {world.grant.pk: GRANT},
    }[kind]
    return {names[row["id"]] for row in rows if row["id"] in names}


LISTS = [
    # (path, kind, {role: what it shows})
    ("/api/v1/runs/", "runs", {"nobody": set(), "starter": {A}, "other": {B}, "reviewer": {A}, "admin": {A, B}}),
    ("/api/v1/approvals/", "approvals", {"nobody": set(), "starter": {APPROVAL}, "other": set(), "reviewer": {APPROVAL}, "admin": {APPROVAL}}),
    ("/api/v1/approvals/?status=pending", "approvals",
     {"nobody": set(), "starter": {APPROVAL}, "other": set(), "reviewer": {APPROVAL}, "admin": {APPROVAL}}),
    ("/api/v1/sessions/", "sessions",
     {"nobody": set(), "starter": {SESSION}, "other": {SESSION_B}, "reviewer": {SESSION}, "admin": {SESSION, SESSION_B}}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "kind", "expected"), LISTS, ids=[row[0] for row in LISTS])
def test_each_list_shows_each_role_what_it_may_see(world: World, path: str, kind: str, expected: dict[str, set[str]]) -> None:
    for role in ROLES:
        response = world.api(role).get(path)
        assert response.status_code == HTTPStatus.OK, (role, response.content)
        assert _ids(world, response.json()["results"], kind) == expected[role], role


@pytest.mark.django_db
def test_an_anonymous_caller_reads_nothing(world: World) -> None:
    for path in ("/api/v1/runs/", "/api/v1/approvals/", "/api/v1/sessions/", world.fill("/api/v1/runs/{a}/")):
        assert APIClient().get(path).status_code in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN), path


# --- REST: each endpoint, each role ---------------------------------------------------------------

OK, NOT_FOUND, FORBIDDEN = HTTPStatus.OK, HTTPStatus.NOT_FOUND, HTTPStatus.FORBIDDEN
READS = [
    # (path, {role: status}); roles not named answer 200
    ("/api/v1/runs/{a}/", {"nobody": NOT_FOUND, "other": NOT_FOUND}),
    ("/api/v1/runs/{b}/", {"nobody": NOT_FOUND, "starter": NOT_FOUND, "reviewer": NOT_FOUND}),
    ("/api/v1/runs/{a}/activities/", {"nobody": NOT_FOUND, "other": NOT_FOUND}),
    ("/api/v1/approvals/{approval}/", {"nobody": NOT_FOUND, "other": NOT_FOUND}),
    ("/api/v1/sessions/{session}/", {"nobody": NOT_FOUND, "other": NOT_FOUND}),
    ("/api/v1/sessions/{session}/grants/", {"nobody": NOT_FOUND, "other": NOT_FOUND}),
    ("/api/v1/sessions/{session_b}/", {"nobody": NOT_FOUND, "starter": NOT_FOUND, "reviewer": NOT_FOUND}),
    ("/api/v1/drivers/", {}),
    ("/api/v1/webhooks/", {"nobody": FORBIDDEN, "starter": FORBIDDEN, "other": FORBIDDEN, "reviewer": FORBIDDEN}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "refused"), READS, ids=[row[0] for row in READS])
def test_each_read_endpoint_answers_each_role(world: World, path: str, refused: dict[str, int]) -> None:
    for role in ROLES:
        response = world.api(role).get(world.fill(path))
        assert response.status_code == refused.get(role, OK), (role, response.content)


@pytest.mark.django_db
def test_policies_show_who_may_name_them(world: World) -> None:
    names = {role: {p["name"] for p in world.api(role).get("/api/v1/policies/").json()["results"]} for role in ROLES}
    assert names["nobody"] == set() and names["reviewer"] == set()
    assert "Standard review" in names["starter"] and "Read-only review" in names["starter"]
    assert "Full access (audited)" not in names["starter"]
    assert "Full access (audited)" in names["admin"]


WRITES = [
    # (method, path, body, {role: status}): what each role gets
    ("post", "/api/v1/runs/{a}/cancel/", {},
     {"nobody": NOT_FOUND, "other": NOT_FOUND, "reviewer": FORBIDDEN, "starter": OK, "admin": OK}),
    ("post", "/api/v1/approvals/{approval}/approve/", {"hash": "{hash}"},
     {"nobody": FORBIDDEN, "other": FORBIDDEN, "starter": FORBIDDEN, "reviewer": OK, "admin": OK}),
    ("patch", "/api/v1/sessions/{session}/", {"interaction_mode": "plan"},
     {"nobody": NOT_FOUND, "other": NOT_FOUND, "reviewer": FORBIDDEN, "starter": OK, "admin": OK}),
    ("delete", "/api/v1/grants/{grant}/", None,
     {"nobody": NOT_FOUND, "other": NOT_FOUND, "reviewer": FORBIDDEN, "starter": OK, "admin": OK}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("method", "path", "body", "expected"), WRITES, ids=[f"{row[0]} {row[1]}" for row in WRITES])
def test_each_write_endpoint_answers_each_role(make_user: Callable[..., Any], method: str, path: str, body: Any,
                                               expected: dict[str, int]) -> None:
    for role in ROLES:
        world = make_world(lambda name, role=role, **kw: make_user(f"{name}-{role}", **kw))  # a fresh world per role
        data = {k: (world.approval.hash if v == "{hash}" else v) for k, v in (body or {}).items()}
        response = getattr(world.api(role), method)(world.fill(path), data, format="json")
        assert response.status_code == expected[role], (role, response.content)


# --- Streams (SSE) and WebSockets ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_the_run_stream_is_refused_to_who_may_not_see_the_run(make_user: Callable[..., Any]) -> None:
    from django.test import AsyncClient

    from tests.integrations.test_streams import Stream

    world = await sync_to_async(make_world)(make_user)
    for role, status in (("nobody", 404), ("other", 404), ("starter", 200), ("reviewer", 200)):
        client = AsyncClient()
        await client.aforce_login(world.users[role])
        response = await client.get(f"/api/v1/runs/{world.run_a.pk}/activities/stream/")
        assert response.status_code == status, role
        if status == 200:
            stream = Stream(response)
            events = await stream.until(lambda items: any(i.get("event") == "run.created" for i in items))
            assert any(i.get("event") == "run.created" for i in events)
            await stream.close()


@pytest.mark.django_db(transaction=True)
async def test_the_approvals_stream_carries_only_what_the_role_may_see(make_user: Callable[..., Any], settings: Any) -> None:
    from tests.integrations.test_streams import open_stream

    settings.GATEHOUSE_SSE_KEEPALIVE_S = 0.1
    world = await sync_to_async(make_world)(make_user)
    for role, sees in (("starter", True), ("reviewer", True), ("other", False), ("nobody", False)):
        stream = await open_stream("/api/v1/approvals/stream/", world.users[role])
        # the snapshot comes first; a keep-alive only once a read after it found nothing
        items = await stream.until(lambda items: {"comment": "keep-alive"} in items)
        pending = [i["data"]["id"] for i in items if i.get("event") == "approval.pending"]
        assert (world.approval.pk in pending) is sees, (role, pending)
        await stream.close()


def communicator(path: str, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), path)
    comm.scope["user"] = user
    return comm


@pytest.mark.django_db(transaction=True)
async def test_sockets_push_only_what_the_role_may_see(make_user: Callable[..., Any]) -> None:
    from approvals.gate import gate_request

    world = await sync_to_async(make_world)(make_user)
    # the run page's socket: refused to who may not see the run
    for role, opens in (("nobody", False), ("other", False), ("starter", True), ("reviewer", True), ("admin", True)):
        comm = communicator(f"/ws/runs/{world.run_a.pk}/", world.users[role])
        assert (await comm.connect())[0] is opens, role
        await comm.disconnect()
    # the inbox's socket: a new request of run A reaches its starter and the reviewers only
    sockets = {role: communicator("/ws/inbox/", world.users[role]) for role in ROLES}
    for comm in sockets.values():
        assert (await comm.connect())[0]
        await comm.receive_output(timeout=5)  # the waiting count sent at connect
    outcome = await sync_to_async(gate_request)(run_id=world.run_a.pk, tool="bash", input={"command": "git push origin feature"},
                                                 cwd=world.run_a.workspace, presentation={"title": "t", "command": "git push origin feature"})
    assert outcome.outcome == "wait"
    card = f'id="approval-{outcome.approval_id}"'
    for role in ("starter", "reviewer", "admin"):
        while card not in (await sockets[role].receive_output(timeout=5)).get("text", ""):
            pass
    # by now the layer delivered the push to every socket: the others heard nothing of it
    for role in ("other", "nobody"):
        assert await sockets[role].receive_nothing(timeout=0.2), role
    await asyncio.gather(*(comm.disconnect() for comm in sockets.values()))


# --- Console pages and forms ------------------------------------------------------------------------

PAGES = [
    # (path, {role: status}); roles not named answer 200
    ("/runs/{a}/", {"nobody": NOT_FOUND, "other": NOT_FOUND}),
    ("/runs/{b}/", {"nobody": NOT_FOUND, "starter": NOT_FOUND, "reviewer": NOT_FOUND}),
    ("/sessions/{session}/", {"nobody": NOT_FOUND, "other": NOT_FOUND}),
    ("/sessions/{session_b}/", {"nobody": NOT_FOUND, "starter": NOT_FOUND, "reviewer": NOT_FOUND}),
    ("/", {}),
    ("/runs/", {}),
    ("/sessions/", {}),
    ("/runs/new/", {"nobody": FORBIDDEN, "reviewer": FORBIDDEN}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "refused"), PAGES, ids=[row[0] for row in PAGES])
def test_each_console_page_answers_each_role(world: World, path: str, refused: dict[str, int]) -> None:
    for role in ROLES:
        response = world.console(role).get(world.fill(path))
        assert response.status_code == refused.get(role, OK), role


@pytest.mark.django_db
def test_console_lists_show_only_what_the_role_may_see(world: World) -> None:
    for role in ROLES:
        client = world.console(role)
        pages = {path: client.get(path).content.decode() for path in ("/", "/runs/", "/sessions/")}
        sees_a = role in ("starter", "reviewer", "admin")
        sees_b = role in ("other", "admin")
        assert (f'href="/runs/{world.run_a.pk}/"' in pages["/runs/"]) is sees_a, role
        assert (f'href="/runs/{world.run_b.pk}/"' in pages["/runs/"]) is sees_b, role
        assert (f'id="approval-{world.approval.pk}"' in pages["/"]) is sees_a, role
        assert ("secret prompt B" in pages["/"] + pages["/runs/"] + pages["/sessions/"]) is sees_b, role
        assert (f'href="/sessions/{world.run_a.session_id}/"' in pages["/sessions/"]) is sees_a, role


def _cancelled(world: World) -> bool:
    return Run.objects.get(pk=world.run_a.pk).cancel_requested


def _approved(world: World) -> bool:
    world.approval.refresh_from_db()
    return world.approval.status == "approved"


def _planned(world: World) -> bool:
    return Run.objects.get(pk=world.run_a.pk).session.interaction_mode == "plan"


def _revoked(world: World) -> bool:
    world.grant.refresh_from_db()
    return world.grant.revoked_at is not None


def _continued(world: World) -> bool:
    return Run.objects.filter(session_id=world.run_a.session_id).count() == 2


# (path, data, what it did, {role: the status when refused}); roles not named may do it
FORMS = [
    ("/runs/{a}/cancel/", {}, _cancelled, {"nobody": NOT_FOUND, "other": NOT_FOUND, "reviewer": 302}),
    ("/approvals/{approval}/approve/", {"hash": "{hash}"}, _approved,
     {"nobody": FORBIDDEN, "other": FORBIDDEN, "starter": FORBIDDEN}),
    ("/sessions/{session}/modes/", {"interaction_mode": "plan"}, _planned,
     {"nobody": NOT_FOUND, "other": NOT_FOUND, "reviewer": 302}),
    ("/grants/{grant}/revoke/", {}, _revoked, {"nobody": NOT_FOUND, "other": NOT_FOUND, "reviewer": FORBIDDEN}),
    ("/sessions/{session}/continue/", {"prompt": "next", "scenario": '{"steps": [{"message": "x"}]}'}, _continued,
     {"nobody": FORBIDDEN, "other": NOT_FOUND, "reviewer": FORBIDDEN}),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "data", "done", "refused"), FORMS, ids=[row[0] for row in FORMS])
def test_each_console_form_answers_each_role(make_user: Callable[..., Any], path: str, data: dict[str, str],
                                             done: Callable[[World], bool], refused: dict[str, int]) -> None:
    for role in ROLES:
        world = make_world(lambda name, role=role, **kw: make_user(f"{name}-{role}", **kw))
        posted = {k: (world.approval.hash if v == "{hash}" else v) for k, v in data.items()}
        response = world.console(role).post(world.fill(path), posted)
        assert response.status_code == refused.get(role, 302), (role, response.status_code)
        assert done(world) is (role not in refused), role


@pytest.mark.django_db
def test_a_console_decision_without_the_hash_is_refused_like_the_api(world: World) -> None:
    from approvals.errors import HASH_REQUIRED

    client = world.console("reviewer")
    for path, data in ((f"/approvals/{world.approval.pk}/deny/", {"reason": "no"}),
                       (f"/approvals/{world.approval.pk}/approve/", {})):
        response = client.post(path, data, headers={"HX-Request": "true"})
        assert response.status_code == OK and HASH_REQUIRED.replace("'", "&#x27;") in response.content.decode()
    world.approval.refresh_from_db()
    assert world.approval.status == "pending"
    api = world.api("reviewer").post(f"/api/v1/approvals/{world.approval.pk}/deny/", {}, format="json")
    assert (api.status_code, api.json()["code"], api.json()["message"]) == (400, "hash_required", HASH_REQUIRED)


# --- The admin's token form ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_staff_user_mints_tokens_only_for_themselves(make_user: Callable[..., Any]) -> None:
    from integrations.models import ApiToken

    staff = make_user("staff", superuser=False, perms=("integrations.add_apitoken", "integrations.view_apitoken", "runs.add_run"))
    staff.is_staff = True
    staff.save()
    root = make_user("root")
    client = Client()
    client.force_login(staff)
    form = client.get("/admin/integrations/apitoken/add/").content.decode()
    assert ">staff</option>" in form and ">root</option>" not in form
    response = client.post("/admin/integrations/apitoken/add/", {"user": root.pk, "name": "x", "scopes": ["read"]})
    assert response.status_code == OK and "Select a valid choice" in response.content.decode()
    assert not ApiToken.objects.filter(user=root).exists()
    # for themselves, and only with scopes they may use
    response = client.post("/admin/integrations/apitoken/add/", {"user": staff.pk, "name": "mine", "scopes": ["read", "runs:write"]})
    assert ApiToken.objects.get(user=staff).scopes == ["read", "runs:write"]
    response = client.post("/admin/integrations/apitoken/add/", {"user": staff.pk, "name": "more", "scopes": ["webhooks:manage"]})
    assert not ApiToken.objects.filter(user=staff, name="more").exists()
    # a superuser mints for anyone
    admin = Client()
    admin.force_login(root)
    admin.post("/admin/integrations/apitoken/add/", {"user": staff.pk, "name": "for staff", "scopes": ["read"]})
    assert ApiToken.objects.filter(user=staff, name="for staff").exists()


@pytest.mark.django_db
def test_a_starter_follows_their_runs_requests_without_controls_they_may_not_use(world: World) -> None:
    starter = world.console("starter").get("/").content.decode()
    assert f'id="approval-{world.approval.pk}"' in starter
    assert '<p class="no-decide-note">Only reviewers decide requests' in starter
    assert '<fieldset class="controls" disabled' in starter
    reviewer = world.console("reviewer").get("/").content.decode()
    assert '<p class="no-decide-note" hidden>' in reviewer and '<fieldset class="controls" disabled' not in reviewer
