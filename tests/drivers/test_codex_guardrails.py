"""Codex's guardrails as they reach the app-server, without starting it: the run's
config.toml (`config.render_config`), the `thread/start` parameters (`thread_params`) and
the handshake that sends them and refuses a thread Codex would run un-gated.

Each assertion is exact: these are the tests the mutation run of the guardrails reaches
(`[tool.mutmut]` in pyproject.toml; the real-CLI tests in test_codex.py are too slow to
run per mutant).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from drivers.codex import config
from drivers.codex.driver import _QUIET, _Session, thread_params
from drivers.session import RunFailed

HEADER = ["# Written by Gatehouse for one run; Codex may append to it.", "check_for_update_on_startup = false"]
ANALYTICS = ["", "[analytics]", "enabled = false"]


def pins(*paths: Path) -> list[str]:
    """Every directory pinned untrusted, each once, in the order given."""
    lines: list[str] = []
    for path in paths:
        lines += ["", f"[projects.{json.dumps(str(path))}]", 'trust_level = "untrusted"']
    return lines


def text(lines: list[str]) -> str:
    return "\n".join([*lines, ""])


# -- config.toml ------------------------------------------------------------------------------


def test_the_config_of_a_run_without_settings_is_the_bare_minimum() -> None:
    assert config.render_config({}, {}) == text([*HEADER, *ANALYTICS])


def test_the_workspace_and_every_parent_are_pinned_untrusted(tmp_path: Path) -> None:
    workspace = tmp_path / "a" / "b"
    workspace.mkdir(parents=True)
    assert config.render_config({}, {}, workspace) == text([*HEADER, *ANALYTICS, *pins(workspace, *workspace.parents)])


def test_a_linked_workspace_pins_both_paths_and_their_parents_once(tmp_path: Path) -> None:
    real = tmp_path / "real" / "ws"
    real.mkdir(parents=True)
    link = tmp_path / "links" / "ws"
    link.parent.mkdir()
    link.symlink_to(real)
    expected_roots = [link, *link.parents, real, tmp_path / "real"]  # tmp_path and above: once
    assert config.render_config({}, {}, link) == text([*HEADER, *ANALYTICS, *pins(*expected_roots)])


def test_a_workspace_that_is_a_loop_of_links_still_gets_its_parents_pinned(tmp_path: Path) -> None:
    loop = tmp_path / "ws"
    loop.symlink_to(loop)  # resolving it fails: the path as given is pinned, with its parents
    assert config.render_config({}, {}, loop) == text([*HEADER, *ANALYTICS, *pins(loop, *loop.parents)])


@pytest.mark.parametrize(
    ("run_policy", "lines"),
    [
        ({"web_search": "allow"}, ['web_search = "live"']),
        ({"web_search": "deny"}, ['web_search = "disabled"']),
        ({"web_search": "inherit"}, []),
        ({"web_search": None}, []),
        ({"web_search": "cached"}, []),
        ({}, []),
    ],
)
def test_web_search_follows_the_run_policy(run_policy, lines) -> None:
    assert config.render_config({}, run_policy) == text([*HEADER, *lines, *ANALYTICS])


def test_a_configured_model_endpoint_is_the_runs_provider_without_retries() -> None:
    settings = {"model": 'gpt-"x"', "base_url": "http://127.0.0.1:9/v1", "stream_idle_timeout_ms": "1500"}
    assert config.render_config(settings, {"web_search": "deny"}) == text([
        *HEADER,
        'model = "gpt-\\"x\\""',
        'web_search = "disabled"',
        'model_provider = "gatehouse"',
        "",
        "[model_providers.gatehouse]",
        'name = "Gatehouse-configured Responses endpoint"',
        'base_url = "http://127.0.0.1:9/v1"',
        'env_key = "OPENAI_API_KEY"',
        'wire_api = "responses"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "stream_idle_timeout_ms = 1500",
        *ANALYTICS,
    ])


def test_the_provider_reads_the_key_the_settings_name() -> None:
    rendered = config.render_config({"base_url": "http://m", "env_key": "MY_KEY"}, {})
    assert 'env_key = "MY_KEY"' in rendered.splitlines()
    assert "stream_idle_timeout_ms" not in rendered
    assert "model =" not in rendered


def test_the_administrators_mcp_servers_ask_before_every_tool(tmp_path: Path) -> None:
    servers = {
        "files": {"type": "stdio", "command": "/opt/mcp", "args": ["--root", "/srv"], "env": {"TOKEN": "t"}},
        "plain": {"command": "mcp-plain"},
        "docs": {"type": "http", "url": "https://mcp.example/docs", "headers": {"Authorization": "Bearer x"}},
        "open": {"type": "http", "url": "https://mcp.example/open"},
        "legacy": {"type": "sse", "url": "https://mcp.example/sse"},
    }
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert config.render_config({"mcp_servers": servers}, {}, workspace) == text([
        *HEADER,
        *ANALYTICS,
        "",
        '[mcp_servers."files"]',
        'default_tools_approval_mode = "prompt"',
        'command = "/opt/mcp"',
        'args = ["--root", "/srv"]',
        'env = { "TOKEN" = "t" }',
        "",
        '[mcp_servers."plain"]',
        'default_tools_approval_mode = "prompt"',
        'command = "mcp-plain"',
        "args = []",
        "",
        '[mcp_servers."docs"]',
        'default_tools_approval_mode = "prompt"',
        'url = "https://mcp.example/docs"',
        'http_headers = { "Authorization" = "Bearer x" }',
        "",
        '[mcp_servers."open"]',
        'default_tools_approval_mode = "prompt"',
        'url = "https://mcp.example/open"',
        *pins(workspace, *workspace.parents),
    ])


def test_the_config_is_valid_toml_with_the_pins_codex_reads(tmp_path: Path) -> None:
    import tomllib

    workspace = tmp_path / "ws"
    workspace.mkdir()
    settings = {"model": "m", "base_url": "http://m", "mcp_servers": {"s": {"command": "c", "env": {"A": "1"}}}}
    parsed = tomllib.loads(config.render_config(settings, {"web_search": "allow"}, workspace))
    assert parsed["projects"] == {str(p): {"trust_level": "untrusted"} for p in [workspace, *workspace.parents]}
    assert "approval_policy" not in parsed and "sandbox_mode" not in parsed
    assert parsed["mcp_servers"]["s"] == {"default_tools_approval_mode": "prompt", "command": "c", "args": [], "env": {"A": "1"}}


# -- thread/start -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("run_policy", "sandbox"),
    [
        ({"sandbox": "read-only"}, "read-only"),
        ({"sandbox": "workspace-write"}, "workspace-write"),
        ({"sandbox": "inherit"}, "workspace-write"),
        ({"sandbox": None}, "workspace-write"),
        ({}, "workspace-write"),
        ({"sandbox": "unrestricted"}, "danger-full-access"),
    ],
)
def test_without_the_floor_the_thread_gets_the_sandbox_the_run_policy_names(tmp_path: Path, run_policy, sandbox) -> None:
    assert thread_params(run_policy, None, tmp_path) == {"cwd": str(tmp_path), "approvalPolicy": "untrusted", "sandbox": sandbox}


@pytest.mark.parametrize("value", ["read-only", "workspace-write", "inherit", "unrestricted", None])
def test_inside_the_floor_codexs_own_sandbox_is_off(tmp_path: Path, value) -> None:
    floor = object()
    assert thread_params({"sandbox": value}, floor, tmp_path) == {  # type: ignore[arg-type]
        "cwd": str(tmp_path), "approvalPolicy": "untrusted", "sandbox": "danger-full-access",
    }


@pytest.mark.parametrize("floor", [None, object()])
@pytest.mark.parametrize("value", ["danger-full-access", "READ-ONLY", "full"])
def test_a_sandbox_the_driver_does_not_know_fails_the_run(tmp_path: Path, floor, value) -> None:
    with pytest.raises(RunFailed) as failed:
        thread_params({"sandbox": value}, floor, tmp_path)
    assert failed.value.reason == "agent_protocol_error"
    assert failed.value.detail == f"sandbox {value!r} is not supported by the codex driver"


class Handshake:
    """The session's JSON-RPC calls, answered from `replies` (method -> result)."""

    def __init__(self, replies: dict[str, Any]) -> None:
        self.replies = replies
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.notified: list[str] = []

    async def call(self, method: str, params: Any) -> Any:
        self.calls.append((method, dict(params)))
        return self.replies.get(method, {})

    async def notify(self, method: str, params: Any = None) -> None:
        self.notified.append(method)


