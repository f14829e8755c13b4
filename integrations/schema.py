"""OpenAPI for what drf-spectacular cannot see by itself: the token scheme, and the hook
gateway's async views (plain Django views, so their operations are written out here)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ScopedTokenScheme(OpenApiAuthenticationExtension):
    target_class = "integrations.tokens.ScopedTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <token>` (or `Bearer <token>`), from create_api_token or the admin. "
            "Each endpoint needs a scope: read, runs:write, approvals:decide, hooks, webhooks:manage.",
        }


# The hook inputs as the gateway validates them (integrations/hooks/gateway.py: `_text`,
# `parse_pre_tool_use`; views.py: `_session_and_tool`): what each endpoint requires, the
# limits it checks. Other fields the agent sends are ignored, so none is refused.
_SESSION_ID = {"type": "string", "minLength": 1, "maxLength": 200, "description": "The agent's session id."}
_PRE_TOOL_USE_INPUT = {
    "type": "object",
    "description": "The agent's PreToolUse hook input (other fields it sends are ignored).",
    "required": ["session_id", "cwd", "tool_name"],
    "properties": {
        "session_id": _SESSION_ID,
        "hook_event_name": {"type": "string", "enum": ["PreToolUse"], "description": "Default: PreToolUse."},
        "cwd": {"type": "string", "minLength": 1, "maxLength": 1024, "pattern": "^/", "description": "An absolute path."},
        "tool_name": {"type": "string", "minLength": 1, "maxLength": 128},
        "tool_input": {"type": "object", "additionalProperties": {}, "description": "Default: {}."},
        "tool_use_id": {"type": "string", "maxLength": 200, "nullable": True},
        "permission_mode": {"type": "string", "maxLength": 64, "nullable": True, "description": "Default: default."},
        "transcript_path": {"type": "string", "maxLength": 4096, "nullable": True},
    },
    "example": {"session_id": "5f0c1e2a", "hook_event_name": "PreToolUse", "cwd": "/home/dev/project",
                "tool_name": "Bash", "tool_input": {"command": "npm test"}, "tool_use_id": "toolu_01"},
}
_POST_TOOL_USE_INPUT = {
    "type": "object",
    "description": "The agent's PostToolUse hook input (other fields it sends are ignored).",
    "required": ["session_id", "tool_use_id"],
    "properties": {
        "session_id": _SESSION_ID,
        "tool_use_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "The call whose result this is."},
        "tool_response": {"description": "What the tool returned, recorded on its step."},
    },
    "example": {"session_id": "5f0c1e2a", "tool_use_id": "toolu_01", "tool_response": {"stdout": "ok"}},
}
_SESSION_END_INPUT = {
    "type": "object",
    "description": "The agent's SessionEnd hook input (other fields it sends are ignored).",
    "required": ["session_id"],
    "properties": {
        "session_id": _SESSION_ID,
        "reason": {"type": "string", "description": "Recorded (its first 200 characters); anything else but a string is ignored."},
    },
    "example": {"session_id": "5f0c1e2a", "reason": "exit"},
}
_PRE_TOOL_USE_OUTPUT = {
    "type": "object",
    "required": ["hookSpecificOutput"],
    "properties": {
        "hookSpecificOutput": {
            "type": "object",
            "required": ["hookEventName", "permissionDecision", "permissionDecisionReason"],
            "properties": {
                "hookEventName": {"type": "string", "enum": ["PreToolUse"]},
                "permissionDecision": {"type": "string", "enum": ["allow", "deny", "ask"]},
                "permissionDecisionReason": {"type": "string"},
            },
        }
    },
}


def _operation(operation_id: str, summary: str, description: str, body: dict[str, Any], ok: dict[str, Any], *,
               policy: bool = False) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": operation_id,
        "summary": summary,
        "description": description,
        "tags": ["hooks"],
        "security": [{"tokenAuth": []}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
        "responses": {"200": {"description": "The hook output.", "content": {"application/json": {"schema": ok}}}},
    }
    if policy:
        operation["parameters"] = [
            {"name": "policy", "in": "query", "required": False, "schema": {"type": "string", "maxLength": 100},
             "description": "The rule policy the session's run uses (GATEHOUSE_POLICY); default: the default policy."}
        ]
    return operation


def add_hook_paths(result: dict[str, Any], generator: Any, request: Any, public: Any) -> dict[str, Any]:
    """drf-spectacular postprocessing: the gateway's three operations (before document_errors)."""
    paths = result.setdefault("paths", {})
    empty = {"type": "object", "additionalProperties": False}
    for agent, title in (("claude-code", "Claude Code"), ("codex", "Codex")):
        slug = agent.replace("-", "_")
        answer = _PRE_TOOL_USE_OUTPUT if agent == "claude-code" else {
            "oneOf": [empty, _PRE_TOOL_USE_OUTPUT],
            "description": "Codex takes only a deny from this hook: `{}` lets the call proceed.",
        }
        paths[f"/api/v1/hooks/{agent}/pre-tool-use/"] = {
            "post": _operation(
                f"hooks_{slug}_pre_tool_use", f"{title} PreToolUse hook",
                "Decides the tool call by the policy: `allow` or `deny` with the reason at once; for `ask` waits for "
                "a reviewer (at most GATEHOUSE_HOOK_WAIT_S), then their decision or the timeout fallback as `deny`. "
                "Needs the scope `hooks` and the permission runs.add_run.",
                _PRE_TOOL_USE_INPUT, answer, policy=True,
            )
        }
        paths[f"/api/v1/hooks/{agent}/post-tool-use/"] = {
            "post": _operation(f"hooks_{slug}_post_tool_use", f"{title} PostToolUse hook",
                               "Records what an allowed tool call returned on its step.", _POST_TOOL_USE_INPUT, empty)
        }
        paths[f"/api/v1/hooks/{agent}/session-end/"] = {
            "post": _operation(f"hooks_{slug}_session_end", f"{title} SessionEnd hook", "Ends the session's run (`completed`).", _SESSION_END_INPUT, empty)
        }
    return result
