"""`manage.py run_facts`: make run's one start-up interpreter says what the script reads."""

from io import StringIO

from django.core.management import call_command


def test_run_facts_prints_the_login_executor_and_queues_one_per_line(db, settings, tmp_path):
    settings.VAR_DIR = tmp_path  # where bootstrap_demo keeps the demo password
    out, progress = StringIO(), StringIO()
    call_command("run_facts", stdout=out, stderr=progress)
    lines = out.getvalue().split("\n")[:6]
    login, executor, job_queue, control_queue, alert_queue, compare_queue = lines
    password = (tmp_path / "demo_password").read_text().strip()
    assert login == f"login: demo / {password}"
    assert executor == "local"  # ROCPATH_EXECUTOR in the test settings
    assert job_queue == settings.CELERY_TASK_DEFAULT_QUEUE
    assert control_queue == settings.ROCPATH_CONTROL_QUEUE
    assert alert_queue == settings.ROCPATH_ALERT_QUEUE
    assert compare_queue == settings.ROCPATH_COMPARE_QUEUE
