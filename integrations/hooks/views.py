"""The hook gateway's endpoints: async views, so a long-poll holds no worker thread.

`pre-tool-use` answers at once when no person is involved; for `ask` it waits on the
approval row — re-read every GATEHOUSE_WAIT_POLL_S, woken early by the `approval.resolved`
doorbell on the run's group (the database is the mailbox, the channel layer only the
doorbell) — until a reviewer decides or its deadline (at most GATEHOUSE_HOOK_WAIT_S) passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from approvals.models import Approval
from approvals.policy import PolicyError, parse_json_strict
from approvals.services import approval_expire
from drivers.base import GateAnswer
from infra import broadcast, clock
from integrations.asyncauth import authenticate_token, check_token
from integrations.hooks import gateway
from integrations.models import Scope
from project.api import json_error
from runs.models import Run

logger = logging.getLogger(__name__)

# The gateway's database work runs on its own threads (GATEHOUSE_HOOK_DB_THREADS; one on
# SQLite, where each keeps its connection; on PostgreSQL they borrow from the pool). Django's
# default for an async view — a new thread per request — opened a connection per call, and
# on SQLite the calls raced each other for the write lock and slept in its busy handler
# (bench/hook_gateway.py: 102 -> 124 req/s).
_executor: ThreadPoolExecutor | None = None


def db(fn: Any) -> Any:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=settings.GATEHOUSE_HOOK_DB_THREADS, thread_name_prefix="hook-gateway-db")
    return database_sync_to_async(fn, thread_sensitive=False, executor=_executor)


def _body(request: HttpRequest) -> Any:
    try:
        return parse_json_strict(request.body or b"{}")
    except PolicyError as exc:
        raise gateway.HookRefused("parse_error", f"invalid JSON: {exc.message}") from None


def _refused(exc: gateway.HookRefused) -> JsonResponse:
    return json_error(exc.code, exc.message, exc.status, field=exc.field or None)


def _deadline_in(approval_id: int) -> float | None:
    deadline = Approval.objects.filter(pk=approval_id).values_list("deadline", flat=True).first()
    return None if deadline is None else (deadline - clock.now()).total_seconds()


def _cancel_requested(run_id: int) -> bool:
    return Run.objects.filter(pk=run_id, cancel_requested=True).exclude(status__in=Run.FINISHED).exists()


def _cancel(run_id: int) -> None:
    gateway._finish(run_id, status=Run.Status.CANCELLED)


async def wait_for_decision(run_id: int, approval_id: int) -> GateAnswer:
    """Until the approval is resolved (by a person, its deadline, or a cancel) and the step
    handed out. Re-reads the row on a timer; the doorbell only wakes it early."""
    layer = get_channel_layer()
    channel = await layer.new_channel() if layer is not None else ""
    if channel:
        await layer.group_add(broadcast.run_group(run_id), channel)
    try:
        while True:
            resolved = await db(gateway.hook_resolution)(approval_id=approval_id)
            if resolved is not None:
                if resolved.outcome != "wait" or resolved.approval_id is None:
                    return resolved
                approval_id = resolved.approval_id  # asked again (a re-check); wait on that one
                continue
            if await db(_cancel_requested)(run_id):
                await db(_cancel)(run_id)
                continue
            remaining = await db(_deadline_in)(approval_id)
            if remaining is not None and remaining <= 0:
                await db(approval_expire)(approval_id=approval_id)
                continue
            timeout = settings.GATEHOUSE_WAIT_POLL_S if remaining is None else min(settings.GATEHOUSE_WAIT_POLL_S, remaining)
            # Each round that found the request undecided (tests of a `serve` process wait on it).
            logger.debug("hook gateway: approval %s still pending, waiting up to %.1f s", approval_id, timeout)
            with contextlib.suppress(TimeoutError):
                if channel:
                    await asyncio.wait_for(layer.receive(channel), timeout=max(timeout, 0.01))
                else:
                    await asyncio.sleep(max(timeout, 0.01))
    finally:
        if channel:
            with contextlib.suppress(Exception):
                await layer.group_discard(broadcast.run_group(run_id), channel)


def _pre_tool_use_now(request: HttpRequest, agent: str) -> JsonResponse | tuple[gateway.PreToolUse, gateway.HookAnswer]:
    """Authenticate, validate and gate the call: one trip to the sync thread (each trip
    costs; bench/hook_gateway.py measures the whole path)."""
    auth = check_token(request.META.get("HTTP_AUTHORIZATION", ""), Scope.HOOKS, "runs.add_run")
    if isinstance(auth, JsonResponse):
        return auth
    try:
        call = gateway.parse_pre_tool_use(_body(request))
        policy_name = request.GET.get("policy", "")
        if len(policy_name) > 100:
            raise gateway.HookRefused("invalid", "policy: at most 100 characters.", field="policy")
        return call, gateway.hook_pre_tool_use(user=auth.user, call=call, policy_name=policy_name, agent=agent)
    except gateway.HookRefused as exc:
        return _refused(exc)


@csrf_exempt
@require_POST
async def pre_tool_use(request: HttpRequest, agent: str) -> JsonResponse:
    """The agent's PreToolUse hook input in, its hook output (allow / deny) out."""
    done = await db(_pre_tool_use_now)(request, agent)
    if isinstance(done, JsonResponse):
        return done
    call, answer = done
    outcome = answer.outcome
    if outcome is not None and outcome.outcome == "wait" and outcome.approval_id is not None:
        approval_id = outcome.approval_id
        try:
            outcome = await wait_for_decision(answer.run_id, approval_id)
        except asyncio.CancelledError:
            # The hook went away (its timeout, Ctrl-C): nobody reads an answer now. Expire the
            # request so the record says so and no reviewer decides it in vain.
            await asyncio.shield(db(gateway.hook_give_up)(approval_id=approval_id))
            raise
    return JsonResponse(gateway.hook_output(answer, outcome, tool_input=call.tool_input, agent=agent))


