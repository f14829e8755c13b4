"""The OpenAPI schema says what the API validates (issue 31): for the operations whose
bodies a fuzzer or a generated client must get right — starting a run, the approval
decisions, the hook gateway, registering a webhook, evaluating a policy — the request
schema carries the real constraints (required fields, enums, one shape per driver or per
tool, bounds), not a loose object. Bodies are checked against the generated schema with
a JSON Schema validator, so a schema that regresses to `{"type": "object"}` fails here.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from drf_spectacular.generators import SchemaGenerator

from drivers import registry
from integrations.models import WebhookEndpoint
from integrations.webhooks.signing import MIN_CUSTOM_SECRET_LENGTH


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)


def _inline(node: Any, components: dict[str, Any]) -> Any:
    """The schema with every $ref replaced by what it names (these have no cycles)."""
    if isinstance(node, dict):
        if "$ref" in node:
            return _inline(components[node["$ref"].rsplit("/", 1)[1]], components)
        return {k: _inline(v, components) for k, v in node.items() if k not in ("discriminator", "example")}
    if isinstance(node, list):
        return [_inline(v, components) for v in node]
    return node


def body_schema(schema: dict[str, Any], path: str) -> dict[str, Any]:
    operation = schema["paths"][f"/api/v1/{path}"]["post"]
    assert operation["requestBody"]["required"] is True, path
    return _inline(operation["requestBody"]["content"]["application/json"]["schema"], schema["components"]["schemas"])


def valid(body_schema: dict[str, Any], body: Any) -> bool:
    return jsonschema.Draft7Validator(body_schema).is_valid(body)


def run_variants(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    runs = body_schema(schema, "runs/")
    return {variant["properties"]["driver"]["allOf"][0]["enum"][0]: variant for variant in runs["oneOf"]}


# --- POST /runs/ ------------------------------------------------------------------------------


def test_a_run_names_one_of_the_registered_drivers_the_api_starts(schema: dict[str, Any]) -> None:
    startable = {n for n in registry.names() if n not in registry.external_names()}
    assert set(run_variants(schema)) == startable
    runs = body_schema(schema, "runs/")
    assert valid(runs, {"driver": "codex", "prompt": "Fix the tests"})
    assert not valid(runs, {"driver": "no-such-driver", "prompt": "hi"})
    assert not valid(runs, {"driver": "claude-code-hook", "prompt": "hi"})  # its agent's hook starts those
    assert not valid(runs, {"prompt": "hi"})


def test_the_scripted_driver_needs_a_scenario_of_known_steps_and_the_others_take_none(schema: dict[str, Any]) -> None:
    variants = run_variants(schema)
    assert "scenario" in variants["scripted"]["required"]
    assert all("scenario" not in v["properties"] for name, v in variants.items() if name != "scripted")
    runs = body_schema(schema, "runs/")
    steps = [{"tool": "bash", "input": {"command": "echo hi"}}, {"message": "done"}]
    assert valid(runs, {"driver": "scripted", "scenario": {"steps": steps}})
    assert not valid(runs, {"driver": "scripted", "prompt": "no scenario"})
    assert not valid(runs, {"driver": "scripted", "scenario": {"steps": []}})
    assert not valid(runs, {"driver": "scripted", "scenario": {"steps": [{"tool": "bash", "input": {}}]}})  # no command
    assert not valid(runs, {"driver": "scripted", "scenario": {"steps": [{"message": "a", "plan": "b"}]}})
    assert not valid(runs, {"driver": "codex", "scenario": {"steps": steps}})


def test_driver_options_are_the_drivers_own(schema: dict[str, Any]) -> None:
    runs = body_schema(schema, "runs/")
    agents = run_variants(schema)["acp"]["properties"]["options"]["properties"]["agent"]["enum"]
    assert "claude-code-acp" in agents
    assert valid(runs, {"driver": "acp", "prompt": "hi", "options": {"agent": "claude-code-acp"}})
    assert not valid(runs, {"driver": "acp", "prompt": "hi", "options": {"agent": "no-such-agent"}})
    assert not valid(runs, {"driver": "acp", "prompt": "hi", "options": {"model": "x"}})
    assert not valid(runs, {"driver": "codex", "prompt": "hi", "options": {"agent": "opencode"}})


def test_a_run_policy_has_known_fields_with_their_values(schema: dict[str, Any]) -> None:
    runs = body_schema(schema, "runs/")
    ok = {
        "sandbox": "workspace-write",
        "approvals": {"permission": "ask", "timeout_s": 600, "max_retries": 2, "confirm": {"destructive": "typed"}},
    }
    assert valid(runs, {"driver": "codex", "prompt": "hi", "run_policy": ok})
    for bad in (
        {"sandbox": "wide-open"},
        {"approvals": {"question": "auto-approve"}},
        {"approvals": {"timeout_s": 0}},
        {"approvals": {"max_retries": 101}},
        {"typo": 1},
        {"approvals": {"confirm": {"no-such-class": "typed"}}},
    ):
        assert not valid(runs, {"driver": "codex", "prompt": "hi", "run_policy": bad}), bad


def test_a_run_refuses_unknown_fields_and_bounds_its_strings(schema: dict[str, Any]) -> None:
    runs = body_schema(schema, "runs/")
    assert not valid(runs, {"driver": "codex", "prompt": "hi", "promt": "typo"})
    assert not valid(runs, {"driver": "codex", "prompt": "hi", "workspace": "/" + "w" * 1024})
    assert not valid(runs, {"driver": "codex", "prompt": "hi", "session": 0})


# --- the approval decisions ------------------------------------------------------------------


def test_every_decision_names_the_request_it_decides(schema: dict[str, Any]) -> None:
    for verb in ("approve", "deny", "answer"):
        decision = body_schema(schema, f"approvals/{{approval_id}}/{verb}/")
        assert decision["required"] == ["hash"], verb
        assert decision["additionalProperties"] is False, verb
        assert not valid(decision, {}), verb
        assert not valid(decision, {"hash": ""}), verb
        assert not valid(decision, {"hash": "   "}), verb
        assert not valid(decision, {"hash": "ab\x00c"}), verb  # DRF refuses NUL characters
        assert not valid(decision, {"hash": "abc", "unknown": 1}), verb


def test_an_approval_has_its_scopes_plan_modes_and_editable_keys(schema: dict[str, Any]) -> None:
    approve = body_schema(schema, "approvals/{approval_id}/approve/")
    assert approve["properties"]["scope"]["allOf"][0]["enum"] == ["once", "session"]
    mode = approve["properties"]["mode"]
    assert mode["allOf"][0]["enum"] == ["default", "accept-edits"]
    assert "default" not in mode  # no default outside the enum
    assert valid(approve, {"hash": "abc", "scope": "session"})
    assert valid(approve, {"hash": "abc", "edited_input": {"command": "npm test"}})
    assert not valid(approve, {"hash": "abc", "scope": "forever"})
    assert not valid(approve, {"hash": "abc", "mode": "bypassPermissions"})
    assert not valid(approve, {"hash": "abc", "edited_input": {}})
    assert not valid(approve, {"hash": "abc", "edited_input": {"tool": "write"}})
    assert not valid(approve, {"hash": "abc", "edited_input": {"command": 5}})


def test_a_denial_bounds_its_reason(schema: dict[str, Any]) -> None:
    deny = body_schema(schema, "approvals/{approval_id}/deny/")
    assert valid(deny, {"hash": "abc", "reason": "not now"})
    assert not valid(deny, {"hash": "abc", "reason": "x" * 2001})


def test_answers_are_labels_or_free_text_by_question(schema: dict[str, Any]) -> None:
    answer = body_schema(schema, "approvals/{approval_id}/answer/")
    assert valid(answer, {"hash": "abc", "answers": {"color": ["Red"], "name": "Ada"}})
    assert valid(answer, {"hash": "abc", "decline": True})
    assert not valid(answer, {"hash": "abc", "answers": {"color": 3}})
    assert not valid(answer, {"hash": "abc", "answers": {"color": [3]}})
    assert not valid(answer, {"hash": "abc", "other": {"color": ["Red"]}})


# --- the hook gateway -----------------------------------------------------------------------


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_each_hook_requires_what_the_gateway_requires(schema: dict[str, Any], agent: str) -> None:
    pre = body_schema(schema, f"hooks/{agent}/pre-tool-use/")
    post = body_schema(schema, f"hooks/{agent}/post-tool-use/")
    end = body_schema(schema, f"hooks/{agent}/session-end/")
    call = {"session_id": "s1", "cwd": "/srv/project", "tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert set(pre["required"]) == {"session_id", "cwd", "tool_name"}
    assert valid(pre, call)
    assert valid(pre, {**call, "extra": "ignored"})  # the agent's other fields are ignored, not refused
    for missing in ("session_id", "cwd", "tool_name"):
        assert not valid(pre, {k: v for k, v in call.items() if k != missing}), missing
    assert not valid(pre, {**call, "cwd": "relative/dir"})
    assert not valid(pre, {**call, "hook_event_name": "PostToolUse"})
    assert not valid(pre, {**call, "tool_input": "ls"})
    assert not valid(pre, {**call, "session_id": "s" * 201})
    assert set(post["required"]) == {"session_id", "tool_use_id"}
    assert valid(post, {"session_id": "s1", "tool_use_id": "t1", "tool_response": {"stdout": ""}})
    assert not valid(post, {"session_id": "s1"})
    assert not valid(post, {"session_id": "s1", "tool_use_id": ""})
    assert end["required"] == ["session_id"]
    assert valid(end, {"session_id": "s1", "reason": "exit"})
    assert not valid(end, {"reason": "exit"})


# --- webhooks --------------------------------------------------------------------------------


def test_a_webhook_has_an_http_url_known_events_and_a_long_secret_or_none(schema: dict[str, Any]) -> None:
    webhook = body_schema(schema, "webhooks/")
    assert webhook["properties"]["events"]["items"]["enum"] == list(WebhookEndpoint.Event.values)
    ok = {"url": "https://hooks.example.com/in", "events": ["run.finished"]}
    assert valid(webhook, ok)
    assert valid(webhook, {**ok, "secret": ""})
    assert valid(webhook, {**ok, "secret": "s" * MIN_CUSTOM_SECRET_LENGTH})
    assert not valid(webhook, {**ok, "secret": "s" * (MIN_CUSTOM_SECRET_LENGTH - 1)})
    assert not valid(webhook, {**ok, "events": []})
    assert not valid(webhook, {**ok, "events": ["run.started"]})
    assert not valid(webhook, {**ok, "url": "ftp://hooks.example.com/in"})
    assert not valid(webhook, {**ok, "url": "https://user:pw@hooks.example.com/in"})
    assert not valid(webhook, {"url": ok["url"]})


# --- POST /policies/{id}/evaluate/ -----------------------------------------------------------


def test_an_evaluated_request_has_one_shape_per_tool(schema: dict[str, Any]) -> None:
    evaluate = body_schema(schema, "policies/{policy_id}/evaluate/")
    assert evaluate["required"] == ["request"]
    assert len(evaluate["properties"]["request"]["oneOf"]) >= 4

    def ok(request: Any, **rest: Any) -> bool:
        return valid(evaluate, {"request": request, **rest})

    assert ok({"tool": "bash", "input": {"command": "npm test"}, "cwd": "/srv/p"})
    assert ok({"tool": "write", "input": {"file_path": "a.txt", "content": "x"}})
    assert ok({"tool": "NotebookEdit", "input": {"notebook_path": "n.ipynb"}})
    assert ok({"tool": "network", "input": {"host": "pypi.org", "port": 443}})
    assert ok({"tool": "webFetch", "input": {"url": "https://example.com"}})
    assert not ok({"tool": "bash", "input": {}})
    assert not ok({"tool": "bash", "input": {"command": ["ls"]}})
    assert not ok({"tool": "write", "input": {"content": "x"}})
    assert not ok({"tool": "edit", "input": {"file_path": "  "}})
    assert not ok({"tool": "network", "input": {"host": "pypi.org", "port": 70000}})
    assert not ok({"tool": "", "input": {}})
    assert not ok({"tool": "bash", "input": {"command": "ls"}, "cwd": "relative"})
    assert not ok({"tool": "bash", "input": {"command": "ls"}, "shell": "zsh"})
    assert not ok({"tool": "bash"})


def test_evaluation_grants_and_workspace_are_described(schema: dict[str, Any]) -> None:
    evaluate = body_schema(schema, "policies/{policy_id}/evaluate/")
    request = {"tool": "bash", "input": {"command": "npm run build"}}
    assert valid(evaluate, {"request": request, "grants": [{"tool": "bash", "match": "npm run build"}, {"tool": "deploy"}]})
    assert not valid(evaluate, {"request": request, "grants": [{"tool": "deploy", "match": "x"}]})  # match: not for it
    assert not valid(evaluate, {"request": request, "grants": [{"match": "x"}]})
    assert not valid(evaluate, {"request": request, "grants": [{"tool": "bash", "scope": "x"}]})
    assert valid(evaluate, {"request": request, "workspace": "/srv/project"})
    assert not valid(evaluate, {"request": request, "workspace": "srv/project"})


def test_an_evaluation_answers_a_verdict(schema: dict[str, Any]) -> None:
    ok = schema["paths"]["/api/v1/policies/{policy_id}/evaluate/"]["post"]["responses"]["200"]
    verdict = _inline(ok["content"]["application/json"]["schema"], schema["components"]["schemas"])
    assert set(verdict["required"]) >= {"decision", "reason", "rule", "segments"}
    assert verdict["properties"]["decision"]["enum"] == ["allow", "ask", "deny", "abort"]


@pytest.mark.parametrize(
    "path",
    [
        "runs/",
        "approvals/{approval_id}/approve/",
        "approvals/{approval_id}/deny/",
        "approvals/{approval_id}/answer/",
        "webhooks/",
        "policies/{policy_id}/evaluate/",
        "hooks/claude-code/pre-tool-use/",
        "hooks/codex/session-end/",
    ],
)
def test_an_operation_with_a_body_documents_its_refusals_including_a_body_too_large(schema: dict[str, Any], path: str) -> None:
    responses = schema["paths"][f"/api/v1/{path}"]["post"]["responses"]
    assert {"400", "401", "403", "413"} <= set(responses)
    assert "body_too_large" in responses["413"]["description"]
