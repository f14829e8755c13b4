"""The escape suite's fixtures: a policy that allows everything and a reviewer who approves
every ordinary request (auto-approve), and the host-side target of the attempts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from approvals.policy import CLASSES
from tests.sandbox.escapes import Target, target

# Every class allowed (protected ones then ask, and every ask is approved).
ALLOW_EVERYTHING = "allow-everything"
AUTO_APPROVE = {"approvals": {"permission": "auto-approve", "timeout_s": 120}}


@pytest.fixture
def allow_everything(db: Any) -> str:
    from approvals.models import Policy
    from approvals.services import policy_save

    document = {"default": "allow", "classes": {name: "allow" for name in CLASSES}}
    policy_save(policy=Policy(name=ALLOW_EVERYTHING, document=document))
    return ALLOW_EVERYTHING


@pytest.fixture
def escape(tmp_path: Path, settings: Any, floor_available: None) -> Iterator[Target]:
    """The target, with the floor exactly as a server builds it (no extra read paths)."""
    settings.GATEHOUSE_SANDBOX_READ_PATHS = []
    secret_key = Path(settings.VAR_DIR) / "secret_key"
    made_key = not secret_key.exists()
    if made_key:
        secret_key.write_text("escape-suite-secret-key\n")
    database = Path(settings.DATABASES["default"]["NAME"]) if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3") else None
    workspace = tmp_path / "ws"
    workspace.mkdir()
    other = Path(settings.GATEHOUSE_WORKSPACES_DIR) / "run-999999"
    try:
        with target(workspace, tmp_path / "outside", other, secret_key=secret_key, database=database) as found:
            yield found
    finally:
        if made_key:
            secret_key.unlink(missing_ok=True)
