"""The REST API (/api/v1/), composed of what each app adds: its view sets and paths.

One router, so the API's root lists every collection; the URL names stay in the
``api`` namespace (``api:job-detail``, ``api:project-sources``, …) whichever app
serves them.
"""

from django.urls import include, path
from rest_framework.routers import DefaultRouter

from jobs.api import urls as jobs_api
from portal import api as portal_api
from results import api as results_api
from roadmap import api as roadmap_api
from teams.api import urls as teams_api

app_name = "api"

PARTS = (jobs_api, teams_api, results_api, roadmap_api, portal_api)

router = DefaultRouter()
for part in PARTS:
    for prefix, viewset, basename in part.routes:
        router.register(prefix, viewset, basename=basename)

urlpatterns = [
    *(pattern for part in PARTS for pattern in part.urlpatterns),
    path("", include(router.urls)),
]
