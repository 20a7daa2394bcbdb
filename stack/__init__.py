"""The code that runs inside a job: runners, the tools' output parsers, the job contract.

Plain Python and stdlib only on the run path, so that it starts fast in any
image (one process per job) and never needs Django: the orchestrator and this
package meet only through ``python -m stack run KIND --params FILE --out DIR``
and the files it leaves in OUT (see docs/job-contract.md).
"""
