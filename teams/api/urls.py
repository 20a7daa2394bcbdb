"""What the teams app adds to the API (composed in config/api_router.py under /api/v1/)."""

from teams.api import views

# (prefix, view set, basename), registered on the one router of the API.
routes = [
    ("projects", views.ProjectViewSet, "project"),
    ("teams", views.TeamViewSet, "team"),
]
urlpatterns: list = []
