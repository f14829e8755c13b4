"""Pure translations between Codex app-server messages and Gatehouse values (no I/O)."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from drivers import elicitation
from drivers.base import GateAnswer, ToolRequest

_SHELLS = {"bash", "sh", "zsh", "dash"}


def inner_command(command: str, actions: Sequence[Mapping[str, Any]] | None = None) -> str:
    """The script the agent asked to run, without Codex's `/bin/bash -lc '...'` wrapper.

    The whole script is returned (never only the first of several parsed actions), so a
    policy sees every simple command in it.
    """
    try:
        argv = shlex.split(command)
    except ValueError:
        argv = []
    if len(argv) == 3 and os.path.basename(argv[0]) in _SHELLS and argv[1] in ("-lc", "-c"):
        return argv[2]
    if actions and len(actions) == 1 and isinstance(actions[0], Mapping) and actions[0].get("command"):
        return str(actions[0]["command"])
    return command


def relative_path(path: str, workspace: Path) -> str:
    """`path` relative to the workspace when it lies inside it, else unchanged (absolute)."""
    if not path:
        return path
    candidate = Path(path)
    roots = [Path(workspace)]
    try:
        roots.append(Path(workspace).resolve())
    except OSError:
        pass
    for root in roots:
        try:
            rel = candidate.relative_to(root)
        except ValueError:
            continue
        return str(rel) if str(rel) != "." else "."
    return path


def command_request(params: Mapping[str, Any], workspace: Path) -> ToolRequest:
    """`item/commandExecution/requestApproval` -> a permission request.

    kind `command` (the usual case) -> tool `bash`; kind `writeStdin` (input to a command
    already running) -> tool `write_stdin`; a managed-network prompt
    (`networkApprovalContext`) -> tool `network` with the host.
    """
    raw = str(params.get("command") or "")
    command = inner_command(raw, params.get("commandActions"))
    cwd = str(params.get("cwd") or workspace)
    native_kind = str(params.get("kind") or "command")
    network = params.get("networkApprovalContext")
    tool, subtype, title = "bash", "command", "Run a shell command"
    tool_input: dict[str, Any] = {"command": command}
    if isinstance(network, Mapping) and network.get("host"):
        tool, subtype = "network", "network"
        title = f"Network access to {network.get('host')}"
        tool_input = {"host": str(network.get("host")), "protocol": str(network.get("protocol") or "")}
        if command:
            tool_input["command"] = command
    elif native_kind == "writeStdin":
        tool, subtype, title = "write_stdin", "stdin", "Send input to a running command"
    presentation: dict[str, Any] = {"title": title, "command": command, "cwd": cwd}
    if params.get("reason"):
        presentation["reason"] = str(params["reason"])
    if raw != command:
        presentation["native_command"] = raw
    return ToolRequest(
        tool=tool,
        input=tool_input,
        cwd=cwd,
        kind="permission",
        subtype=subtype,
        presentation=presentation,
        native_id=str(params.get("itemId") or ""),
    )


def file_change_requests(
    params: Mapping[str, Any], item: Mapping[str, Any] | None, workspace: Path
) -> list[ToolRequest]:
    """One request per changed file, so edit rules see every path of a multi-file patch.

    The request itself carries no diff; it is in the `item/started` fileChange item with
    the same itemId (`item`), when Codex sent one.
    """
    item_id = str(params.get("itemId") or "")
    cwd = str(workspace)
    changes = [c for c in (item or {}).get("changes") or [] if isinstance(c, Mapping)]
    reason = params.get("reason")
    requests = []
    for change in changes:
        raw_kind = change.get("kind")
        kind: Mapping[str, Any] = raw_kind if isinstance(raw_kind, Mapping) else {}
        kind_type = str(kind.get("type") or "update")
        path = relative_path(str(change.get("path") or ""), workspace)
        diff = str(change.get("diff") or "")
        tool = "write" if kind_type == "add" else "edit"
        tool_input: dict[str, Any] = {"file_path": path, "diff": diff}
        verb = {"add": "Create", "delete": "Delete", "update": "Edit"}.get(kind_type, "Change")
        presentation: dict[str, Any] = {"title": f"{verb} {path}", "diff": diff, "change": kind_type}
        if kind_type == "delete":
            tool_input["change"] = "delete"
        if kind.get("move_path"):
            move_to = relative_path(str(kind["move_path"]), workspace)
            tool_input["move_path"] = move_to
            presentation["title"] = f"Move {path} to {move_to}"
        if reason:
            presentation["reason"] = str(reason)
        if len(changes) > 1:
            presentation["files"] = [relative_path(str(c.get("path") or ""), workspace) for c in changes]
        requests.append(
            ToolRequest(
                tool=tool,
                input=tool_input,
                cwd=cwd,
                kind="permission",
                subtype="file-change",
                presentation=presentation,
                native_id=item_id,
            )
        )
    if not requests:
        # No item/started was seen for this change: still ask, with what we know.
        presentation = {"title": "Change files (Codex sent no diff)", "diff": ""}
        if reason:
            presentation["reason"] = str(reason)
        if params.get("grantRoot"):
            presentation["grant_root"] = str(params["grantRoot"])
        requests.append(
            ToolRequest(
                tool="edit",
                input={"file_path": relative_path(str(params.get("grantRoot") or ""), workspace), "diff": ""},
                cwd=cwd,
                subtype="file-change",
                presentation=presentation,
                native_id=item_id,
            )
        )
    return requests


def question_request(params: Mapping[str, Any], workspace: Path) -> ToolRequest:
    questions = []
    for q in params.get("questions") or []:
        if not isinstance(q, Mapping):
            continue
        entry: dict[str, Any] = {
            "id": str(q.get("id") or ""),
            "header": str(q.get("header") or ""),
            "question": str(q.get("question") or ""),
            "options": [
                {"label": str(o.get("label") or ""), "description": str(o.get("description") or "")}
                for o in q.get("options") or []
                if isinstance(o, Mapping)
            ],
            "multi_select": False,
            "allow_other": bool(q.get("isOther")),
        }
        if q.get("isSecret"):
            entry["secret"] = True
        questions.append(entry)
    return ToolRequest(
        tool="request_user_input",
        input={"questions": questions},
        cwd=str(workspace),
        kind="question",
        subtype="question",
        presentation={"title": "The agent asks", "questions": questions},
        native_id=str(params.get("itemId") or ""),
    )


def approval_reply(decision: GateAnswer) -> str:
    """GateAnswer -> the `decision` of a command/file-change approval response.

    A person's "always allow" (`scope="session"`) is a Gatehouse grant, and the reply is a
    plain `accept`: never `acceptForSession`, which would let Codex re-run the identical
    command unasked for the rest of the thread, so a revoked grant would not stop it. And
    never `acceptWithExecpolicyAmendment` (a permanent allow rule in CODEX_HOME).
    """
    if decision.outcome == "abort":
        return "cancel"
    if decision.allowed:
        return "accept"
    return "decline"


def combine_replies(replies: Sequence[str]) -> str:
    """Several per-file decisions for one native file-change request -> one reply."""
    for strongest in ("cancel", "decline"):
        if strongest in replies:
            return strongest
    return "accept"


def answers_reply(decision: GateAnswer, request: ToolRequest) -> dict[str, Any]:
    """GateAnswer -> `ToolRequestUserInputResponse`. Declined: an empty map (the model is told
    nothing was answered; no option is ever picked on the person's behalf)."""
    if decision.outcome != "answer" and not decision.allowed:
        return {"answers": {}}
    known = {q["id"] for q in request.input.get("questions", [])}
    answers: dict[str, Any] = {}
    for qid, value in (decision.answers or {}).items():
        if known and qid not in known:
            continue
        if isinstance(value, str):
            values = [value] if value else []
        else:
            values = [str(v) for v in value or []]
        if values:
            answers[str(qid)] = {"answers": values}
    return {"answers": answers}


def bounded(text: str | None, limit: int) -> str:
    if not text:
        return ""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit} more characters not kept]"


