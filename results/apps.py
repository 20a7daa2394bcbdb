from django.apps import AppConfig


class ResultsConfig(AppConfig):
    name = "results"
    verbose_name = "Results"

    def ready(self) -> None:
        from results import (
            alert_admin,  # noqa: F401  (the alerting models' admin pages)
            alerts,  # noqa: F401  (connects to job-finished and regression_found)
            receivers,  # noqa: F401  (connects to jobs' job-finished signal)
        )
