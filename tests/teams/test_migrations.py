"""A database made before teams was split from portal keeps its rows, history and types.

The teams app keeps the label ``portal`` (teams/apps.py), so its tables, content types,
permissions and the rows of django_migrations stay what they were. These tests build a
database of the schema before the split (migrations applied up to main's leaves at the
time), write rows through that state's models, then migrate with today's code and read
the rows back through today's models.
"""

from __future__ import annotations

import pytest
from django.apps import apps as current_apps
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader

from jobs.models import Job
from teams.models import AdoptionProject, Membership, SourceSnapshot, Team

# The leaves of the migration graph before the split: what a deployed database recorded.
BEFORE_SPLIT = [("portal", "0002_source_snapshot"), ("jobs", "0006_environment_data_sha256_unique")]
# Every migration a database of that time had applied, by the name django_migrations holds.
RECORDED = [
    ("portal", "0001_initial"),
    ("portal", "0002_source_snapshot"),
    ("jobs", "0001_initial"),
    ("jobs", "0002_job_image_digest"),
    ("jobs", "0003_job_source"),
    ("jobs", "0004_gpu_lease"),
    ("jobs", "0005_environment_immutable"),
    ("jobs", "0006_environment_data_sha256_unique"),
]


def test_the_teams_models_keep_the_portal_label_and_tables() -> None:
    assert current_apps.get_app_config("portal").name == "teams"
    assert current_apps.get_app_config("pages").name == "portal"
    assert list(current_apps.get_app_config("pages").get_models()) == []
    tables = {m._meta.db_table for m in (Team, Membership, AdoptionProject, SourceSnapshot)}
    assert tables == {
        "portal_team",
        "portal_membership",
        "portal_adoptionproject",
        "portal_sourcesnapshot",
    }


def test_every_migration_a_database_recorded_before_the_split_is_still_in_the_graph() -> None:
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    assert set(RECORDED) <= set(graph.nodes)
    # Of ours, what leads to those leaves is exactly what such a database recorded.
    plan = {node for leaf in BEFORE_SPLIT for node in graph.forwards_plan(leaf)}
    assert {node for node in plan if node[0] in ("portal", "jobs")} == set(RECORDED)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_rows_written_before_the_split_are_read_by_todays_models() -> None:
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("jobs", None), ("portal", None)])  # an empty database of ours
        executor.loader.build_graph()
        executor.migrate(BEFORE_SPLIT)
        old = executor.loader.project_state(BEFORE_SPLIT).apps
        user = old.get_model("auth", "User").objects.create(username="before")
        team = old.get_model("portal", "Team").objects.create(name="Before", slug="before")
        old.get_model("portal", "Membership").objects.create(team=team, user=user, role="admin")
        project = old.get_model("portal", "AdoptionProject").objects.create(
            team=team, name="legacy", target_gpus=["MI300X"]
        )
        source = old.get_model("portal", "SourceSnapshot").objects.create(
            project=project, origin="git", status="ready", name="file:///srv/legacy.git"
        )
        old.get_model("jobs", "Job").objects.create(
            kind="noop", team=team, project=project, source=source, timeout_s=60
        )

        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())  # today's code, all of it

        team_now = Team.objects.get(slug="before")
        assert team_now.memberships.get().user.username == "before"
        project_now = AdoptionProject.objects.get(team=team_now)
        assert project_now.compile_targets() == ["gfx942"]
        source_now = project_now.sources.get()
        assert (source_now.name, source_now.status) == ("file:///srv/legacy.git", "ready")
        job = Job.objects.select_related("team", "project", "source").get()
        assert (job.team, job.project, job.source) == (team_now, project_now, source_now)
        assert ContentType.objects.get_for_model(Team).app_label == "portal"
        call_command("makemigrations", "--check", "--dry-run", verbosity=0)
    finally:
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
