"""The job-finished signal: how the layers above jobs hear that a job ended.

jobs never imports results or roadmap (tests/test_layers.py); what they need to know
of an ending goes up through this signal. It is sent from ``transaction.on_commit``
of the transaction that moved the job to a terminal status, so a receiver only ever
sees an ending the database kept: a move that rolled back is never announced, and the
receiver reads the job's measurements and status as committed.

A receiver must not raise into the sender: ``send_robust`` logs and goes on, since the
job has ended whatever a receiver thinks of it.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.dispatch import Signal

logger = logging.getLogger(__name__)

# Sent with job_id (int) and status (str, terminal).
job_finished = Signal()


def announce_finished(job_id: int, status: str) -> None:
    """Send job_finished once the current transaction commits (at once outside one)."""

    def send() -> None:
        for receiver, result in job_finished.send_robust(
            sender="jobs.Job", job_id=job_id, status=status
        ):
            if isinstance(result, Exception):
                logger.error(
                    "job %s: a job-finished receiver failed (%s): %r",
                    job_id,
                    receiver,
                    result,
                    exc_info=result,
                )

    transaction.on_commit(send)
