"""How an ACP agent's profile is inferred from its command line, and what the `gemini`
profile writes into the run's home (no agent CLI needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drivers.acp import agents


@pytest.mark.parametrize(
    ("command", "profile"),
    [
        ("gemini --acp", "gemini"),
        ("gemini --experimental-acp", "gemini"),
        ("node /opt/node_modules/@google/gemini-cli/bundle/gemini.js --acp", "gemini"),
        ("/usr/local/bin/gemini --acp --model gemini-2.5-flash", "gemini"),
        ("gemini", "generic"),  # not in ACP mode: nothing known about it
        ("my-agent --acp", "generic"),
        ("opencode acp", "opencode"),
    ],
)
def test_the_profile_is_inferred_from_the_command_line(command: str, profile: str) -> None:
    spec = agents.agent_for({"agent": "x"}, {"acp_agents": {"x": command}})
    assert spec.profile == profile


def test_a_profile_given_explicitly_wins() -> None:
    spec = agents.agent_for({"agent": "x"}, {"acp_agents": {"x": {"command": "gemini --acp", "profile": "generic"}}})
    assert spec.profile == "generic"


def test_gemini_runs_with_settings_that_take_away_its_unasked_tools(tmp_path: Path) -> None:
    spec = agents.agent_for({"agent": "g"}, {"acp_agents": {"g": {"command": "gemini --acp", "env": ["GEMINI_API_KEY"]}}})
    runtime = tmp_path / "runtime"
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    (runtime / "home" / ".gemini").mkdir(parents=True)
    # What the agent (or anyone) left in its home is replaced, and a link is not followed.
    (runtime / "home" / ".gemini" / "settings.json").symlink_to(outside)

    env = agents.environment(spec, {"env_values": {"GEMINI_API_KEY": "k"}}, runtime, {})

    written = Path(env["HOME"]) / ".gemini" / "settings.json"
    assert not written.is_symlink() and outside.read_text() == "{}"
    settings = json.loads(written.read_text())
    assert settings == {"tools": {"exclude": list(agents.GEMINI_UNASKED_TOOLS)}}
    assert {"grep_search", "glob", "list_directory", "invoke_agent"} <= set(agents.GEMINI_UNASKED_TOOLS)
    # No allow-list: in Gemini CLI 0.61.0 a tool named in tools.core is allowed without asking.
    assert "core" not in settings["tools"] and "allowed" not in settings["tools"]
    assert env["GEMINI_API_KEY"] == "k"


def test_a_linked_gemini_directory_is_replaced_not_written_through(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gemini").symlink_to(elsewhere)
    agents.write_gemini_settings(home)
    assert not (home / ".gemini").is_symlink() and (home / ".gemini" / "settings.json").is_file()
    assert list(elsewhere.iterdir()) == []
