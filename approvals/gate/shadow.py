"""Shadow mode on the gate's path: what the run's shadow policy would have decided.

The shadow decides nothing: its verdict is recorded on the step beside the live one and
never changes what the agent is told. A run names its shadow's PolicyVersion (snapshotted
when it started); versions are immutable, so each is read and compiled once per process
(an LRU keyed by version id) and a step under a shadow costs no query beyond the live
policy's — except the grants or run counts the shadow needs and the live policy did not.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import OrderedDict
from typing import Any

from approvals import policy as core
from approvals.models import Grant, PolicyVersion
from approvals.selectors import grants_for_run
from runs.models import Run

from .counts import run_view
from .paths import floor_holds, path_context

logger = logging.getLogger(__name__)

_CACHE: OrderedDict[int, core.CompiledPolicy] = OrderedDict()
_CACHE_SIZE = 64
_LOCK = threading.Lock()


def clear_cache() -> None:
    """Forget every compiled version (tests: a rolled-back test's ids are used again; a
    database never hands out an id twice)."""
    with _LOCK:
        _CACHE.clear()


def compiled_version(version_id: int) -> core.CompiledPolicy:
    """The compiled rule document of a PolicyVersion (read once: versions never change,
    and their ids are never reused)."""
    with _LOCK:
        hit = _CACHE.get(version_id)
        if hit is not None:
            _CACHE.move_to_end(version_id)
            return hit
    document, digest = PolicyVersion.objects.values_list("document", "version").get(pk=version_id)
    compiled = core.compile_policy(document, version=digest)
    with _LOCK:
        _CACHE[version_id] = compiled
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    return compiled


def shadow_verdict(
    run: Run, request: dict[str, Any], *, view: core.RunView | None, grants: list[Grant] | None
) -> core.Verdict | None:
    """The shadow policy's verdict on this request, evaluated as the live one is (the run's
    counts, the session's grants, the workspace's paths); None if it cannot be evaluated
    (the live decision must never depend on the shadow)."""
    assert run.shadow_version_id is not None
    try:
        compiled = compiled_version(run.shadow_version_id)
        if view is None and (compiled.max_tool_calls is not None or compiled.max_denials is not None):
            view = run_view(run.pk)
        paths = path_context(run)
        view = dataclasses.replace(view or core.RunView(), floor=floor_holds(run))
        verdict = core.evaluate(compiled, request, run_view=view, paths=paths)
        if verdict.decision == "ask":
            rules = [g.rule for g in (grants if grants is not None else grants_for_run(run))]
            if rules:
                verdict = core.evaluate(compiled, request, run_view=view, grants=rules, paths=paths)
    except (core.PolicyError, PolicyVersion.DoesNotExist):
        logger.exception("run %s: the shadow policy version %s could not be evaluated", run.pk, run.shadow_version_id)
        return None
    return verdict
