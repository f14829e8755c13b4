"""The Content-Security-Policy: django-csp's middleware, plus the console's own sockets.

The policy itself is in settings (CONTENT_SECURITY_POLICY). Two things it cannot say there:
the WebSocket origins — `connect-src 'self'` covers ws/wss of the page's own host in CSP 3
browsers, older ones need `ws://host` and `wss://host` spelled out, and the host is the
request's — and the nonce under the name templates read (`csp_nonce`, which django-htmx's
`{% htmx_script %}` puts on its script tags, as Django 6's own CSP support names it).
"""

from __future__ import annotations

from typing import Any

from csp.middleware import CSPMiddleware, PolicyParts
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase


def socket_sources(request: HttpRequest) -> list[str]:
    """ws:// and wss:// of the host the page was asked from (one of ALLOWED_HOSTS)."""
    try:
        host = request.get_host()
    except DisallowedHost:  # the 400 for that Host: it gets no source of its own
        return []
    if "[" in host:  # an IPv6 literal is not a CSP host-source; 'self' covers it in CSP 3
        return []
    return [f"ws://{host}", f"wss://{host}"]


class ConsoleCSPMiddleware(CSPMiddleware):
    """CSPMiddleware whose connect-src also names the request's own WebSocket origins."""

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        # MiddlewareMixin would run each hook on the sync thread (two hops per request, the
        # hook gateway's and the SSE streams' too); these read only settings and the request
        # (no I/O), so they run here.
        self.process_request(request)
        response = await self.get_response(request)  # type: ignore[misc]  # async in this mode
        return self.process_response(request, response)

    def get_policy_parts(self, request: HttpRequest, response: HttpResponseBase, report_only: bool = False) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only)
        sockets = socket_sources(request)
        if sockets:
            update = dict(parts.update or {})
            update["connect-src"] = [*update.get("connect-src", []), *sockets]
            parts.update = update
        return parts


def nonce(request: HttpRequest) -> dict[str, Any]:
    """Context processor: `{{ csp_nonce }}` for an inline <script nonce=...> (lazy: a page
    that never uses it sends no nonce)."""
    return {"csp_nonce": getattr(request, "csp_nonce", "")}
