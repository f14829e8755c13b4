"""Request bodies have a size limit, refused before they are read."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse


class BodyLimitMiddleware:
    """413 for a request whose declared body is larger than GATEHOUSE_MAX_BODY_BYTES.

    The body is never read: a client cannot make a process buffer megabytes it will
    refuse. (A body sent without a length is bounded by DATA_UPLOAD_MAX_MEMORY_SIZE, the
    same limit, when it is read.)
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.GATEHOUSE_MAX_BODY_BYTES
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if limit and length > limit:
            message = f"The request body is {length} bytes; the limit is {limit} bytes."
            return JsonResponse({"code": "body_too_large", "message": message}, status=413)
        return self.get_response(request)
