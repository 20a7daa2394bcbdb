"""Every wait of the suite for something another process or thread does, named once.

A test waits for a state (a job ended, a log line written, a process gone), never for a
number of seconds; these are only the bounds past which it gives up and fails. They are
long enough for a two-core machine shared with `stress-ng --cpu 2` and other suites, and a
wait ends as soon as its state is reached, so a quiet machine never pays for them. No
test asserts that something was fast in seconds: what must not hang is bounded by one of
these, and what must be linear is compared with a smaller run of itself (LINEAR_RATIO).

Standard library only: the stack's tests (no Django) import it too.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# A process or server to start and answer (a worker, gunicorn, redis-server, a cluster).
START_S = 120
# A whole deployment's first start (migrate, collectstatic, every process) or a backlog of
# hundreds of jobs to drain.
SETUP_S = 300
# A short job to end once a worker has it (noop, a container of /bin/true), and a worker
# to recover after a fault (retry pauses of 2, 4, 8 s, then the jobs themselves).
JOB_S = 120
# A real kind's job in a container (blas-bench, hipify-scan, compile-check).
LONG_JOB_S = 300
# Something told to stop to be gone: a process, a process group, a canceled job.
STOP_S = 60
# Something that must happen without waiting on what it stops or refuses (a timeout that
# kills a 600-s sleeper, a refusal before reading): far below what it would wait else.
PROMPT_S = 30
# A run ten times the size of a reference run may take at most this many times as long:
# linear work takes about 10 times (less, with a fixed start-up), quadratic 100.
LINEAR_RATIO = 30


def wait_until(condition: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Whether ``condition()`` became true within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True
