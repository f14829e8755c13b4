"""The policy admin (issue 10): structured editing, refusals that name section and rule,
"Try it" and the dry run on the unsaved document, versions, diffs and restore, import and
export; everything else stays read-only."""

from __future__ import annotations

import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from approvals.models import Policy, PolicyVersion
from approvals.policy_versions import policy_export_json, policy_save
from runs.models import Step
from runs.services import run_create

pytestmark = pytest.mark.django_db

STRICT = {"commands": {"allow": ["ls"], "deny": [{"match": "git push", "reason": "Publishing is a person's job."}]},
          "default": "ask"}
RUN_FIELDS = {"sandbox": "inherit", "web_search": "inherit", "browser": "inherit", "permission": "inherit",
              "plan_review": "inherit", "question": "inherit", "timeout_s": "", "on_timeout": "inherit",
              "on_reject": "inherit", "max_retries": ""}


@pytest.fixture
def admin_client(client: Client, reviewer: Any) -> Client:
    client.force_login(reviewer)  # a superuser
    return client


@pytest.fixture
def strict() -> Policy:
    return policy_save(policy=Policy(name="strict", document=STRICT))


def form(document: Any, **fields: Any) -> dict[str, Any]:
    return {"name": "strict", "description": "", "document": json.dumps(document), **RUN_FIELDS, **fields}


def change(client: Client, policy: Policy, data: dict[str, Any]) -> Any:
    return client.post(f"/admin/approvals/policy/{policy.pk}/change/", data)


def errors(response: Any) -> dict[str, list[str]]:
    return {name: [str(e) for e in errs] for name, errs in response.context["adminform"].form.errors.items()}


# --- editing ------------------------------------------------------------------------------------


def test_the_change_page_shows_indented_json_and_the_run_policy_as_fields(admin_client: Client, strict: Policy) -> None:
    strict.run_policy = {"sandbox": "read-only", "approvals": {"timeout_s": 600, "on_reject": "abort"}}
    policy_save(policy=strict)
    page = admin_client.get(f"/admin/approvals/policy/{strict.pk}/change/")
    assert page.status_code == HTTPStatus.OK
    html = page.content.decode()
    # Indented and escaped (PostgreSQL's jsonb keeps its own key order, so no order is assumed).
    assert "&quot;commands&quot;: {\n" in html and "    &quot;allow&quot;: [\n      &quot;ls&quot;\n    ]" in html
    bound = page.context["adminform"].form
    assert (bound["sandbox"].value(), bound["timeout_s"].value(), bound["on_reject"].value()) == ("read-only", 600, "abort")
    assert bound["question"].value() == "inherit" and "inherit (built-in: ask)" in html
    for section in ("Try it, before you save", "Dry run on history", "Versions", "Shadow mode", "What each agent cannot enforce"):
        assert section in html


