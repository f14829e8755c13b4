import pytest

from tests.approvals.policy.policytest import ISSUE_POLICY


@pytest.fixture
def issue_policy():
    return ISSUE_POLICY
