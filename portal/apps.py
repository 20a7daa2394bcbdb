from django.apps import AppConfig


class PortalConfig(AppConfig):
    """The pages: views, forms, templates, charts, reports. No models of its own.

    Labelled ``pages`` because ``portal`` is the label of the teams app, whose models
    were created under it (teams/apps.py says why).
    """

    name = "portal"
    label = "pages"
    verbose_name = "Portal"

    def ready(self) -> None:
        from portal import receivers  # noqa: F401  (draws ended jobs' charts into the cache)
