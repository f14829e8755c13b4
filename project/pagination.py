"""The API's pagination (its own module: DRF imports it from settings, and it must not
import project.api, which DRF also imports from settings)."""

from __future__ import annotations

from typing import Any

from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    """?limit= and ?offset=, bounded so no query asks the database for an absurd slice."""

    default_limit = 50
    max_limit = 500
    max_offset = 2**53

    def get_offset(self, request: Any) -> int:
        return min(super().get_offset(request), self.max_offset)
