"""What results tells the layers above: a comparison found regressions.

``regression_found`` is sent after the commit that wrote the verdicts (so a receiver
reads them as kept), once per comparison that found at least one new regression,
with ``project_id`` (int), ``job_id`` (int), ``baseline_job_id`` (int) and
``verdict_ids`` (list of int, the new regressed verdicts). The alerts work connects to
it; results never imports what sends the alert. Receivers are called robustly: one
that raises is logged and the others still hear.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.dispatch import Signal

logger = logging.getLogger(__name__)

regression_found = Signal()


def announce_regressions(
    *, project_id: int, job_id: int, baseline_job_id: int, verdict_ids: list[int]
) -> None:
    """Send regression_found once the current transaction commits (at once outside one)."""

    def send() -> None:
        for receiver, result in regression_found.send_robust(
            sender="results.Verdict",
            project_id=project_id,
            job_id=job_id,
            baseline_job_id=baseline_job_id,
            verdict_ids=verdict_ids,
        ):
            if isinstance(result, Exception):
                logger.error(
                    "job %s: a regression_found receiver failed (%s): %r",
                    job_id,
                    receiver,
                    result,
                    exc_info=result,
                )

    transaction.on_commit(send)
