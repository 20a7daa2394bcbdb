from django.apps import AppConfig


class TeamsConfig(AppConfig):
    """Teams, their projects and their code: the lowest Django layer (below jobs).

    Its label stays ``portal``, the label these models were created under before the
    pages app and this one were split: the tables (portal_team, …), content types,
    permissions and migration history (app "portal" in django_migrations) stay as
    they are, with no migration to move them. tests/teams/test_migrations.py shows it.
    """

    name = "teams"
    label = "portal"
    verbose_name = "Teams"
