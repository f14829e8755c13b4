"""Fixtures of the driver tests that run real agent programs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.drivers.e2e import REVIEW_ALL


@pytest.fixture
def review_all(db: Any) -> str:
    """The `review-all` policy: every tool call is asked."""
    from approvals.models import Policy
    from approvals.services import policy_save

    policy_save(policy=Policy(name=REVIEW_ALL, document={"default": "ask"}))
    return REVIEW_ALL


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path