def _session_and_tool(body: Any, *, tool: bool) -> tuple[str, str]:
    if not isinstance(body, dict):
        raise gateway.HookRefused("invalid", "The hook input must be a JSON object.")
    session_id = gateway._text(body, "session_id")
    return session_id, gateway._text(body, "tool_use_id") if tool else ""


@csrf_exempt
@require_POST
async def post_tool_use(request: HttpRequest, agent: str) -> JsonResponse:
    """PostToolUse: what an allowed tool call did becomes its step's recorded result."""
    auth = await authenticate_token(request, scope=Scope.HOOKS, permission="runs.add_run")
    if isinstance(auth, JsonResponse):
        return auth
    try:
        body = _body(request)
        session_id, tool_use_id = _session_and_tool(body, tool=True)
    except gateway.HookRefused as exc:
        return _refused(exc)
    await db(gateway.hook_post_tool_use)(
        user=auth.user, session_id=session_id, tool_use_id=tool_use_id, tool_response=body.get("tool_response"), agent=agent
    )
    return JsonResponse({})


@csrf_exempt
@require_POST
async def session_end(request: HttpRequest, agent: str) -> JsonResponse:
    """SessionEnd: the hook session's run ends `completed`."""
    auth = await authenticate_token(request, scope=Scope.HOOKS, permission="runs.add_run")
    if isinstance(auth, JsonResponse):
        return auth
    try:
        body = _body(request)
        session_id, _ = _session_and_tool(body, tool=False)
    except gateway.HookRefused as exc:
        return _refused(exc)
    reason = body.get("reason") if isinstance(body.get("reason"), str) else ""
    await db(gateway.hook_session_end)(user=auth.user, session_id=session_id, reason=str(reason)[:200], agent=agent)
    return JsonResponse({})