def session(tmp_path: Path, monkeypatch, replies: dict[str, Any], **kw: Any) -> tuple[_Session, Handshake]:
    ctx = SimpleNamespace(
        workspace=tmp_path,
        runtime_dir=tmp_path,
        settings=kw.pop("settings", {}),
        interaction_mode=kw.pop("interaction_mode", "default"),
        run_policy=kw.pop("run_policy", {}),
        floor=kw.pop("floor", None),
        resume_state={},
    )
    assert not kw, kw
    s = _Session(ctx)  # type: ignore[arg-type]
    fake = Handshake(replies)
    monkeypatch.setattr(s, "_call", fake.call)
    monkeypatch.setattr(s, "_notify", fake.notify)
    return s, fake


STARTED = {"thread": {"id": "th_1"}, "approvalPolicy": "untrusted", "model": "gpt-test"}


@pytest.mark.parametrize(("interaction_mode", "experimental"), [("default", False), ("plan", True)])
async def test_the_handshake_starts_a_thread_that_asks_before_every_command(
    tmp_path: Path, monkeypatch, interaction_mode, experimental
) -> None:
    s, fake = session(tmp_path, monkeypatch, {"thread/start": STARTED}, interaction_mode=interaction_mode,
                      run_policy={"sandbox": "read-only"})
    await s._handshake()
    assert fake.calls == [
        ("initialize", {
            "clientInfo": {"name": "gatehouse", "title": "Gatehouse", "version": "0.1.0"},
            "capabilities": {"experimentalApi": experimental, "optOutNotificationMethods": sorted(_QUIET)},
        }),
        ("thread/start", {"cwd": str(tmp_path), "approvalPolicy": "untrusted", "sandbox": "read-only"}),
    ]  # fmt: skip
    assert fake.notified == ["initialized"]
    assert (s.thread_id, s.model) == ("th_1", "gpt-test")


