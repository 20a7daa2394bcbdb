"""`manage.py submit KIND --params …` for scripts: prints the job id, --wait follows it."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from jobs import services
from jobs.choices import JobStatus, LaunchType
from jobs.models import Job
from teams.models import AdoptionProject, Team


class Command(BaseCommand):
    help = (
        "Submit a job and print its id; with --wait, follow it and exit non-zero "
        "unless it succeeded."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("kind")
        parser.add_argument(
            "--params", default="{}", help="JSON object, or @FILE to read it from a file"
        )
        parser.add_argument("--user", required=True, help="username the job is submitted as")
        parser.add_argument("--team", help="team slug (optional when the user has one team)")
        parser.add_argument("--project", type=int, help="project id")
        parser.add_argument(
            "--hardware",
            default="{}",
            help='JSON object: {"gpu_count": 1, "gpu_vendor": "nvidia", "memory_mb": …}',
        )
        parser.add_argument("--timeout", type=int, dest="timeout_s", help="seconds")
        parser.add_argument("--wait", action="store_true", help="follow the job to its end")
        parser.add_argument("--poll", type=float, default=0.5, help="seconds between polls")

    def handle(self, *args: object, **opts: object) -> None:
        params = _json_option("params", str(opts["params"]))
        hardware = _json_option("hardware", str(opts["hardware"]))
        user = get_user_model().objects.filter(username=opts["user"]).first()
        if user is None:
            raise CommandError(f"no user {opts['user']!r}")
        team = None
        if opts.get("team"):
            team = Team.objects.filter(slug=opts["team"]).first()
            if team is None:
                raise CommandError(f"no team {opts['team']!r}")
        project = None
        if opts.get("project") is not None:
            project = AdoptionProject.objects.filter(pk=opts["project"]).first()
            if project is None:
                raise CommandError(f"no project {opts['project']}")
        try:
            with transaction.atomic():
                job = services.submit_job(
                    user=user,
                    kind=str(opts["kind"]),
                    params=params,
                    hardware=hardware,
                    team=team,
                    project=project,
                    timeout_s=opts.get("timeout_s"),  # type: ignore[arg-type]
                    launch_type=LaunchType.CLI,
                )
        except services.SubmissionError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(str(job.pk))
        if not opts["wait"]:
            return
        cursor = 0
        while True:
            job = Job.objects.get(pk=job.pk)
            for event in services.events_after(job, cursor, 1000):
                cursor = event.id
                prefix = f"[{event.pct:.0f}%] " if event.pct is not None else ""
                self.stderr.write(f"{event.kind}: {prefix}{event.message}")
            if job.is_terminal:
                break
            time.sleep(float(opts["poll"]))  # type: ignore[arg-type]
        self.stderr.write(f"job {job.pk} {job.status}" + (f": {job.error}" if job.error else ""))
        if job.status != JobStatus.SUCCEEDED:
            sys.exit(1)


def _json_option(name: str, raw: str) -> object:
    """A JSON option's value; ``@FILE`` reads it from a file."""
    if raw.startswith("@"):
        try:
            raw = Path(raw[1:]).read_text()
        except OSError as exc:
            raise CommandError(f"cannot read {name} file: {exc}") from exc
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise CommandError(f"--{name} is not valid JSON: {exc}") from exc
