"""The e-mail a reviewer gets (issue 32.4), rendered by a real browser: its HTML part, as a
real SMTP server received it, shows the request (agent text escaped, the credential masked)
and the one-tap links. Its screenshot is the README tour's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group

from approvals.models import Policy
from infra.env import email_url_settings
from integrations.notifications.sender import notifications_send_due_once
from tests.console.browser import launch_chromium
from tests.console.test_browser_inbox import docs_shot
from tests.integrations.smtp import SMTPServer, parts
from tests.integrations.test_notifications import SECRET, _ask

pytestmark = [pytest.mark.browser, pytest.mark.django_db]


@pytest.fixture
def mail(settings: Any, make_user: Any) -> Iterator[SMTPServer]:
    settings.GATEHOUSE_BASE_URL = "https://gatehouse.example.test"
    with SMTPServer() as server:
        for name, value in email_url_settings("GATEHOUSE_EMAIL_URL", f"smtp://127.0.0.1:{server.port}").items():
            setattr(settings, name, value)
        settings.GATEHOUSE_EMAIL_ENABLED = True
        settings.DEFAULT_FROM_EMAIL = "Gatehouse <gatehouse@example.test>"
        on_call = Group.objects.create(name="on call")
        alice = make_user("alice")
        alice.email = "alice@example.test"
        alice.save()
        alice.groups.add(on_call)
        Policy.objects.filter(is_default=True).update(notify_group=on_call)
        yield server


def test_the_reviewer_s_email_shows_the_request_and_its_one_tap_links(mail: SMTPServer) -> None:
    _ask()
    assert notifications_send_due_once() == 1
    [(_, message)] = mail.messages
    html = parts(message)["text/html"]
    assert SECRET not in html
    with launch_chromium() as browser:
        page = browser.new_page(viewport={"width": 720, "height": 400})
        try:
            page.set_content(html)
            approve = page.get_by_role("link", name="Approve once")
            assert approve.count() == 1 and approve.get_attribute("href").startswith("https://gatehouse.example.test/a/")
            assert page.get_by_role("link", name="Deny").count() == 1
            page.screenshot(path=docs_shot("email.png"), full_page=True)
        finally:
            page.close()
