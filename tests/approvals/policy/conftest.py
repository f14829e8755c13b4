import pytest

ISSUE_POLICY = {
    "commands": {
        "allow": ["ls", "cat", "git status", "npm run test:*"],
        "ask": ["git commit"],
        "deny": [{"match": "git push", "reason": "The application publishes the changes."}, "rm -rf"],
        "default": "ask",
    },
    "edits": {"allow": ["src/**"], "ask": [], "deny": [".env*"], "default": "ask"},
    "tools": {"webSearch": "allow", "deployPreview": "ask", "dropDatabase": {"decision": "deny", "reason": "Never."}},
    "classes": {"read-only": "allow", "local-mutation": "allow", "remote-mutation": "ask", "destructive": "deny"},
    "limits": {"max_tool_calls": 200, "max_denials": 20},
    "default": "ask",
}


@pytest.fixture
def issue_policy():
    return ISSUE_POLICY
