"""The policy change form: the rule policy as indented JSON, the run policy as fields.

Every field is validated at this boundary with the messages of the policy core: a rule
document problem names its section and rule, a run-policy problem lands on its field.
Nothing is saved here: the admin calls `policy_save`, which checks the same again.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms

from approvals import policy as core
from approvals.models import Policy
from approvals.policy.run_policy import DEFAULTS, FALLBACK, FEATURE, INHERIT, MAX_RETRIES, QUESTION_ROUTING, ROUTING, SANDBOX
from approvals.policy_versions import document_problems, example_failures, run_policy_problems

GUARDRAILS = ("sandbox", "web_search", "browser")
APPROVAL_FIELDS = ("permission", "plan_review", "question", "timeout_s", "on_timeout", "on_reject", "max_retries", "confirm")
RUN_POLICY_FIELDS = GUARDRAILS + APPROVAL_FIELDS


def pretty(value: Any) -> str:
    """Indented JSON for the textarea, in the document's own key order."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def _choices(values: tuple[str, ...], inherit_label: str) -> list[tuple[str, str]]:
    return [(v, inherit_label if v == INHERIT else v) for v in values]


def _default(name: str) -> str:
    return f"inherit (built-in: {DEFAULTS[name]})"  # type: ignore[literal-required]


