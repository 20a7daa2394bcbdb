"""`manage.py run_facts`: what scripts/run.sh needs before it starts the processes.

One interpreter instead of three: migrate, the demo login (bootstrap_demo), and the
facts the script prints and starts the workers with (the executor, the queues). Each
Django start costs one to two seconds on a 2-core machine, and `make run`'s restart is
mostly such starts (issue 36: under 8 s to the first page).

Prints the migrations' progress on stderr and six lines on stdout: the login line, the
executor, the job queue, the control queue, the alert queue and the comparison queue.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from jobs.executors import resolve_executor


class Command(BaseCommand):
    help = "Migrate, make the demo login, print the login, executor and queues (for make run)."

    def handle(self, *args: object, **opts: object) -> None:
        call_command("migrate", interactive=False, stdout=sys.stderr)
        call_command("bootstrap_demo", stdout=self.stdout)
        self.stdout.write(resolve_executor())
        self.stdout.write(settings.CELERY_TASK_DEFAULT_QUEUE)
        self.stdout.write(settings.ROCPATH_CONTROL_QUEUE)
        self.stdout.write(settings.ROCPATH_ALERT_QUEUE)
        self.stdout.write(settings.ROCPATH_COMPARE_QUEUE)
