"""/metrics: the state of the database in the Prometheus text format, read per scrape.

A custom collector (not counters kept in process memory): web processes come and go and
each would count only what it saw, while the database knows every job. Each scrape runs
a fixed number of queries whatever the number of jobs (five; tested): one pass over the
jobs table for the counts and the histogram, the rest through indexes or small tables.

Labels are bounded: ``kind`` is a kind of the registry (stack.kinds.KINDS) or "other",
``status`` a JobStatus, ``queue`` the default queue, one of ROCPATH_JOB_QUEUES, a GPU
architecture's queue a live worker announced, or "other" (a host's own queue, which names
the host, counts as other), ``vendor`` amd, nvidia or "other". Nothing per job, host or
worker name.

Access (docs/metrics.md): off, a 404, unless ROCPATH_METRICS_TOKEN (a bearer token) or
ROCPATH_METRICS_ALLOW (addresses or networks) is set; with both, a scrape needs both.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterator
from datetime import timedelta

from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, Sum, TextField, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Coalesce, NullIf
from django.http import Http404, HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import CollectorRegistry

from jobs.api.throttles import client_address
from jobs.choices import TERMINAL_STATUSES, JobStatus
from jobs.models import GpuLease, Job, Worker
from jobs.models.worker import live_since
from jobs.routing import is_host_queue, live_workers
from results.models import MetricsScrape, Verdict, VerdictKind
from stack.kinds import KINDS

OTHER = "other"
VENDORS = ("amd", "nvidia")
# Seconds: from a probe (about a second) to the longest timeout allowed (6 h by default).
DURATION_BUCKETS = (1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 21600)
WAITING = (JobStatus.PENDING, JobStatus.QUEUED)


def _kind(name: str) -> str:
    return name if name in KINDS else OTHER


def known_queues() -> list[str]:
    """The queues a label may name: the default, the operator's, and those the live
    workers announced (capability queues); bounded by the fleet, not by what jobs ask."""
    names = [settings.CELERY_TASK_DEFAULT_QUEUE]
    for queues in settings.ROCPATH_JOB_QUEUES.values():
        names += [queue for queue in queues if queue not in names]
    for worker in live_workers():  # a host's own queue names the host: counted as other
        names += [
            q
            for q in worker.queues or []
            if isinstance(q, str) and q not in names and not is_host_queue(q)
        ]
    return names


class DatabaseCollector:
    """Reads the jobs, leases and verdicts tables on every collect()."""

    def collect(self) -> Iterator[GaugeMetricFamily | HistogramMetricFamily]:
        yield from self._jobs_and_durations()
        yield self._queue_depth()
        yield self._workers()
        yield self._fleet()
        yield self._leases()
        yield self._regressions()

    def _jobs_and_durations(self) -> Iterator[GaugeMetricFamily | HistogramMetricFamily]:
        """Counts by kind and status, and the run-time histogram: one pass over the table."""
        took = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
        ran = Q(started_at__isnull=False, finished_at__isnull=False)
        buckets = {
            f"le_{bound}": Count("id", filter=ran & Q(took__lte=timedelta(seconds=bound)))
            for bound in DURATION_BUCKETS
        }
        rows = (
            Job.objects.order_by()
            .annotate(took=took)
            .values("kind", "status")
            .annotate(n=Count("id"), ran=Count("id", filter=ran), total=Sum("took"), **buckets)
        )
        counts = {
            (kind, status.value): 0 for kind in [*sorted(KINDS), OTHER] for status in JobStatus
        }
        merged: dict[str, dict[str, float]] = {}
        for row in rows:
            kind = _kind(row["kind"])
            if row["status"] in JobStatus.values:
                counts[(kind, row["status"])] += row["n"]
            if row["status"] not in TERMINAL_STATUSES:
                continue
            into = merged.setdefault(kind, {"n": 0, "total": 0.0})
            into["n"] += row["ran"]
            into["total"] += row["total"].total_seconds() if row["total"] else 0.0
            for key in buckets:
                into[key] = into.get(key, 0) + row[key]
        jobs = GaugeMetricFamily(
            "rocpath_jobs", "Jobs in the database, by kind and status.", labels=["kind", "status"]
        )
        for (kind, status), n in counts.items():
            jobs.add_metric([kind, status], n)
        yield jobs
        durations = HistogramMetricFamily(
            "rocpath_job_duration_seconds",
            "How long finished jobs ran (started to finished), by kind.",
            labels=["kind"],
        )
        for kind in [*sorted(KINDS), OTHER]:
            into = merged.get(kind, {"n": 0, "total": 0.0})
            durations.add_metric(
                [kind],
                [(str(float(bound)), into.get(f"le_{bound}", 0)) for bound in DURATION_BUCKETS]
                + [("+Inf", into["n"])],
                sum_value=into["total"],
            )
        yield durations

    def _queue_depth(self) -> GaugeMetricFamily:
        queues = known_queues()
        counts = {(queue, status.value): 0 for queue in [*queues, OTHER] for status in WAITING}
        rows = (
            Job.objects.filter(status__in=WAITING)
            .order_by()
            # The queue routing chose (Job.queue), else the one the job named.
            .annotate(
                waits_on=Coalesce(
                    NullIf("queue", Value("")),
                    KeyTextTransform("queue", "requested_hardware"),
                    output_field=TextField(),
                )
            )
            .values("waits_on", "status")
            .annotate(n=Count("id"))
        )
        for row in rows:
            queue = row["waits_on"] or settings.CELERY_TASK_DEFAULT_QUEUE
            counts[(queue if queue in queues else OTHER, row["status"])] += row["n"]
        family = GaugeMetricFamily(
            "rocpath_queue_depth",
            "Jobs waiting for a worker: queued (sent to the broker) or pending (kept back "
            "while the broker was down), by the queue they go to.",
            labels=["queue", "status"],
        )
        for (queue, status), n in counts.items():
            family.add_metric([queue, status], n)
        return family

    def _workers(self) -> GaugeMetricFamily:
        since = timezone.now() - timedelta(seconds=settings.ROCPATH_METRICS_WORKER_WINDOW_S)
        # Both halves are found by an index (status, created_at), not by reading the table.
        seen = (
            Job.objects.filter(
                Q(status=JobStatus.RUNNING, heartbeat_at__gte=since)
                | Q(created_at__gte=since, started_at__isnull=False)
            )
            .exclude(worker="")
            .order_by()
            .values("worker")
            .distinct()
            .count()
        )
        family = GaugeMetricFamily(
            "rocpath_workers_seen",
            "Workers running a job that beat within ROCPATH_METRICS_WORKER_WINDOW_S, or that "
            "ran a job created within it (an idle worker is not seen).",
        )
        family.add_metric([], seen)
        return family

    def _fleet(self) -> GaugeMetricFamily:
        """The announced workers by state (jobs.fleet): a GPU host gone is an alert."""
        since = live_since()
        rows = (
            Worker.objects.order_by()
            .values("executor")
            .annotate(
                live=Count("id", filter=Q(stopped_at__isnull=True, last_seen_at__gte=since)),
                stopped=Count("id", filter=Q(stopped_at__isnull=False)),
                n=Count("id"),
            )
        )
        family = GaugeMetricFamily(
            "rocpath_workers",
            "Workers that announced themselves, by executor and state: live (seen within "
            "ROCPATH_WORKER_GONE_S), gone (not seen since), stopped (stopped cleanly).",
            labels=["executor", "state"],
        )
        for row in rows:
            gone = row["n"] - row["live"] - row["stopped"]
            for state, n in (("live", row["live"]), ("gone", gone), ("stopped", row["stopped"])):
                family.add_metric([row["executor"] or OTHER, state], n)
        return family

    def _leases(self) -> GaugeMetricFamily:
        counts = dict.fromkeys([*VENDORS, OTHER], 0)
        for row in GpuLease.objects.order_by().values("vendor").annotate(n=Count("id")):
            counts[row["vendor"] if row["vendor"] in VENDORS else OTHER] += row["n"]
        family = GaugeMetricFamily(
            "rocpath_gpu_leases_held", "GPUs held by a job, by vendor.", labels=["vendor"]
        )
        for vendor, n in counts.items():
            family.add_metric([vendor], n)
        return family

    def _regressions(self) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "rocpath_regressions_open",
            "Regressed verdicts (case and metric against a baseline) not acknowledged.",
        )
        family.add_metric(
            [],
            Verdict.objects.filter(
                verdict=VerdictKind.REGRESSED, acknowledged_at__isnull=True
            ).count(),
        )
        return family


def refusal(request: HttpRequest) -> HttpResponse | None:
    """Why this request may not read the metrics (404 when they are off), or None."""
    token, networks = settings.ROCPATH_METRICS_TOKEN, settings.ROCPATH_METRICS_ALLOW
    if not token and not networks:
        raise Http404("metrics are off (ROCPATH_METRICS_TOKEN, ROCPATH_METRICS_ALLOW)")
    if networks:
        try:
            address = ipaddress.ip_address(client_address(request).split("%", 1)[0])
        except ValueError:
            address = None
        if address is None or not any(
            address in ipaddress.ip_network(net, strict=False) for net in networks
        ):
            return HttpResponse(
                "this address may not read the metrics (ROCPATH_METRICS_ALLOW)\n",
                status=403,
                content_type="text/plain",
            )
    if token:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            value.strip().encode(), token.encode()
        ):
            response = HttpResponse(
                "a bearer token is needed (Authorization: Bearer …)\n",
                status=401,
                content_type="text/plain",
            )
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
    return None


@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if (refused := refusal(request)) is not None:
        return refused
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DatabaseCollector())
    body = generate_latest(registry)
    # One upsert: the roadmap's phase-4 gate reads when monitoring last saw the service.
    MetricsScrape.objects.bulk_create(
        [MetricsScrape(pk=1, at=timezone.now(), client=client_address(request)[:64])],
        update_conflicts=True,
        unique_fields=["id"],
        update_fields=["at", "client"],
    )
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
