"""Deciding away from the console (issue 32.4): e-mail through a real SMTP server and the chat
webhook to a real local receiver, both sent by the worker's sender after the approval
commits; signed one-tap links that show before they decide, decide once, as the person they
were sent to, and refuse when used, expired, tampered with or stale; typed confirmation and
four eyes still hold; a person's page says what reaches them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from approvals.models import Approval, Policy
from infra.env import email_url_settings
from integrations.models import Notification, NotificationPreference, UsedLink
from integrations.notifications.links import link_token
from integrations.notifications.sender import notifications_send_due_once
from tests.integrations.receiver import Receiver
from tests.integrations.smtp import SMTPServer, parts

SECRET = "hunter2-is-not-a-password"
ASKED = f"git push https://deploy:{SECRET}@github.com/acme/app.git main"
TITLE = "Push <b>now</b> <!channel>"
LINK = re.compile(r"http://testserver(/a/[^/\s\"<>]+/)")


@pytest.fixture
def smtp(settings: Any) -> Iterator[SMTPServer]:
    with SMTPServer() as server:
        for name, value in email_url_settings("GATEHOUSE_EMAIL_URL", f"smtp://127.0.0.1:{server.port}").items():
            setattr(settings, name, value)
        settings.GATEHOUSE_EMAIL_ENABLED = True
        settings.DEFAULT_FROM_EMAIL = "Gatehouse <gatehouse@example.test>"
        yield server


@pytest.fixture(autouse=True)
def _links(settings: Any) -> None:
    settings.GATEHOUSE_BASE_URL = "http://testserver"


@pytest.fixture
def group(db: Any, make_user: Any) -> Group:
    """The default policy notifies "on call": alice and bob (reviewers), carol (no permission)."""
    on_call = Group.objects.create(name="on call")
    for name in ("alice", "bob", "carol"):
        user = make_user(name, superuser=name != "carol")
        user.email = f"{name}@example.test"
        user.save()
        user.groups.add(on_call)
    Policy.objects.filter(is_default=True).update(notify_group=on_call)
    return on_call


def _ask(*, run_policy: dict[str, Any] | None = None, user: Any = None) -> Approval:
    from approvals.gate import gate_request
    from runs.services import run_create

    run = run_create(driver="scripted", scenario={"steps": [{"tool": "bash", "input": {"command": ASKED}}]}, run_policy=run_policy or {"approvals": {"timeout_s": 600}},
                     user=user)
    outcome = gate_request(run_id=run.pk, tool="bash", input={"command": ASKED}, cwd=run.workspace, subtype="command",
                           presentation={"title": TITLE})
    assert outcome.approval_id is not None
    return Approval.objects.get(pk=outcome.approval_id)


def _user(name: str) -> Any:
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=name)


def _path(approval: Approval, user: Any, action: str) -> str:
    return f"/a/{link_token(approval, user=user, action=action)}/"


def _post(client: Client, path: str, **data: str) -> Any:
    """POST the link page's own form: the CSRF token from its GET (enforced)."""
    page = client.get(path)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert token, page.content.decode()
    return client.post(path, {"csrfmiddlewaretoken": token.group(1), **data})


def test_the_email_url_becomes_djangos_settings() -> None:
    assert email_url_settings("X", "smtp://127.0.0.1:2525") | {} == {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend", "EMAIL_HOST": "127.0.0.1", "EMAIL_PORT": 2525,
        "EMAIL_HOST_USER": "", "EMAIL_HOST_PASSWORD": "", "EMAIL_USE_TLS": False, "EMAIL_USE_SSL": False,
    }
    tls = email_url_settings("X", "smtp+tls://me%40x.test:p%2Fw@mail.x.test")
    assert (tls["EMAIL_PORT"], tls["EMAIL_USE_TLS"], tls["EMAIL_HOST_USER"], tls["EMAIL_HOST_PASSWORD"]) == (587, True, "me@x.test", "p/w")
    assert email_url_settings("X", "smtps://mail.x.test")["EMAIL_USE_SSL"] is True
    assert email_url_settings("X", "smtp://mail.x.test:25?tls=1")["EMAIL_USE_TLS"] is True
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="must start with smtp://"):
        email_url_settings("GATEHOUSE_EMAIL_URL", "http://mail.x.test")