async def test_the_handshake_inside_the_floor_turns_codexs_sandbox_off(tmp_path: Path, monkeypatch) -> None:
    s, fake = session(tmp_path, monkeypatch, {"thread/start": STARTED}, floor=object())
    await s._handshake()
    assert fake.calls[1] == ("thread/start", {"cwd": str(tmp_path), "approvalPolicy": "untrusted", "sandbox": "danger-full-access"})


async def test_without_a_model_in_the_reply_the_configured_one_is_named(tmp_path: Path, monkeypatch) -> None:
    s, _fake = session(tmp_path, monkeypatch, {"thread/start": {"thread": {"id": 7}, "approvalPolicy": "untrusted"}},
                       settings={"model": "configured"})
    await s._handshake()
    assert (s.thread_id, s.model) == ("7", "configured")


async def test_without_any_model_none_is_named(tmp_path: Path, monkeypatch) -> None:
    """The name goes into a plan-mode turn's `collaborationMode` settings: nothing made up."""
    s, _fake = session(tmp_path, monkeypatch, {"thread/start": {"thread": {"id": "th"}, "approvalPolicy": "untrusted"}})
    await s._handshake()
    assert (s.thread_id, s.model) == ("th", "")


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        ({"thread": {"id": "th"}, "approvalPolicy": "never"},
         "Codex reports approvalPolicy 'never', not 'untrusted': it would run commands without asking"),
        ({"thread": {"id": "th"}},
         "Codex reports approvalPolicy None, not 'untrusted': it would run commands without asking"),
        ({"approvalPolicy": "untrusted"}, "thread/start returned no thread id"),
        ({"thread": {"id": ""}, "approvalPolicy": "untrusted"}, "thread/start returned no thread id"),
        ({"thread": "th", "approvalPolicy": "untrusted"}, "thread/start returned no thread id"),
        (None, "thread/start returned no thread id"),
    ],
)
async def test_a_thread_codex_would_run_ungated_fails_the_run(tmp_path: Path, monkeypatch, reply, detail) -> None:
    s, _fake = session(tmp_path, monkeypatch, {"thread/start": reply})
    with pytest.raises(RunFailed) as failed:
        await s._handshake()
    assert (failed.value.reason, failed.value.detail) == ("agent_protocol_error", detail)
    assert s.thread_id == ""


async def test_an_unknown_sandbox_fails_before_any_thread_starts(tmp_path: Path, monkeypatch) -> None:
    s, fake = session(tmp_path, monkeypatch, {"thread/start": STARTED}, run_policy={"sandbox": "bogus"})
    with pytest.raises(RunFailed):
        await s._handshake()
    assert [method for method, _ in fake.calls] == ["initialize"]
