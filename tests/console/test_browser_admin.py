"""The administrator edits a policy in the admin, in a real browser (issue 10), against the
real one-process server: open "Standard review", change a rule, see "Try it" answer under
the unsaved text and the dry run on the recorded history, save with a comment, and see the
new version. The change page's screenshot is the README's (docs/screenshots/ only when
missing or GATEHOUSE_UPDATE_DOCS=1; always var/screenshots/).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.console.browser import launch_chromium, running_server, shot
from tests.console.test_browser_decisions import Console
from tests.console.test_browser_inbox import docs_shot

pytestmark = pytest.mark.browser

# What the administrator types: Standard review, with `mkdir` denied.
EDITED = {
    "commands": {"deny": [{"match": "mkdir", "reason": "Build directories come from the build, not the agent."}]},
    "edits": {"default": "allow"},
    "reads": {"allow": ["**"], "default": "ask"},
    "classes": {"read-only": "allow", "local-mutation": "allow", "outside-workspace": "ask",
                "remote-mutation": "ask", "destructive": "deny", "protected": "deny"},
    "default": "ask",
}


def _history(console: Console) -> None:
    """Requests Standard review decided (allowed, so the run completes on its own)."""
    run = console.start_run("Set up the build", [
        {"tool": "bash", "input": {"command": "ls"}},
        {"tool": "bash", "input": {"command": "mkdir -p build"}},
        {"tool": "bash", "input": {"command": "git status"}},
        {"message": "Ready."},
    ], policy="Standard review")
    assert console.wait_run(run["id"])["status"] == "completed"


def test_an_administrator_edits_tries_replays_and_saves_a_policy(tmp_path: Path) -> None:
    from playwright.sync_api import expect

    with running_server(tmp_path / "var") as server:
        link = server.start()
        token = server.manage("create_api_token", "admin").strip()
        with launch_chromium() as browser:
            context = browser.new_context(viewport={"width": 1280, "height": 1000})
            context.set_default_timeout(30_000)
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            try:
                page.goto(link)
                console = Console(server=server, context=context, token=token)
                _history(console)
                status, policies = console.api("GET", "/api/v1/policies/")
                standard = next(p for p in policies["results"] if p["name"] == "Standard review")
                # (a fresh install's default is "Sandboxed"; the runs above named Standard review.
                # Version 2: the install's own, which gave the preset its confirm requirements.)
                assert not standard["is_default"] and standard["version_number"] == 2

                # 1. The policy list, then the policy: indented JSON, the run policy as fields.
                page.goto(server.origin + "/admin/approvals/policy/")
                page.get_by_role("link", name="Standard review", exact=True).click()
                document = page.locator("#id_document")
                expect(document).to_have_value(json.dumps(standard["document"], indent=2, ensure_ascii=False))
                expect(page.get_by_label("Timeout (seconds)")).to_have_value("")
                expect(page.locator("#id_on_reject option:checked")).to_have_text("inherit (built-in: continue)")
                expect(page.locator("#driver-warnings")).to_contain_text("does not report the agent's own file reads")

                # 2. Edit a rule; "Try it" answers under the text as it is now (unsaved).
                document.fill(json.dumps(EDITED, indent=2))
                page.locator("#try-input").fill("mkdir -p build && ls")
                page.get_by_role("button", name="Try it").click()
                result = page.locator("#try-result")
                expect(result.locator(".try-verdict .verdict")).to_have_text("deny")
                expect(result).to_contain_text("commands.deny[0]")
                expect(result).to_contain_text("Build directories come from the build")
                expect(result.locator("li.segment")).to_have_count(2)
                expect(result.locator("li.segment.deciding")).to_contain_text("mkdir -p build")
                # how each command was read: the model and the options it recognised
                expect(result.locator("li.segment.deciding .segment-reading")).to_contain_text(
                    "read by the built-in model of mkdir (creates the directories it names); options -p; operands build")

                # 3. The dry run on history: the recorded mkdir would now be denied.
                page.get_by_role("button", name="Dry run").click()
                summary = page.locator("#dry-run-result .dry-run-summary")
                expect(summary).to_contain_text("would now allow 0, would now deny 1, would now ask 0")
                expect(page.locator("#dry-run-result table")).to_contain_text("mkdir -p build")

                # The README's picture: the rule policy, Try it and the dry run (the nav sidebar folded).
                page.evaluate("localStorage.setItem('django.admin.navSidebarIsOpen', 'false')")
                page.locator("#toggle-nav-sidebar").click()
                document.evaluate("el => { el.rows = el.value.split('\\n').length + 1; el.scrollTop = 0; }")
                page.wait_for_timeout(300)
                top = page.locator("#content-main .module", has_text="Rule policy (JSON)").first.bounding_box()
                bottom = page.locator("#dry-run").bounding_box()
                assert top and bottom
                scroll = page.evaluate("window.scrollY")
                clip = {"x": 0, "y": top["y"] + scroll - 10, "width": 1280, "height": bottom["y"] + bottom["height"] - top["y"] + 20}
                page.screenshot(path=docs_shot("admin-policy-change.png"), full_page=True, clip=clip)
                shot(page, "admin-policy-change-full")

                # 4. Save with a comment: a new version, listed as the current one.
                page.get_by_label("What changed and why").fill("Deny mkdir: the build makes its own directories")
                page.get_by_role("button", name="Save and continue editing").click()
                expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
                current = page.locator("#version-3")
                expect(current).to_contain_text("(current)")
                expect(current).to_contain_text("Deny mkdir")
                expect(page.locator("#version-2")).to_contain_text("Restore as new version")
                status, versions = console.api("GET", f"/api/v1/policies/{standard['id']}/versions/")
                assert status == 200 and [v["number"] for v in versions["results"]] == [3, 2, 1]
                assert versions["results"][0]["document"] == EDITED and versions["results"][0]["author"] == "admin"

                # 5. The diff between the two versions, escaped and readable.
                page.get_by_role("button", name="Show the changes").click()
                expect(page.locator("pre.policy-diff .diff-add").first).to_be_visible()
                expect(page.locator("pre.policy-diff")).to_contain_text('"match": "mkdir"')
                shot(page, "admin-policy-diff")
                assert not errors, errors
            except Exception:
                shot(page, "admin-policy-failure")
                print(server.log())
                raise
            finally:
                context.close()
