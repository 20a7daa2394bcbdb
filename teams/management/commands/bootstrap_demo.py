"""Create (once) a demo team, project and user, and print how to sign in.

The demo user is an ordinary admin of the demo team, not a superuser or staff: its password
sits in a file under var/, and a superuser sees every team and the Django admin. Operators
make their own superuser with `manage.py createsuperuser`.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from teams.choices import Role
from teams.models import AdoptionProject, Membership, Team


class Command(BaseCommand):
    help = "Create a demo team/user/project for a first look (idempotent); prints the login."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="demo")

    def handle(self, *args: object, **opts: object) -> None:
        username = str(opts["username"])
        password_file = settings.VAR_DIR / f"{username}_password"
        team, _ = Team.objects.get_or_create(slug="demo", defaults={"name": "Demo team"})
        AdoptionProject.objects.get_or_create(
            team=team,
            name="Example CUDA codebase",
            defaults={
                "codebase_description": "A first project to try rocpath with.",
                "current_platform": "NVIDIA (CUDA)",
                "target_gpus": ["MI300X", "gfx942"],
            },
        )
        users = get_user_model().objects
        user = users.filter(username=username).first()
        if user is None or not password_file.exists():
            password = secrets.token_urlsafe(12)
            if user is None:
                user = users.create_user(username=username, email="", password=password)
            else:
                user.set_password(password)
                user.save(update_fields=["password"])
            settings.VAR_DIR.mkdir(parents=True, exist_ok=True)
            password_file.write_text(password)
            password_file.chmod(0o600)
        if user.is_superuser or user.is_staff:  # made by an older bootstrap_demo
            user.is_superuser = user.is_staff = False
            user.save(update_fields=["is_superuser", "is_staff"])
        Membership.objects.update_or_create(team=team, user=user, defaults={"role": Role.ADMIN})
        self.stdout.write(f"login: {username} / {password_file.read_text().strip()}")