@pytest.mark.django_db
def test_an_approval_emails_each_reviewer_of_the_policy_group_with_their_own_links(smtp: SMTPServer, group: Group) -> None:
    NotificationPreference.objects.create(user=_user("bob"), email=False, chat=True)
    approval = _ask()
    # Written with the approval, sent by the worker's sender: nothing went out in the gate.
    assert list(Notification.objects.values_list("channel", "user__username", "status")) == [("email", "alice", "pending")]
    assert smtp.messages == []

    assert notifications_send_due_once() == 1
    [(to, message)] = smtp.messages
    assert to == ["alice@example.test"] and message["From"] == "Gatehouse <gatehouse@example.test>"
    assert f"Run #{approval.run_id} asks" in message["Subject"]
    body = parts(message)
    text, html = body["text/plain"], body["text/html"]
    for part in (text, html):
        assert SECRET not in part and "[redacted]" in part  # the credential in the URL is masked
        assert "remote" in part  # the policy's reason (a remote mutation)
    assert "<b>now</b>" not in html and "&lt;b&gt;now&lt;/b&gt;" in html  # agent text escaped in the HTML part
    approve, deny = LINK.findall(text)[:2]
    assert approve != deny and set(LINK.findall(html)) >= {approve, deny}
    assert Notification.objects.get().status == "sent"

    # Alice's approve link: GET shows it and decides nothing; the POST decides, as alice, via "link".
    client = Client(enforce_csrf_checks=True)
    page = client.get(approve)
    assert page.status_code == HTTPStatus.OK and b"Approve once" in page.content and b"Deciding as alice" in page.content
    assert Approval.objects.get(pk=approval.pk).status == "pending"
    done = _post(client, approve)
    assert done.status_code == HTTPStatus.OK, done.content
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by.username, approval.decided_via) == ("approved", "alice", "link")
    # The decision went the way every decision goes: the run's timeline has it.
    from runs.models import Activity

    resolved = Activity.objects.get(run_id=approval.run_id, event="approval.resolved")
    assert resolved.payload["via"] == "link" and resolved.payload["by"] == "alice"


@pytest.mark.django_db
def test_the_chat_webhook_gets_text_slack_and_teams_show_with_links_and_names(settings: Any, group: Group) -> None:
    settings.GATEHOUSE_CHAT_SLACK_BLOCKS = True
    NotificationPreference.objects.create(user=_user("alice"), email=True, chat=False)
    with Receiver() as receiver:
        settings.GATEHOUSE_CHAT_WEBHOOK_URL = receiver.url
        approval = _ask()
        assert notifications_send_due_once() == 1
    [request] = receiver.requests
    assert request["headers"]["Content-Type"] == "application/json"
    body = json.loads(request["body"])
    text = body["text"]
    assert f"run #{approval.run_id} asks for approval" in text and "For: bob" in text and "alice" not in text
    assert "<!channel>" not in request["body"] and "&lt;!channel&gt;" in text  # agent text never pings a channel
    assert SECRET not in request["body"]
    [approve, deny] = LINK.findall(text)[:2]
    buttons = [e["url"] for e in body["blocks"][1]["elements"]]
    assert buttons[:2] == [f"http://testserver{approve}", f"http://testserver{deny}"]
    # A channel is not a person: its link asks to sign in, and shows nothing before.
    client = Client()
    page = client.get(approve)
    assert b"Sign in to decide" in page.content and b"github.com" not in page.content
    assert client.post(approve).status_code == HTTPStatus.FOUND
    client.force_login(_user("bob"))
    assert _post(client, deny, reason="not on a Friday").status_code == HTTPStatus.OK
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by.username, approval.reason) == ("denied", "bob", "not on a Friday")


