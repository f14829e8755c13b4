"""The console's "New run" form: parses the boundary (JSON), the service validates the rest."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from approvals.access import policies_usable, policies_visible
from approvals.policy import PolicyError, parse_json_strict
from repos.models import Repository
from runs.models import AgentSession
from runs.services import may_override_policy

EXAMPLE_SCENARIO = {
    "steps": [
        {"tool": "bash", "input": {"command": "echo hello > hello.txt && cat hello.txt"}},
        {"tool": "write", "input": {"file_path": "notes.md", "content": "# Notes\n"}},
        {"tool": "read", "input": {"file_path": "notes.md"}},
        {"message": "All done."},
    ]
}


SESSION_CHOICES = 50


def session_choices(user: Any, *, chosen: Any = None) -> list[tuple[str, str]]:
    """"New session" and the latest sessions `user` may join (their own; all with the
    permission to override policies), plus the one asked for in the URL."""
    sessions = AgentSession.objects.order_by("-id")
    if user is not None and not may_override_policy(user):
        sessions = sessions.filter(created_by_id=getattr(user, "pk", None))
    rows = list(sessions.values_list("id", "title")[:SESSION_CHOICES])
    ids = {pk for pk, _ in rows}
    chosen_id = int(chosen) if str(chosen or "").isdigit() and len(str(chosen)) < 19 else None
    if chosen_id is not None and chosen_id not in ids:
        rows.insert(0, (chosen_id, ""))
    return [("", "New session")] + [(str(pk), f"Session {pk}" + (f": {title}" if title else "")) for pk, title in rows]


def parse_json_object(text: str, what: str) -> dict[str, Any]:
    """A JSON object typed in a console field (ValidationError saying what is wrong)."""
    return _json_object(text, what)


def _json_object(text: str, what: str) -> dict[str, Any]:
    """The console's JSON fields pass the same strict boundary as the API's bodies."""
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
        help_text="An existing directory; empty = a fresh directory under var/workspaces/ (or a repository's clone).",
    )
    # Instead of a workspace: a registered repository (repos/); the worker clones it.
    repository = forms.ChoiceField(
        required=False, choices=[],
        help_text="Or a registered repository: the worker makes the run's workspace a clone of it, on the branch "
        "gatehouse/run-<id> (leave the workspace empty).",
    )
    ref = forms.CharField(
        required=False, max_length=200,
        help_text="With a repository: the branch, tag or commit to start from (empty: its default ref).",
    )
    # An existing session to continue (its grants, modes and the agent's conversation); the
    # service decides whether this user may join it (403 foreign_session otherwise).
    session = forms.IntegerField(
        required=False, min_value=1, max_value=2**63 - 1, widget=forms.Select,
        help_text="A new session, or one of yours to continue: the run gets its grants and modes, and Claude Code "
        "and Codex resume the agent's conversation (use the same workspace).",
    )

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        policy_field = self.fields["policy"]
        assert isinstance(policy_field, forms.ChoiceField)  # declared as one above
        # A policy this person may not name (looser than the default, not made available to
        # them, no runs.override_policy: approvals.access) is listed as such; the service
        # refuses it (403 policy_override_forbidden, shown in the form) if chosen anyway.
        usable = {p.pk for p in policies_usable(user)}
        policy_field.choices = [("", "Default policy")] + [
            (p.name, p.name if p.pk in usable else f"{p.name} (looser than the default: needs the permission to override policies)")
            for p in policies_visible(None).order_by("name")
        ]
        self.fields["session"].widget.choices = session_choices(user, chosen=self["session"].value())
        repository_field = self.fields["repository"]
        assert isinstance(repository_field, forms.ChoiceField)
        repository_field.choices = [("", "None: use the workspace")] + [
            (name, name) for name in Repository.objects.order_by("name").values_list("name", flat=True)]

    def clean_scenario(self) -> Any:
        text = self.cleaned_data["scenario"].strip()
        # Only the scripted driver replays a scenario; the agents work from the prompt.
        if not text or self.cleaned_data.get("driver", "scripted") != "scripted":
            return None
        return _json_object(text, 'scenario (such as {"steps": [...]})')

    def clean_session(self) -> Any:
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


class FollowUpForm(forms.Form):
    """The next turn of a session: a prompt (and, for the scripted driver, its scenario)."""

    prompt = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=100_000,
        help_text="Starts the next run of this session: same agent, policy and workspace, the session's modes "
        "and grants; Claude Code and Codex resume their own conversation with it.",
    )
    scenario = forms.CharField(
        label="Scenario (JSON, scripted driver only)", required=False,
        widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false", "class": "mono"}),
        help_text="The scripted driver replays this scenario as the next turn.",
    )

    def __init__(self, *args: Any, driver: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.driver = driver
        if driver != "scripted":
            del self.fields["scenario"]

    def clean_scenario(self) -> Any:
        text = self.cleaned_data.get("scenario", "").strip()
        if not text:
            raise forms.ValidationError("The scripted driver needs a scenario for its next turn.")
        return _json_object(text, 'scenario (such as {"steps": [...]})')

    def add_service_error(self, field: str | None, message: str) -> None:
        root = (field or "").split(".")[0].split("[")[0]
        self.add_error(root if root in self.fields else None, message)