class PolicyForm(forms.ModelForm):
    document = forms.CharField(
        label="Rule policy (JSON)",
        # Monospaced by admin-policy.css (a style attribute would be refused by the CSP).
        widget=forms.Textarea(attrs={"rows": 26, "cols": 90, "spellcheck": "false", "class": "policy-document"}),
        help_text='Sections: commands, edits, reads (allow / ask / deny lists and a default), tools, classes, '
        'limits, network (allow / deny host lists and a default), default. A rule is a pattern or '
        '{"match": "git push", "reason": "…"}. "Try it" and the dry run '
        "below read this text as it is now, before you save.",
    )
    sandbox = forms.ChoiceField(
        choices=_choices(SANDBOX, "inherit (the driver's default)"), initial=INHERIT,
        help_text="Where the agent may write, for drivers that model it (see the driver warnings below).",
    )
    web_search = forms.ChoiceField(choices=_choices(FEATURE, "inherit (the driver's default)"), initial=INHERIT,
                                   help_text="The agent's own web search tool.")
    browser = forms.ChoiceField(choices=_choices(FEATURE, "inherit (the driver's default)"), initial=INHERIT,
                                help_text="The agent's browser tool.")
    permission = forms.ChoiceField(
        choices=_choices(ROUTING, _default("permission")), initial=INHERIT, label="Permission requests",
        help_text="What the rule policy asks about: a person decides (ask), or the policy approves or denies every one.",
    )
    plan_review = forms.ChoiceField(choices=_choices(ROUTING, _default("plan_review")), initial=INHERIT,
                                    label="Plan reviews", help_text="A plan the agent proposes before it acts.")
    question = forms.ChoiceField(
        choices=_choices(QUESTION_ROUTING, _default("question")), initial=INHERIT, label="Questions",
        help_text="The agent's questions to a person: asked, or declined at once (never answered by the policy).",
    )
    timeout_s = forms.FloatField(
        required=False, label="Timeout (seconds)",
        help_text=f"How long a person has to decide; empty: inherit (built-in: {DEFAULTS['timeout_s']:g} s); "
        "negative: no deadline. Not 0.",
    )
    on_timeout = forms.ChoiceField(
        choices=_choices(FALLBACK, _default("on_timeout")), initial=INHERIT, label="When nobody answers in time",
        help_text="abort: the run ends (failed); continue: the agent is told nobody answered and goes on; "
        "retry: asked again, up to the retries below, then abort.",
    )
    on_reject = forms.ChoiceField(
        choices=_choices(FALLBACK, _default("on_reject")), initial=INHERIT, label="When a person denies",
        help_text="abort: the run ends (failed); continue: the agent reads the reason and goes on; retry: asked again.",
    )
    max_retries = forms.IntegerField(
        required=False, min_value=0, max_value=MAX_RETRIES, label="Retries",
        help_text=f"How often retry asks again; empty: inherit (built-in: {DEFAULTS['max_retries']}).",
    )
    confirm = forms.CharField(
        required=False, max_length=2000, label="What approving takes (per class, JSON)",
        widget=forms.TextInput(attrs={"size": 80, "spellcheck": "false"}),
        help_text='Per side-effect class: "typed" (the reviewer types the program, branch or file name) or '
        '"second-reviewer" (two different people approve), e.g. {"destructive": "typed", "remote-mutation": '
        '"second-reviewer"}. Empty: nothing beyond Approve, except what the default policy asks for a class.',
    )
    comment = forms.CharField(
        required=False, max_length=500, label="What changed and why",
        widget=forms.TextInput(attrs={"size": 80}),
        help_text="Kept with the new version (a save that changes no content creates none).",
    )

    class Meta:
        model = Policy
        fields = ["name", "description", "is_default", "shadow_policy", "document", "available_to_users", "available_to_groups"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in RUN_POLICY_FIELDS:
            self.fields[name].required = False  # absent or empty: inherit
        instance: Policy = self.instance
        if not self.is_bound:
            self.initial["document"] = pretty(instance.document if instance.pk else core.DEFAULT_POLICY)
            self.initial.update(run_policy_initial(instance.run_policy))
        # The whole document in view (up to a screenful): a policy is read before it is edited.
        text = self.data.get("document", "") if self.is_bound else self.initial["document"]
        self.fields["document"].widget.attrs["rows"] = min(40, max(12, str(text).count("\n") + 2))
        self.fields["description"].widget.attrs["rows"] = 3
        shadow = self.fields["shadow_policy"]
        assert isinstance(shadow, forms.ModelChoiceField)  # a ForeignKey's form field
        shadow.queryset = Policy.objects.exclude(pk=instance.pk) if instance.pk else Policy.objects.all()
        shadow.help_text = (
            "While this policy is live, every step of its runs also records what the shadow policy would have "
            "decided — it decides nothing. Attach a stricter policy here, watch its agreement below, then make it live."
        )

    def _get_validation_exclusions(self) -> Any:  # type: ignore[misc]  # Django's, missing from the stubs
        # One default at a time is the service's job (it unmarks the previous default).
        exclusions = super()._get_validation_exclusions()  # type: ignore[misc]
        exclusions.add("is_default")
        return exclusions

    def clean_document(self) -> Any:
        try:
            document = core.parse_json_strict(self.cleaned_data["document"].encode())
        except core.PolicyError as exc:
            raise forms.ValidationError(f"This is not valid JSON: {exc.message}") from None
        problems = document_problems(document) or example_failures(document)
        if problems:
            raise forms.ValidationError([p.message for p in problems])
        return document

    def clean_confirm(self) -> Any:
        text = (self.cleaned_data.get("confirm") or "").strip()
        if not text:
            return None
        try:
            return core.parse_json_strict(text.encode())
        except core.PolicyError as exc:
            raise forms.ValidationError(f"This is not valid JSON: {exc.message}") from None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        run_policy = run_policy_from(cleaned)
        for problem in run_policy_problems(run_policy):
            name = problem.where.removeprefix("approvals.").split(".")[0]
            self.add_error(name if name in self.fields else None, problem.message)
        self.instance.run_policy = run_policy
        return cleaned


def run_policy_initial(run_policy: Any) -> dict[str, Any]:
    """The form's run-policy fields for a stored run policy (null: every field inherits)."""
    try:
        parsed = core.parse_run_policy(run_policy) if run_policy is not None else core.RunPolicy()
    except core.PolicyError:
        parsed = core.RunPolicy()
    values = {name: getattr(parsed, name) for name in RUN_POLICY_FIELDS}
    values["confirm"] = json.dumps(dict(parsed.confirm)) if parsed.confirm else ""
    if values["timeout_s"] is not None and float(values["timeout_s"]).is_integer():
        values["timeout_s"] = int(values["timeout_s"])
    return values


def run_policy_from(cleaned: dict[str, Any]) -> dict[str, Any] | None:
    """The run policy JSON the fields say: only what is not inherited; every field on
    inherit is null (the server's default run policy, else the built-ins, applies)."""
    policy: dict[str, Any] = {}
    approvals: dict[str, Any] = {}
    for name in RUN_POLICY_FIELDS:
        value = cleaned.get(name)
        if value in (None, "", INHERIT, {}):
            continue
        if name == "timeout_s" and float(value).is_integer():
            value = int(value)
        (policy if name in GUARDRAILS else approvals)[name] = value
    if approvals:
        policy["approvals"] = approvals
    return policy or None


TRY_KINDS = [
    ("command", "a shell command"),
    ("edit", "a file the agent edits"),
    ("read", "a file the agent reads"),
    ("request", "a whole request (JSON)"),
]


class TryItForm(forms.Form):
    """"Try it": one request under the document being edited (not saved)."""

    document = forms.CharField()
    try_kind = forms.ChoiceField(choices=TRY_KINDS, initial="command", label="Try")
    try_input = forms.CharField(max_length=20000, strip=False, label="Command, path or request")
    try_workspace = forms.CharField(max_length=1024, required=False, label="Workspace")

    def clean_try_workspace(self) -> str:
        workspace = (self.cleaned_data.get("try_workspace") or "").strip() or "/workspace"
        if not workspace.startswith("/") or "\x00" in workspace:
            raise forms.ValidationError("The workspace is an absolute path (the run's directory).")
        return workspace

    def tool_request(self) -> dict[str, Any]:
        """The canonical request to evaluate (call after is_valid). Raises PolicyError."""
        kind, text, workspace = (
            self.cleaned_data["try_kind"], self.cleaned_data["try_input"], self.cleaned_data["try_workspace"]
        )
        if kind == "request":
            request = core.parse_json_strict(text.encode())
            if isinstance(request, dict):
                request.setdefault("cwd", workspace)
            return request  # type: ignore[no-any-return]
        if kind == "command":
            return {"tool": "bash", "input": {"command": text}, "cwd": workspace}
        return {"tool": "write" if kind == "edit" else "read", "input": {"file_path": text.strip()}, "cwd": workspace}


class DryRunForm(forms.Form):
    document = forms.CharField()
    limit = forms.IntegerField(required=False, min_value=1, max_value=5000)


class PolicyImportForm(forms.Form):
    file = forms.FileField(help_text="A policy exported from Gatehouse (policy_export), or a bare rule document.")
    name = forms.CharField(required=False, max_length=100,
                           help_text="The policy to create or update; empty: the name in the file.")
    comment = forms.CharField(required=False, max_length=500, help_text="Kept with the new version.")