@pytest.mark.django_db
def test_a_deny_link_denies_with_the_reason_given(group: Group) -> None:
    approval = _ask()
    response = _post(Client(enforce_csrf_checks=True), _path(approval, _user("bob"), "deny"), reason="use a branch")
    assert response.status_code == HTTPStatus.OK and b"Denied" in response.content
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by.username, approval.decided_via, approval.reason) == (
        "denied", "bob", "link", "use a branch")


@pytest.mark.django_db
def test_the_post_needs_the_pages_csrf_token(group: Group) -> None:
    approval = _ask()
    response = Client(enforce_csrf_checks=True).post(_path(approval, _user("alice"), "approve"))
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert Approval.objects.get(pk=approval.pk).status == "pending"


@pytest.mark.django_db
def test_a_used_link_is_refused_and_decides_nothing_again(group: Group) -> None:
    approval = _ask()
    path = _path(approval, _user("alice"), "approve")
    client = Client()
    assert _post(client, path).status_code == HTTPStatus.OK
    again = client.get(path)
    assert again.status_code == HTTPStatus.CONFLICT and b"already used" in again.content
    replay = client.post(path)
    assert replay.status_code == HTTPStatus.CONFLICT and b"already used" in replay.content
    assert UsedLink.objects.count() == 1
    # The other way round after it was decided: says so.
    deny = Client().get(_path(approval, _user("bob"), "deny"))
    assert deny.status_code == HTTPStatus.CONFLICT and b"already decided: approved by alice (link)" in deny.content


@pytest.mark.django_db
def test_an_expired_link_is_refused(group: Group, clock: Any) -> None:
    approval = _ask()
    path = _path(approval, _user("alice"), "approve")
    clock.advance(601)  # past the approval's deadline, which the link expires with
    page = Client().get(path)
    assert page.status_code == HTTPStatus.CONFLICT and b"expired" in page.content
    assert Client().post(path).status_code == HTTPStatus.CONFLICT
    assert Approval.objects.get(pk=approval.pk).status in ("pending", "expired")
    assert not UsedLink.objects.exists()


@pytest.mark.django_db
def test_a_tampered_link_is_refused(group: Group) -> None:
    approval = _ask()
    token = link_token(approval, user=_user("alice"), action="deny")
    # Swap the action inside the signed payload (and, separately, one character anywhere).
    import base64

    value, signature = token.split(":", 1)  # signing.dumps: payload:timestamp:signature
    payload = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    forged_value = base64.urlsafe_b64encode(json.dumps({**payload, "d": "approve"}, separators=(",", ":")).encode()).decode().rstrip("=")
    for forged in (f"{forged_value}:{signature}", token[:-1] + ("A" if token[-1] != "A" else "B")):
        client = Client()
        page = client.get(f"/a/{forged}/")
        assert page.status_code == HTTPStatus.BAD_REQUEST and b"not valid" in page.content
        assert client.post(f"/a/{forged}/").status_code == HTTPStatus.BAD_REQUEST
    assert Approval.objects.get(pk=approval.pk).status == "pending"


@pytest.mark.django_db
def test_a_link_to_a_request_that_changed_is_stale(group: Group) -> None:
    approval = _ask()
    path = _path(approval, _user("alice"), "approve")
    Approval.objects.filter(pk=approval.pk).update(hash="0" * 64)  # what the reviewer was sent is not what waits
    page = Client().get(path)
    assert page.status_code == HTTPStatus.CONFLICT and b"changed since this link was sent" in page.content
    assert Client().post(path).status_code == HTTPStatus.CONFLICT
    assert Approval.objects.get(pk=approval.pk).status == "pending"