def test_a_save_through_the_form_is_a_new_version_with_its_author_and_comment(
    admin_client: Client, strict: Policy, reviewer: Any
) -> None:
    response = change(admin_client, strict, form(STRICT, timeout_s="900", on_reject="continue", question="auto-deny",
                                                 comment="Fifteen minutes to decide"))
    assert response.status_code == HTTPStatus.FOUND, errors(response)
    strict.refresh_from_db()
    assert strict.run_policy == {"approvals": {"question": "auto-deny", "timeout_s": 900, "on_reject": "continue"}}
    latest = PolicyVersion.objects.filter(policy=strict).order_by("-number").first()
    assert latest is not None and (latest.number, latest.author, latest.comment) == (2, reviewer, "Fifteen minutes to decide")
    # Every field back on inherit: no run policy (the server's default applies).
    assert change(admin_client, strict, form(STRICT)).status_code == HTTPStatus.FOUND
    strict.refresh_from_db()
    assert strict.run_policy is None and PolicyVersion.objects.filter(policy=strict).count() == 3
    # Saving unchanged content records nothing.
    assert change(admin_client, strict, form(STRICT, comment="nothing")).status_code == HTTPStatus.FOUND
    assert PolicyVersion.objects.filter(policy=strict).count() == 3


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ({"commands": {"deny": ["git push", {"match": "  "}]}}, ["commands.deny[1]", "the pattern is empty"]),
        ({"classes": {"destructive": "maybe"}}, ["classes.destructive", "unknown decision 'maybe'"]),
        ({"edits": {"allow": ["src/**"], "default": "perhaps"}}, ["edits.default", "unknown decision 'perhaps'"]),
        ({"comands": {}}, ["unknown key 'comands'", "did you mean 'commands'"]),
        ({"tools": {"deploy": {"decision": "allow", "why": "x"}}}, ["tools.deploy.why", "unknown key 'why'"]),
        # every problem at once, not only the first
        ({"commands": {"allow": [""], "deny": ["rm -rf", 5]}, "default": "maybe"},
         ["commands.allow[0]", "commands.deny[1]", "default: unknown decision"]),
    ],
)
def test_an_invalid_rule_policy_is_refused_naming_section_and_rule(
    admin_client: Client, strict: Policy, document: Any, said: list[str]
) -> None:
    response = change(admin_client, strict, form(document))
    assert response.status_code == HTTPStatus.OK
    message = " ".join(errors(response)["document"])
    assert all(part in message for part in said), message
    assert Policy.objects.get(pk=strict.pk).document == STRICT and PolicyVersion.objects.filter(policy=strict).count() == 1


def test_json_that_does_not_parse_is_refused_before_anything(admin_client: Client, strict: Policy) -> None:
    response = change(admin_client, strict, {**form(STRICT), "document": '{"default": "ask", "default": "deny"}'})
    assert "appears more than once" in " ".join(errors(response)["document"])


def test_a_run_policy_error_lands_on_its_field(admin_client: Client, strict: Policy) -> None:
    response = change(admin_client, strict, form(STRICT, timeout_s="0"))
    assert response.status_code == HTTPStatus.OK
    assert "approvals.timeout_s must not be 0" in " ".join(errors(response)["timeout_s"])
    response = change(admin_client, strict, form(STRICT, max_retries="500"))
    assert "max_retries" in errors(response)


def test_marking_a_policy_default_unmarks_the_previous_one(admin_client: Client, strict: Policy) -> None:
    response = change(admin_client, strict, form(STRICT, is_default="on"))
    assert response.status_code == HTTPStatus.FOUND, errors(response)
    assert [p.name for p in Policy.objects.filter(is_default=True)] == ["strict"]


# --- Try it ---------------------------------------------------------------------------------------


@pytest.fixture
def staff_client(make_user: Callable[..., Any]) -> Callable[..., Client]:
    def make(*perms: str) -> Client:
        user = make_user("sam", superuser=False, perms=perms)
        user.is_staff = True
        user.save()
        client = Client(enforce_csrf_checks=True)
        client.force_login(user)
        client.get("/admin/")
        client.csrf_token = client.cookies["csrftoken"].value  # type: ignore[attr-defined]
        return client

    return make


def try_it(client: Client, document: Any, text: str, kind: str = "command", **extra: str) -> Any:
    data = {"document": document if isinstance(document, str) else json.dumps(document), "try_kind": kind,
            "try_input": text, "try_workspace": "/srv/app", **extra}
    headers = {"HX-Request": "true"}
    if getattr(client, "csrf_token", None):
        headers["X-CSRFToken"] = client.csrf_token  # type: ignore[attr-defined]
    return client.post("/admin/approvals/policy/try/", data, headers=headers)


