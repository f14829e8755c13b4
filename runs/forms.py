"""The console's "New run" form: parses the boundary (JSON), the service validates the rest."""

from __future__ import annotations

import json
from typing import Any

from django import forms

EXAMPLE_SCENARIO = {
    "steps": [
        {"tool": "bash", "input": {"command": "echo hello > hello.txt && cat hello.txt"}},
        {"tool": "write", "input": {"file_path": "notes.md", "content": "# Notes\n"}},
        {"tool": "read", "input": {"file_path": "notes.md"}},
        {"message": "All done."},
    ]
}


def _json_object(text: str, what: str) -> dict[str, Any]:
    """The console's JSON fields pass the same strict boundary as the API's bodies."""
    from approvals.policy import PolicyError, parse_json_strict

    try:
        value = parse_json_strict(text)
    except PolicyError as exc:
        raise forms.ValidationError(f"Not valid JSON: {exc.message}") from None
    if not isinstance(value, dict):
        raise forms.ValidationError(f"The {what} must be a JSON object.")
    return value


class RunCreateForm(forms.Form):
    driver = forms.ChoiceField(
        choices=[("scripted", "Scripted (replays the scenario)"), ("claude-code", "Claude Code"), ("codex", "Codex")],
        initial="scripted",
        help_text="Claude Code and Codex run the real CLI on the prompt (see the README for model accounts).",
    )
    policy = forms.ChoiceField(
        required=False,
        help_text="The rule policy the run is decided by; empty = the default policy.",
    )
    prompt = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="What the run is for; shown on the run page.",
    )
    scenario = forms.CharField(
        label="Scenario (JSON, scripted driver only)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "class": "mono"}),
        initial=json.dumps(EXAMPLE_SCENARIO, indent=2),
        help_text="The steps the scripted driver replays in the run's workspace: tool, message, question or plan.",
    )
    run_policy = forms.CharField(
        label="Run policy (JSON, optional)",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "class": "mono"}),
        help_text=(
            "Empty = inherit (the session's, else the chosen policy's run policy). A run policy given here "
            "replaces it whole and may only tighten the policy's (unless you may override policies): fields "
            "left out take the built-in defaults. "
            'Example: {"approvals": {"question": "ask", "timeout_s": 20}}'
        ),
    )
    workspace = forms.CharField(
        required=False,
        max_length=1024,
        help_text="An existing directory; empty = a fresh directory under var/workspaces/.",
    )
    # "New run in this session" on a run page; the service decides whether it may join.
    session = forms.IntegerField(required=False, min_value=1, max_value=2**63 - 1, widget=forms.HiddenInput)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from approvals.models import Policy

        super().__init__(*args, **kwargs)
        policy_field = self.fields["policy"]
        assert isinstance(policy_field, forms.ChoiceField)  # declared as one above
        policy_field.choices = [("", "Default policy")] + [
            (name, name) for name in Policy.objects.order_by("name").values_list("name", flat=True)
        ]

    def clean_scenario(self) -> Any:
        text = self.cleaned_data["scenario"].strip()
        # Only the scripted driver replays a scenario; the agents work from the prompt.
        if not text or self.cleaned_data.get("driver", "scripted") != "scripted":
            return None
        return _json_object(text, 'scenario (such as {"steps": [...]})')

    def clean_session(self) -> Any:
        from runs.models import AgentSession

        session_id = self.cleaned_data.get("session")
        if session_id is None:
            return None
        session = AgentSession.objects.filter(pk=session_id).first()
        if session is None:
            raise forms.ValidationError(f"No session {session_id}.")
        return session

    def clean_run_policy(self) -> Any:
        text = self.cleaned_data["run_policy"].strip()
        if not text:
            return None
        return _json_object(text, "run policy")


    def add_service_error(self, field: str | None, message: str) -> None:
        """Show a service refusal on the field it names (`scenario.steps[0].tool` -> scenario)."""
        root = (field or "").split(".")[0].split("[")[0]
        if root in self.fields and not self.fields[root].widget.is_hidden:
            inner = (field or "")[len(root):].lstrip(".")
            said = not inner or inner in message  # the services often name the path already
            self.add_error(root, message if said else f"{inner}: {message}")
        else:
            self.add_error(None, f"{field}: {message}" if field else message)
