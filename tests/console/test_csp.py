"""The Content-Security-Policy the console, the admin and the API docs are served with: no
inline script without the page's nonce, no eval, no inline style, sockets only to the
console's own host; and every page's markup keeps to it (scripts from this origin or with
the nonce, no inline handlers or style attributes). tests/console/test_browser_csp.py checks in
Chromium that nothing is blocked."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from http import HTTPStatus
from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def directives(response: Any) -> dict[str, list[str]]:
    header = response.headers.get("Content-Security-Policy")
    assert header, f"no Content-Security-Policy on {response.wsgi_request.path}"
    parsed: dict[str, list[str]] = {}
    for part in header.split(";"):
        words = part.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed


class _Markup(HTMLParser):
    """Scripts, inline handlers and style attributes of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.handlers: list[str] = []
        self.styles: list[str] = []
        self.style_elements = 0
        self.meta: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "script":
            self.scripts.append(named)
        if tag == "style":
            self.style_elements += 1
        if tag == "meta" and named.get("name"):
            self.meta[str(named["name"])] = str(named.get("content"))
        self.handlers += [f"<{tag} {name}>" for name, _ in attrs if name.startswith("on")]
        self.handlers += [f"<{tag} {name}>" for name, value in attrs if (value or "").strip().lower().startswith("javascript:")]
        if "style" in named:
            self.styles.append(f"<{tag} style={named['style']!r}>")


def _markup(response: Any) -> _Markup:
    parser = _Markup()
    parser.feed(response.content.decode())
    return parser


@pytest.fixture
def signed_in(reviewer: Any) -> Client:
    client = Client()
    client.force_login(reviewer)
    return client


def test_the_console_policy_forbids_inline_script_eval_and_foreign_sockets(signed_in: Client) -> None:
    policy = directives(signed_in.get("/"))
    assert policy["default-src"] == ["'self'"]
    script = policy["script-src"]
    assert "'self'" in script and any(re.fullmatch(r"'nonce-[A-Za-z0-9+/=]{16,}'", s) for s in script), script
    assert not {"'unsafe-inline'", "'unsafe-eval'", "*", "data:", "http:", "https:"} & set(script)
    assert policy["style-src"] == ["'self'"]
    assert policy["connect-src"] == ["'self'", "ws://testserver", "wss://testserver"]
    assert policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"] and policy["form-action"] == ["'self'"]
    assert "'unsafe-inline'" not in " ".join(sum(policy.values(), []))


def test_each_response_gets_a_fresh_nonce(signed_in: Client) -> None:
    first, second = directives(signed_in.get("/"))["script-src"], directives(signed_in.get("/"))["script-src"]
    assert first != second


def test_the_sockets_allowed_are_those_of_the_host_the_page_came_from(signed_in: Client, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["gatehouse.example"]
    policy = directives(signed_in.get("/", HTTP_HOST="gatehouse.example:8443"))
    assert policy["connect-src"] == ["'self'", "ws://gatehouse.example:8443", "wss://gatehouse.example:8443"]
    refused = signed_in.get("/", HTTP_HOST="evil.example")  # a Host not served: no socket source from it
    assert refused.status_code == HTTPStatus.BAD_REQUEST
    assert "evil.example" not in refused.headers.get("Content-Security-Policy", "")


def _pages(make_approval: Callable[..., Any]) -> list[str]:
    from approvals.models import Policy

    approval = make_approval("git push origin main")
    run = approval.step.run
    policy = Policy.objects.order_by("id").first()
    assert policy is not None
    return [
        "/", "/runs/", f"/runs/{run.pk}/", "/runs/new/", "/sessions/", f"/sessions/{run.session_id}/",
        "/admin/", "/admin/approvals/policy/", f"/admin/approvals/policy/{policy.pk}/change/", "/admin/approvals/policy/add/", "/admin/approvals/policy/import/",
        "/admin/integrations/apitoken/add/", "/admin/integrations/webhookendpoint/add/", "/admin/auth/user/",
    ]


def test_every_page_keeps_to_the_policy(signed_in: Client, make_approval: Callable[..., Any]) -> None:
    for path in _pages(make_approval):
        response = signed_in.get(path)
        assert response.status_code == HTTPStatus.OK, path
        # (A page whose template asks for no nonce, such as the admin's, sends none.)
        nonce = next((s[7:-1] for s in directives(response)["script-src"] if s.startswith("'nonce-")), None)
        markup = _markup(response)
        assert markup.scripts, path
        for script in markup.scripts:
            src = script.get("src") or ""
            same_origin = src.startswith("/") and not src.startswith("//")  # /static/…, the admin's /admin/jsi18n/
            assert same_origin or (nonce and script.get("nonce") == nonce), (path, script)
        assert not markup.handlers, (path, markup.handlers)
        assert not markup.styles, (path, markup.styles)
        assert not markup.style_elements, path
        if "htmx" in "".join(str(s.get("src")) for s in markup.scripts):
            # htmx would otherwise add a <style> for its indicators (refused: no inline style),
            # and run code from attributes or swapped-in <script> tags (refused: no eval).
            config = markup.meta.get("htmx-config", "")
            assert '"includeIndicatorStyles": false' in config and '"allowEval": false' in config, (path, config)


def test_the_login_page_keeps_to_the_policy(client: Client) -> None:
    response = client.get("/accounts/login/")
    assert directives(response)["script-src"][0] == "'self'"
    assert all((s.get("src") or "").startswith("/static/") for s in _markup(response).scripts)


def test_the_api_answers_carry_the_policy_too(api: Any) -> None:
    assert "default-src" in api.get("/api/v1/runs/").headers["Content-Security-Policy"]


def test_the_api_docs_may_load_swagger_ui_from_its_cdn_and_nothing_else_does(api: Any, signed_in: Client) -> None:
    response = api.get("/api/v1/docs/")
    assert response.status_code == HTTPStatus.OK
    policy = directives(response)
    assert "https://cdn.jsdelivr.net" in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"]
    # Its own start-up script is a file (the split view), not an inline one.
    markup = _markup(response)
    assert all(s.get("src") for s in markup.scripts), markup.scripts
    start_up = api.get(str(markup.scripts[-1]["src"]))
    assert start_up.status_code == HTTPStatus.OK and start_up["Content-Type"].startswith("application/javascript")
    assert b"/api/v1/schema/" in start_up.content
    assert "cdn.jsdelivr.net" not in signed_in.get("/").headers["Content-Security-Policy"]