def test_try_it_explains_the_unsaved_document_command_by_command(staff_client: Callable[..., Client]) -> None:
    client = staff_client("approvals.change_policy", "approvals.view_policy")
    draft = {"commands": {"allow": ["ls"], "deny": [{"match": "git push", "reason": "Not from <here>."}]}, "default": "ask"}
    response = try_it(client, draft, "ls && git push origin main")
    assert response.status_code == HTTPStatus.OK
    html = response.content.decode()
    assert 'verdict-deny">deny' in html and "commands.deny[0]" in html and "Not from &lt;here&gt;." in html
    assert html.count('<li class="segment') == 2 and "commands.allow[0]" in html and "this is why it is denied" in html

    edit = try_it(client, {"edits": {"deny": [".env*"], "default": "allow"}}, ".env.local", kind="edit").content.decode()
    assert 'verdict-deny">deny' in edit and "edits.deny[0]" in edit and "/srv/app/.env.local" in edit
    request = json.dumps({"tool": "dropDatabase", "input": {}})
    raw = try_it(client, {"tools": {"dropDatabase": "deny"}}, request, kind="request").content.decode()
    assert "tools.dropDatabase" in raw


def test_try_it_reads_a_command_with_the_unsaved_documents_own_program_model(
        staff_client: Callable[..., Client]) -> None:
    client = staff_client("approvals.change_policy", "approvals.view_policy")
    draft = {"classes": {"read-only": "allow", "local-mutation": "allow"}, "default": "ask",
             "programs": {"mytool": {"class": "read-only", "options": "v/verbose o/output:", "effects": {"-o": "writes"},
                                     "operands": "read", "summary": "our deployment helper"}}}
    known = try_it(client, draft, "mytool -v src/a.txt").content.decode()
    assert 'verdict-allow">allow' in known and "classes.read-only" in known
    assert "this policy's model" in known and "our deployment helper" in known
    assert "<code>-v</code>" in known and "<code>src/a.txt</code>" in known and "not in the model" not in known

    unlisted = try_it(client, draft, "mytool --frobnicate src/a.txt").content.decode()
    assert 'verdict-ask">ask' in unlisted and "commands.unverified" in unlisted
    assert "not in the model:</strong> <code>--frobnicate</code>" in unlisted

    writes = try_it(client, draft, "mytool -o out.txt a").content.decode()
    assert "classes.local-mutation" in writes and "<code>-o</code>" in writes

    # without the entry the same command is an unknown program; a built-in one says so
    del draft["programs"]
    unknown = try_it(client, draft, "mytool -v src/a.txt").content.decode()
    assert 'verdict-ask">ask' in unknown and "has no model: an unknown program" in unknown
    assert "read by the built-in model of <code>ls</code>" in try_it(client, draft, "ls -la").content.decode()

    # an entry is validated like the rest of the document, and named
    broken = try_it(client, {**draft, "programs": {"mytool": {"class": "harmless"}}}, "mytool").content.decode()
    assert "programs.mytool.class" in broken and "segment" not in broken


def test_try_it_says_what_keeps_it_from_answering(staff_client: Callable[..., Client]) -> None:
    client = staff_client("approvals.change_policy")
    assert "not valid JSON" in try_it(client, "{", "ls").content.decode()
    assert "deny[0]" in try_it(client, {"commands": {"deny": [""]}}, "ls").content.decode()
    assert "The request" in try_it(client, STRICT, "not json", kind="request").content.decode()
    assert "absolute path" in try_it(client, STRICT, "ls", try_workspace="relative").content.decode()


def test_try_it_needs_staff_the_change_permission_and_the_csrf_token(
    staff_client: Callable[..., Client], client: Client, make_user: Callable[..., Any]
) -> None:
    assert try_it(staff_client("approvals.view_policy"), STRICT, "ls").status_code == HTTPStatus.FORBIDDEN
    without_token = Client(enforce_csrf_checks=True)
    user = make_user("editor", superuser=False, perms=("approvals.change_policy",))
    user.is_staff = True
    user.save()
    without_token.force_login(user)
    assert try_it(without_token, STRICT, "ls").status_code == HTTPStatus.FORBIDDEN  # CSRF
    client.force_login(make_user("plain", superuser=False, perms=("approvals.change_policy",)))  # not staff
    assert try_it(client, STRICT, "ls").status_code == HTTPStatus.FOUND  # to the admin login