def mcp_tool_request(params: Mapping[str, Any], workspace: Path) -> ToolRequest:
    """Codex's question before an MCP tool call (`mcpServer/elicitation/request` with
    `_meta.codex_approval_kind: "mcp_tool_call"`) -> a permission request for the tool
    `mcp__<server>__<tool>` with the call's arguments, the name Claude Code gives it too,
    so one policy rule (or tool class) covers a server's tool under every agent."""
    raw_meta = params.get("_meta")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    server = str(params.get("serverName") or "")
    tool = str(meta.get("tool_name") or "")
    arguments = meta.get("tool_params")
    tool_input = dict(arguments) if isinstance(arguments, Mapping) else {}
    name = f"mcp__{server}__{tool}"
    body = json.dumps(tool_input, indent=2, sort_keys=True, ensure_ascii=False)
    return ToolRequest(
        tool=name,
        input=tool_input,
        cwd=str(workspace),
        kind="permission",
        subtype="tool",
        presentation={"title": f"Use the tool {name}", "body": bounded(body, 4000)},
        native_id=str(params.get("itemId") or ""),
    )


def elicitation_reply(reply: str) -> dict[str, Any]:
    """An approval reply (accept / decline / cancel) in the elicitation's shape."""
    return {"action": reply, "content": {}} if reply == "accept" else {"action": reply}


def elicitation_request(params: Mapping[str, Any], workspace: Path) -> ToolRequest:
    """An MCP server's form -> a question approval of subtype `mcp-elicitation`
    (`elicitation.Unsupported` when it cannot be shown)."""
    return elicitation.tool_request(str(params.get("serverName") or ""), params, str(workspace))
