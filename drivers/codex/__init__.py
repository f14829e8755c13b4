"""Codex driver: `codex app-server` (JSON-RPC, one JSON object per line on stdio).

Flow per run: a fresh CODEX_HOME under the run's runtime dir with a generated config.toml
(model provider from settings: `base_url`, `env_key`, `wire_api = "responses"`, retries 0,
analytics off, no update check), `codex app-server` spawned in the workspace,
`initialize` / `initialized`, `thread/start {cwd, sandbox, approvalPolicy}`, `turn/start`
(with `collaborationMode: plan` in plan mode, which needs `experimentalApi`), then
`item/*` notifications until `turn/completed`.

Approval configuration: `approvalPolicy: "untrusted"`, sent in `thread/start`
-------------------------------------------------------------------------------
Gatehouse must be asked about every command that is not read-only. Checked against the
real 0.171.0 (with the fake Responses server of tests/fakes/responses_server.py):

* `untrusted` + workspace-write: every `exec_command` produced
  `item/commandExecution/requestApproval` — `touch`, `ls > out.txt`, `find . -delete`,
  and also plain `ls`, `cat foo.txt`, `rg hello` (0.171.0 did not auto-run "known-safe"
  reads; the docs say it may). Every apply_patch produced `item/fileChange/requestApproval`,
  in workspace-write, read-only and danger-full-access alike. `thread/start` echoes
  `approvalPolicy: "untrusted"`; the driver refuses to run if it does not.
* `untrusted` cannot go in config.toml: 0.171.0 exits at startup with
  `approval_policy = "untrusted" is no longer supported`. Over JSON-RPC it still works,
  which is why the driver sets it per thread and never in the file.
* `on-request` (the supported default) + workspace-write runs commands and patches inside
  the sandbox without asking; only escalations are asked (protocol notes, transcripts 01, 11).
* `granular` (all flags true, experimentalApi) + workspace-write ran `touch a.txt` and
  `ls` without asking: not a substitute.
* execpolicy `prompt` rules (`prefix_rule(..., decision="prompt")`) make on-request ask,
  but only for the listed prefixes; there is no catch-all. That is the fallback to build
  when a Codex release drops `untrusted` from JSON-RPC too.

Workspace trust: the generated config.toml pins the workspace, and every parent directory
of it, as an *untrusted* project. Without that, `thread/start` (workspace-write) marks it
trusted (inside a git repository: the repository root) and Codex loads that project's
`.codex/` config, hooks and exec-policy rules: a checked-in `.codex/rules/default.rules`
with `prefix_rule(pattern=["touch"], decision="allow")` made `touch` run with no approval
request at all, and a `[mcp_servers]` entry started its program (observed on 0.171.0;
tested in tests/drivers/test_codex.py and test_workspace_isolation.py). The repository's
git programs are switched off for Codex's processes (drivers/workspace_config.py): its own
start-up `git status` ran a clean filter. As a second line, any command or file change
that completes without having been asked is reported as a warning notice.

Replies: allow -> `accept`, also for a person's "always allow": that is a Gatehouse grant,
which answers the next identical request from the gate, so revoking it takes effect on the
next request. Never `acceptForSession` (Codex would re-run the identical command unasked
for the rest of the thread, past a revoked grant). Deny -> `decline` (Codex
tells the model only `Rejected("rejected by user")` / `patch rejected by user`, so the
driver first adds the reviewer's reason to the turn with `turn/steer`; Codex cannot
re-ask, hence `retry=False`), abort -> `cancel` (Codex ends the turn `interrupted`; the
run fails). Never `acceptWithExecpolicyAmendment`: it writes a permanent allow rule into
CODEX_HOME/rules/default.rules that later auto-approves the prefix in every thread.

Questions (`item/tool/requestUserInput`, plan mode only) become question approvals. A
declined question is answered with an empty `answers` map (the model receives
`{"answers":{}}`; a JSON-RPC error reply gives the model exactly the same text, so the
cleaner form is used). No option is ever picked on the person's behalf.
"""

from __future__ import annotations

from drivers.base import FLOOR_SANDBOX, Descriptor

from .driver import APPROVAL_POLICY
from .driver import CodexDriver as _CodexDriver

__all__ = ["DESCRIPTOR", "CodexDriver", "APPROVAL_POLICY"]

DESCRIPTOR = Descriptor(
    name="codex",
    title="OpenAI Codex (codex app-server)",
    sandbox=FLOOR_SANDBOX,  # Gatehouse's floor; Codex's own sandbox only without it (config.IN_FLOOR)
    web_search=frozenset({"allow", "deny"}),
    browser=frozenset(),
    approval_modes={
        "permission": frozenset({"ask", "auto-approve", "auto-deny"}),
        "question": frozenset({"ask", "auto-deny"}),
        # Codex has no plan-review request: a plan is a message, the turn just ends.
        "plan_review": frozenset(),
    },
    retry=False,
    resumes=True,  # thread/resume from the run's CODEX_HOME
    structured_output=False,
    sees=(
        "every shell command the agent runs through exec_command, read-only ones included, "
        "before it runs (approvalPolicy untrusted over thread/start)",
        "every file change made with apply_patch, with its diff, before it is written",
        "every repeat of an 'always allow' command: the grant is Gatehouse's and the reply a plain "
        "accept (never acceptForSession), so a revoked grant stops the next request",
        "plan-mode questions (request_user_input)",
        "web searches, MCP tool calls and image views, after the fact only (timeline)",
    ),
    cannot_see=(
        "Codex's own documented 'known-safe read-only' commands may run without asking under "
        "approvalPolicy untrusted (0.171.0 asked even for ls/cat/rg, but this is not guaranteed)",
        "web_search tool calls: not gated, only reported after they run; set web_search deny to "
        "turn the tool off",
        "MCP tool calls, image views (view_image reads files) and sub-agents' model-side actions "
        "are not gated",
        "what an approved command does inside its shell (each simple command is not asked separately; "
        "the policy sees the whole script)",
        "approvalPolicy untrusted is retired from config.toml in 0.171.0; a later Codex may refuse it "
        "over JSON-RPC too (the driver then fails the run rather than run un-gated)",
    ),
    # File reads are commands (cat, rg) and web search, MCP and image views are not asked.
    gates=frozenset({"commands", "edits"}),
    isolation=(
        "allow-listed environment",
        "own HOME and CODEX_HOME per run",
        "the workspace and every parent pinned untrusted (no .codex/ config, rules, hooks or MCP servers; "
        "no AGENTS.md either)",
        "the repository's git programs switched off",
    ),
)


class CodexDriver(_CodexDriver):
    descriptor = DESCRIPTOR

    def __init__(self) -> None:
        super().__init__(DESCRIPTOR)
