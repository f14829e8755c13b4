"""`GET /metrics`: what an operator watches, in Prometheus text format.

Off unless `GATEHOUSE_METRICS_TOKEN` is set (404, as if there were no such page); then it
answers only `Authorization: Bearer <token>` (401 otherwise, the same answer for a missing,
malformed or wrong token). Each scrape builds its figures from the database
(`approvals/metrics.py`) through a collector of its own, so every web process answers the
same numbers whichever process made the decisions.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from approvals import metrics as read


class GatehouseCollector(Collector):
    """The rows, read once per scrape: one aggregate query per metric family."""

    def collect(self) -> Iterator[Metric]:
        pending = GaugeMetricFamily(
            "gatehouse_approvals_pending", "Approvals waiting for a decision now, by kind and side-effect class.",
            labels=["kind", "side_effect_class"],
        )
        for kind, side_effect_class, n in read.pending_approvals():
            pending.add_metric([kind, side_effect_class], n)
        yield pending

        took = HistogramMetricFamily(
            "gatehouse_approval_decision_seconds",
            "Time from an approval's creation to its decision (approved, denied, answered, expired), by kind and "
            "decided_via (console, api, grant, mode, policy, timeout, system).",
            labels=["kind", "decided_via"],
        )
        for row in read.decision_times():
            buckets = [(floatToGoString(b), n) for b, n in zip(read.DECISION_BUCKETS_S, row.buckets, strict=True)]
            took.add_metric([row.kind, row.via], [*buckets, ("+Inf", row.count)], row.sum_s)
        yield took

        decided = CounterMetricFamily(
            "gatehouse_decisions",
            "The gate's decisions on tool requests (steps), by kind, outcome (allow, deny, abort, answer) and who or "
            "what decided (policy, grant, mode, external, console, api, person, timeout, system).",
            labels=["kind", "outcome", "decided_by"],
        )
        for kind, outcome, decided_by, n in read.decisions():
            decided.add_metric([kind, outcome, decided_by], n)
        yield decided

        resolved = CounterMetricFamily(
            "gatehouse_approvals_resolved",
            "Approvals no longer pending, by kind, status and decided_via.",
            labels=["kind", "status", "decided_via"],
        )
        for kind, status, via, n in read.approvals_resolved():
            resolved.add_metric([kind, status, via], n)
        yield resolved

        runs = GaugeMetricFamily("gatehouse_runs", "Runs kept, by driver and status.", labels=["driver", "status"])
        for driver, status, n in read.runs_by_status():
            runs.add_metric([driver, status], n)
        yield runs

        egress = CounterMetricFamily(
            "gatehouse_egress_connections",
            "The egress proxy's recorded connection decisions: asked_allowed and asked_refused (a network step, by "
            "who decided it), refused (refused unasked, counted once per host and run). Connections the policy allows "
            "at once are not recorded.",
            labels=["outcome", "decided_by"],
        )
        for outcome, decided_by, n in read.egress_connections():
            egress.add_metric([outcome, decided_by], n)
        yield egress


def _authorized(request: HttpRequest, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())


def metrics_text() -> bytes:
    """One scrape's body (a fresh registry: the collector is the only source)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(GatehouseCollector())
    return generate_latest(registry)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    token = settings.GATEHOUSE_METRICS_TOKEN
    if not token:
        raise Http404("metrics are off")
    if not _authorized(request, token):
        response = HttpResponse("401 Unauthorized: send Authorization: Bearer <GATEHOUSE_METRICS_TOKEN>\n", status=401,
                                content_type="text/plain; charset=utf-8")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(metrics_text(), content_type=CONTENT_TYPE_PLAIN_0_0_4)