# --- dry run in the admin ---------------------------------------------------------------------------


def test_the_dry_run_fragment_summarises_and_links_each_change(admin_client: Client, strict: Policy) -> None:
    from approvals.gate import gate_request

    run = run_create(driver="scripted", scenario={"steps": [{"message": "hi"}]}, policy_name="strict")
    for command in ("ls", "git push origin main", "make"):
        gate_request(run_id=run.pk, tool="bash", input={"command": command}, cwd=run.workspace)
    draft = {"commands": {"allow": ["ls", "make"]}, "default": "deny"}
    response = admin_client.post(f"/admin/approvals/policy/{strict.pk}/dry-run/", {"document": json.dumps(draft)})
    html = response.content.decode()
    assert "Replayed the last 3 recorded requests" in html
    assert "would now allow 1, would now deny 0, would now ask 0" in html  # push: deny → deny (default)
    make = Step.objects.get(run=run, seq=3)
    assert f'href="/runs/{run.pk}/"' in html and f"/admin/runs/step/{make.pk}/change/" in html
    bad = admin_client.post(f"/admin/approvals/policy/{strict.pk}/dry-run/", {"document": "[1"}).content.decode()
    assert "not valid JSON" in bad


# --- versions, diffs, restore ---------------------------------------------------------------------


def test_versions_are_listed_diffed_and_restored_as_new(admin_client: Client, strict: Policy) -> None:
    strict.document = {**STRICT, "default": "deny", "tools": {"x": {"decision": "deny", "reason": "<b>never</b>"}}}
    policy_save(policy=strict, comment="stricter")
    page = admin_client.get(f"/admin/approvals/policy/{strict.pk}/change/").content.decode()
    assert 'id="version-2"' in page and "stricter" in page and "Restore as new version" in page

    diff = admin_client.get(f"/admin/approvals/policy/{strict.pk}/versions/diff/?a=1&b=2").content.decode()
    assert 'class="diff-del">-    &quot;default&quot;: &quot;ask&quot;' in diff
    assert 'class="diff-add">+    &quot;default&quot;: &quot;deny&quot;' in diff
    assert "&lt;b&gt;never&lt;/b&gt;" in diff and "<b>never</b>" not in diff

    url = f"/admin/approvals/policy/{strict.pk}/versions/1/restore/"
    assert admin_client.get(url).status_code == HTTPStatus.METHOD_NOT_ALLOWED
    response = admin_client.post(url, follow=True)
    assert "Restored version 1 of strict as version 3." in response.content.decode()
    assert Policy.objects.get(pk=strict.pk).document == STRICT
    again = admin_client.post(url, follow=True).content.decode()
    assert "nothing to restore" in again and PolicyVersion.objects.filter(policy=strict).count() == 3


def test_restore_needs_the_csrf_token(staff_client: Callable[..., Client], strict: Policy) -> None:
    strict.document = {"default": "deny"}
    policy_save(policy=strict)
    client = staff_client("approvals.change_policy", "approvals.view_policy")
    url = f"/admin/approvals/policy/{strict.pk}/versions/1/restore/"
    assert client.post(url).status_code == HTTPStatus.FORBIDDEN
    assert client.post(url, {"csrfmiddlewaretoken": client.csrf_token}).status_code == HTTPStatus.FOUND  # type: ignore[attr-defined]
    assert PolicyVersion.objects.filter(policy=strict).count() == 3


# --- import and export --------------------------------------------------------------------------


