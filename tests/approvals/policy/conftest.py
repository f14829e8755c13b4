import pytest

from tests.approvals.policy.policytest import ISSUE_POLICY, make_sandbox


@pytest.fixture
def issue_policy():
    return ISSUE_POLICY


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    """A real workspace with symlinks in and out of it, two homes and a var directory."""
    return make_sandbox(tmp_path_factory.mktemp("sandbox"))
