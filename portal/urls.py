from django.urls import path, re_path

from portal import alerts, fleet, roadmap, schedules, views
from portal.kinds import profile as profile_pages

app_name = "portal"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("jobs/new/", views.job_submit, name="job-submit"),
    path("jobs/<int:pk>/", views.job_detail, name="job-detail"),
    path("jobs/<int:pk>/log/", views.job_log, name="job-log"),
    re_path(
        r"^jobs/(?P<pk>[0-9]+)/measurements\.(?P<fmt>csv|json)$",
        views.job_measurements_download,
        name="job-measurements",
    ),
    path("jobs/<int:pk>/summary.json", views.job_summary_download, name="job-summary"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job-cancel"),
    path("jobs/<int:pk>/rerun/", views.job_rerun, name="job-rerun"),
    path("jobs/<int:pk>/baseline/", views.job_pin_baseline, name="job-pin-baseline"),
    path(
        "jobs/<int:pk>/regressions/acknowledge/",
        views.job_acknowledge_regressions,
        name="job-acknowledge-regressions",
    ),
    path("baselines/<int:pk>/unpin/", views.baseline_unpin, name="baseline-unpin"),
    path("jobs/<int:pk>/replay-shapes/", profile_pages.replay_shapes, name="profile-replay"),
    path("jobs/<int:pk>/profile-diff/", profile_pages.profile_diff, name="profile-diff"),
    path(
        "jobs/<int:pk>/artifacts/<int:artifact_pk>/",
        views.artifact_download,
        name="artifact-download",
    ),
    path("compare/", views.compare_page, name="compare"),
    path("history/", views.history_page, name="history"),
    path("projects/", views.project_list, name="projects"),
    path("projects/<int:pk>/", views.project_detail, name="project-detail"),
    path(
        "projects/<int:pk>/current-code/",
        views.project_current_code,
        name="project-current-code",
    ),
    path("projects/<int:pk>/porting/", views.project_porting, name="project-porting"),
    path("projects/<int:pk>/steps/", views.project_step, name="project-step"),
    path("projects/<int:pk>/alerts/", alerts.project_alerts, name="project-alerts"),
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
    path("projects/<int:pk>/roadmap/", roadmap.roadmap_page, name="project-roadmap"),
    path(
        "projects/<int:pk>/roadmap/phases/<int:number>/override/",
        roadmap.roadmap_override,
        name="roadmap-override",
    ),
    path(
        "projects/<int:pk>/roadmap/overrides/<int:override_id>/revoke/",
        roadmap.roadmap_override_revoke,
        name="roadmap-override-revoke",
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
    path("schedules/", schedules.schedule_list, name="schedules"),
    path("schedules/new/", schedules.schedule_new, name="schedule-new"),
    path("schedules/<int:pk>/", schedules.schedule_detail, name="schedule-detail"),
    path("schedules/<int:pk>/edit/", schedules.schedule_edit, name="schedule-edit"),
    path("schedules/<int:pk>/toggle/", schedules.schedule_toggle, name="schedule-toggle"),
    path("schedules/<int:pk>/delete/", schedules.schedule_delete, name="schedule-delete"),
    path("account/token/", views.api_token, name="api-token"),
    path("workers/", fleet.worker_list, name="workers"),
    path("workers/<int:pk>/", fleet.worker_detail, name="worker-detail"),
]
