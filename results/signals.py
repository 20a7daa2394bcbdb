"""Signals of the results app.

``regression_found``: the baseline check found regressions in a job. Send it with
``job_id`` (int) and, optionally, ``verdicts`` (the regressed Verdict rows or their ids;
without them every open regressed verdict of the job is told). It is heard by
results.alerts, which tells the job's project's alert targets; send it from inside the
transaction that wrote the verdicts or after it: the deliveries are queued after commit.
"""

from django.dispatch import Signal

regression_found = Signal()