def test_export_downloads_the_json_file_that_import_reads_back(admin_client: Client, strict: Policy) -> None:
    download = admin_client.get(f"/admin/approvals/policy/{strict.pk}/export/json/")
    assert download["Content-Disposition"] == 'attachment; filename="strict.json"'
    assert download.content.decode() == policy_export_json(strict)
    action = admin_client.post("/admin/approvals/policy/", {"action": "export_json", "_selected_action": [strict.pk]})
    assert action.content.decode() == policy_export_json(strict)

    upload = SimpleUploadedFile("strict.json", download.content, content_type="application/json")
    response = admin_client.post("/admin/approvals/policy/import/", {"file": upload, "name": "copy", "comment": ""})
    assert response.status_code == HTTPStatus.FOUND
    copy = Policy.objects.get(name="copy")
    assert copy.document == STRICT
    (version,) = PolicyVersion.objects.filter(policy=copy)
    assert version.comment == "Imported from strict.json in the admin."


def test_import_refuses_an_invalid_file_naming_the_problem(admin_client: Client) -> None:
    upload = SimpleUploadedFile("bad.json", json.dumps({"name": "bad", "document": {"default": "maybe"}}).encode())
    response = admin_client.post("/admin/approvals/policy/import/", {"file": upload})
    assert response.status_code == HTTPStatus.OK
    assert "unknown decision &#x27;maybe&#x27;" in response.content.decode() and not Policy.objects.filter(name="bad").exists()
    assert "Import a policy" in admin_client.get("/admin/approvals/policy/").content.decode()


# --- what stays read-only -----------------------------------------------------------------------


@pytest.mark.parametrize("model", ["runs/run", "runs/step", "runs/activity", "runs/agentsession", "approvals/approval",
                                   "approvals/grant", "approvals/policyversion"])
def test_recorded_rows_are_read_only_in_the_admin(admin_client: Client, model: str) -> None:
    assert admin_client.get(f"/admin/{model}/add/").status_code == HTTPStatus.FORBIDDEN
    listing = admin_client.get(f"/admin/{model}/")
    assert listing.status_code == HTTPStatus.OK and f'href="/admin/{model}/add/"' not in listing.content.decode()


def test_failing_examples_block_a_save_each_listed(admin_client: Client, strict: Policy) -> None:
    document = {
        "commands": {"deny": [{"match": "git push", "reason": "Publishing is a person's job.",
                               "examples": {"match": ["git push origin main", "git status"], "not_match": ["git pull"]}}]},
        "examples": [{"request": "git push --force", "expect": "allow"}],
        "default": "ask",
    }
    response = change(admin_client, strict, form(document))
    assert response.status_code == HTTPStatus.OK
    listed = errors(response)["document"]
    assert len(listed) == 2, listed
    assert listed[0].startswith("Example commands.deny[0].examples.match[1] fails") and "`git status`" in listed[0]
    assert listed[1].startswith("Example examples[0] fails") and "expected allow" in listed[1]
    assert PolicyVersion.objects.filter(policy=strict).count() == 1
    fixed = {**document, "commands": {"deny": [{**document["commands"]["deny"][0],  # type: ignore[index]
                                                "examples": {"match": ["git push origin main"], "not_match": ["git pull"]}}]},
             "examples": [{"request": "git push --force", "expect": "deny"}]}
    assert change(admin_client, strict, form(fixed, comment="with examples")).status_code == HTTPStatus.FOUND
    assert Policy.objects.get(pk=strict.pk).document == fixed


def test_what_approving_takes_is_edited_as_json_and_a_bad_class_lands_on_its_field(admin_client: Client, strict: Policy) -> None:
    wanted = {"destructive": "typed", "remote-mutation": "second-reviewer"}
    response = change(admin_client, strict, form(STRICT, confirm=json.dumps(wanted)))
    assert response.status_code == HTTPStatus.FOUND, errors(response)
    strict.refresh_from_db()
    assert strict.run_policy == {"approvals": {"confirm": wanted}}
    page = admin_client.get(f"/admin/approvals/policy/{strict.pk}/change/").content.decode()
    assert "second-reviewer" in page  # shown back, so a later save keeps it
    response = change(admin_client, strict, form(STRICT, confirm='{"risky": "typed"}'))
    assert "approvals.confirm.risky" in " ".join(errors(response)["confirm"])
