"""collective-bench on the job page: bus bandwidth against size, one line per collective,
with the link's peak where the GPUs' interconnect is known."""

from __future__ import annotations

import math

from django.utils.safestring import SafeString

from jobs.models import Job
from portal.charts import xy_chart
from portal.kinds.base import Presenter
from stack.kinds import collective_bench


class CollectivePresenter(Presenter):
    def charts(self, job: Job) -> list[SafeString]:
        summary = job.summary or {}
        rows = summary.get("table") or []
        if not rows:
            return []
        series: dict[str, list[tuple[float, float]]] = {}
        for row in rows:
            if row.get("bytes"):
                series.setdefault(row["op"], []).append(
                    (math.log2(row["bytes"]), row["busbw_gbps"])
                )
        peak = summary.get("link_peak")
        if peak and series:
            xs = [x for points in series.values() for x, _ in points]
            series[f"peak: {peak['name']}"] = [(min(xs), peak["gbps"]), (max(xs), peak["gbps"])]
        ranks, backend = summary.get("ranks"), summary.get("backend")
        return [
            xy_chart(
                f"Bus bandwidth, {ranks} ranks ({backend})",
                series,
                x_title="message size (log2 of bytes: 10 = 1 KiB, 20 = 1 MiB, 27 = 128 MiB)",
                y_title="busbw (GB/s)",
            )
        ]


PRESENTER = CollectivePresenter(collective_bench.KIND)
