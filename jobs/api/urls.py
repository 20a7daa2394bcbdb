from django.urls import include, path
from rest_framework.routers import DefaultRouter

from jobs.api import views

app_name = "api"

router = DefaultRouter()
router.register("jobs", views.JobViewSet, basename="job")
router.register("environments", views.EnvironmentViewSet, basename="environment")
router.register("projects", views.ProjectViewSet, basename="project")
router.register("teams", views.TeamViewSet, basename="team")

urlpatterns = [
    path("kinds/", views.KindListView.as_view(), name="kinds"),
    path("token/rotate/", views.TokenRotateView.as_view(), name="token-rotate"),
    path(
        "jobs/<int:job_pk>/artifacts/<int:pk>/download/",
        views.ArtifactDownloadView.as_view(),
        name="artifact-download",
    ),
    path("", include(router.urls)),
]
