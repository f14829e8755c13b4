"""Request bodies have a size limit, refused before they are read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


class BodyLimitMiddleware:
    """413 for a request whose declared body is larger than GATEHOUSE_MAX_BODY_BYTES.

    The body is never read: a client cannot make a process buffer megabytes it will
    refuse. (A body sent without a length is bounded by DATA_UPLOAD_MAX_MEMORY_SIZE, the
    same limit, when it is read.)

    Sync and async capable: under Daphne a sync-only middleware makes Django run the whole
    chain — async views included (the hook gateway's long-poll, the SSE streams) — in a
    worker thread, which is what those views are async to avoid.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def _refusal(self, request: HttpRequest) -> JsonResponse | None:
        limit = settings.GATEHOUSE_MAX_BODY_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if limit and length > limit:
            message = f"The request body is {length} bytes; the limit is {limit} bytes."
            return JsonResponse({"code": "body_too_large", "message": message}, status=413)
        return None

    def __call__(self, request: HttpRequest) -> Any:
        if iscoroutinefunction(self):
            return self._acall(request)
        return self._refusal(request) or self.get_response(request)

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        return self._refusal(request) or await self.get_response(request)
