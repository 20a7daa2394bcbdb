from django.urls import path

from portal import roadmap, views
from portal.kinds import profile as profile_pages

app_name = "portal"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("jobs/new/", views.job_submit, name="job-submit"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/log/", views.job_log, name="job-log"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
    path("jobs/<int:pk>/rerun/", views.job_rerun, name="job-rerun"),
    path("jobs/<int:pk>/replay-shapes/", profile_pages.replay_shapes, name="profile-replay"),
    path("jobs/<int:pk>/profile-diff/", profile_pages.profile_diff, name="profile-diff"),
    path(
        "jobs/<int:pk>/artifacts/<int:artifact_pk>/",
        views.artifact_download,
        name="artifact-download",
    ),
    path("projects/", views.project_list, name="projects"),
    path("projects/<int:pk>/", views.project_detail, name="project-detail"),
    path("projects/<int:pk>/porting/", views.project_porting, name="project-porting"),
    path("projects/<int:pk>/steps/", views.project_step, name="project-step"),
    path(
        "projects/<int:pk>/sources/<int:source_pk>/file/",
        views.source_file,
        name="source-file",
    ),
    path("projects/<int:pk>/roadmap/", roadmap.roadmap_page, name="project-roadmap"),
    path(
        "projects/<int:pk>/roadmap/phases/<int:number>/override/",
        roadmap.roadmap_override,
        name="roadmap-override",
    ),
    path(
        "projects/<int:pk>/roadmap/phases/<int:number>/",
        roadmap.roadmap_phase,
        name="roadmap-phase",
    ),
    path(
        "projects/<int:pk>/roadmap/phases/<int:number>/tasks/",
        roadmap.roadmap_task,
        name="roadmap-task",
    ),
    path(
        "projects/<int:pk>/roadmap/checklist/", roadmap.roadmap_checklist, name="roadmap-checklist"
    ),
    path("projects/<int:pk>/roadmap/context/", roadmap.roadmap_context, name="roadmap-context"),
    path("projects/<int:pk>/report/", roadmap.roadmap_report, name="roadmap-report"),
    path(
        "projects/<int:pk>/report.<str:fmt>",
        roadmap.roadmap_report,
        name="roadmap-report-as",
    ),
    path("account/token/", views.api_token, name="api-token"),
]
