"""What the jobs app adds to the API (composed in config/api_router.py under /api/v1/)."""

from django.urls import path

from jobs.api import views

# (prefix, view set, basename), registered on the one router of the API.
routes = [
    ("jobs", views.JobViewSet, "job"),
    ("environments", views.EnvironmentViewSet, "environment"),
    ("schedules", views.ScheduleViewSet, "schedule"),
    ("workers", views.WorkerViewSet, "worker"),
]
urlpatterns = [
    path("kinds/", views.KindListView.as_view(), name="kinds"),
    path("token/rotate/", views.TokenRotateView.as_view(), name="token-rotate"),
    path(
        "jobs/<int:job_pk>/artifacts/<int:pk>/download/",
        views.ArtifactDownloadView.as_view(),
        name="artifact-download",
    ),
]
