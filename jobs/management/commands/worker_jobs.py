"""`manage.py worker_jobs --worker NODE [--cancel]`: the jobs one worker runs, for scripts.

scripts/run.sh asks it how many jobs are running when Ctrl-C stops the worker, and, on
the second Ctrl-C, cancels them through the ordinary cancel path (the worker kills each
runner and ends the job canceled), so the worker's warm shutdown ends at once.
"""

from __future__ import annotations

import contextlib

from celery.utils.nodenames import host_format
from django.core.management.base import BaseCommand, CommandParser

from jobs import services
from jobs.choices import JobStatus
from jobs.models import IllegalTransition, Job


class Command(BaseCommand):
    help = "Print how many jobs a worker is running; with --cancel, cancel them."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--worker", required=True, help="the worker's node name, as -n gave it (worker@%%h)"
        )
        parser.add_argument("--cancel", action="store_true", help="cancel the running jobs")
        parser.add_argument(
            "--reason", default="the worker was stopped", help="who or what cancels them"
        )

    def handle(self, *args: object, **opts: object) -> None:
        node = host_format(str(opts["worker"]))
        running = Job.objects.filter(worker=node, status=JobStatus.RUNNING)  # job_worker_status
        if not opts["cancel"]:
            self.stdout.write(str(running.count()))
            return
        jobs = list(running)
        for job in jobs:
            with contextlib.suppress(IllegalTransition):  # it ended meanwhile
                services.cancel_job(job, by=str(opts["reason"]))
        self.stdout.write(str(len(jobs)))
