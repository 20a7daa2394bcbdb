from django.urls import path

from portal import views

app_name = "portal"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("jobs/new/", views.job_submit, name="job-submit"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/log/", views.job_log, name="job-log"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
    path("jobs/<int:pk>/rerun/", views.job_rerun, name="job-rerun"),
    path(
        "jobs/<int:pk>/artifacts/<int:artifact_pk>/",
        views.artifact_download,
        name="artifact-download",
    ),
    path("projects/", views.project_list, name="projects"),
    path("projects/<int:pk>/", views.project_detail, name="project-detail"),
    path("projects/<int:pk>/porting/", views.project_porting, name="project-porting"),
    path("projects/<int:pk>/steps/", views.project_step, name="project-step"),
    path("projects/<int:pk>/porting/decisions/", views.project_decision, name="project-decision"),
    path(
        "projects/<int:pk>/porting/settings/",
        views.project_porting_settings,
        name="project-porting-settings",
    ),
    path(
        "projects/<int:pk>/sources/<int:source_pk>/file/",
        views.source_file,
        name="source-file",
    ),
    path("account/token/", views.api_token, name="api-token"),
]