@pytest.mark.django_db
def test_a_typed_confirmation_link_needs_a_session_and_the_word(group: Group) -> None:
    approval = _ask(run_policy={"approvals": {"timeout_s": 600, "confirm": {"remote-mutation": "typed"}}})
    assert approval.confirmation == "typed" and approval.confirmation_word
    path = _path(approval, _user("alice"), "approve")
    anonymous = Client()
    page = anonymous.get(path)
    assert b"Sign in to decide" in page.content and f"next={path}".encode() in page.content
    assert b'name="confirmation"' not in page.content
    response = anonymous.post(path)
    assert response.status_code == HTTPStatus.FOUND and response["Location"].startswith("/accounts/login/")
    assert Approval.objects.get(pk=approval.pk).status == "pending"

    signed_in = Client()
    signed_in.force_login(_user("alice"))
    assert b'name="confirmation"' in signed_in.get(path).content
    wrong = _post(signed_in, path, confirmation="nope")
    assert wrong.status_code == HTTPStatus.BAD_REQUEST and Approval.objects.get(pk=approval.pk).status == "pending"
    assert _post(signed_in, path, confirmation=approval.confirmation_word).status_code == HTTPStatus.OK
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by.username, approval.decided_via) == ("approved", "alice", "link")
    # Someone else's session never uses alice's link.
    other = _ask(run_policy={"approvals": {"timeout_s": 600, "confirm": {"remote-mutation": "typed"}}})
    bob = Client()
    bob.force_login(_user("bob"))
    assert bob.get(_path(other, _user("alice"), "approve")).status_code == HTTPStatus.FORBIDDEN


@pytest.mark.django_db
def test_four_eyes_the_runs_starter_is_not_notified_and_their_link_decides_nothing(settings: Any, smtp: SMTPServer,
                                                                                   group: Group) -> None:
    settings.GATEHOUSE_REVIEW_OWN_RUNS = False
    approval = _ask(user=_user("alice"))
    assert list(Notification.objects.values_list("user__username", flat=True)) == ["bob"]
    response = Client().get(_path(approval, _user("alice"), "approve"))
    assert response.status_code == HTTPStatus.CONFLICT and b"four-eyes" in response.content
    assert Client().post(_path(approval, _user("alice"), "approve")).status_code == HTTPStatus.CONFLICT
    assert Approval.objects.get(pk=approval.pk).status == "pending"
    assert _post(Client(), _path(approval, _user("bob"), "approve")).status_code == HTTPStatus.OK
    assert Approval.objects.get(pk=approval.pk).decided_by.username == "bob"


@pytest.mark.django_db
def test_no_group_no_notification_and_a_request_decided_first_is_skipped(settings: Any, smtp: SMTPServer, group: Group) -> None:
    from approvals.services import approval_decide

    approval = _ask()
    approval_decide(approval_id=approval.pk, user=_user("bob"), approve=True, hash=approval.hash, via="console")
    assert notifications_send_due_once() == 2  # alice and bob: nothing to ask any more
    assert set(Notification.objects.values_list("status", flat=True)) == {"skipped"} and smtp.messages == []

    Policy.objects.filter(is_default=True).update(notify_group=None)
    _ask()
    assert Notification.objects.count() == 2


@pytest.mark.django_db
def test_a_persons_page_sets_what_reaches_them(smtp: SMTPServer, group: Group) -> None:
    client = Client()
    client.force_login(_user("alice"))
    inbox = client.get("/")
    assert b'href="/me/"' in inbox.content  # linked from the header
    page = client.get("/me/")
    assert page.status_code == HTTPStatus.OK and b"alice@example.test" in page.content
    assert Policy.objects.get(is_default=True).name.encode() in page.content
    assert client.post("/me/", {"chat": "on"}).status_code == HTTPStatus.FOUND
    preference = NotificationPreference.objects.get(user__username="alice")
    assert (preference.email, preference.chat) == (False, True)
    assert b'name="email">' in client.get("/me/").content  # unchecked now
    _ask()
    assert list(Notification.objects.values_list("user__username", flat=True)) == ["bob"]
    assert Client().get("/me/").status_code == HTTPStatus.FOUND  # signed in only
