"""`make run` to its first page, beside a bare `manage.py runserver` of the same tree.

Issue 36's goals, on a 2-core machine: under 20 s on a fresh clone with the venv
cached, under 8 s on a restart, under 60 s at load 8. The anchor is what Django alone
costs: `manage.py runserver --noreload` of the same clone (already migrated), timed the
same way. Each round, in one run so that the machine's drift hits each alike:

- fresh: `git clone` of this repository (HEAD, committed files only), then `make run`
  in it (the venv and the collected static files exist in the cache, as after any
  earlier clone's run; var/ is empty: migrate, the demo login, every process). The
  first round has no static files yet (cold: it collects them, once per machine and
  content);
- restart: `make run` again in that clone after a Ctrl-C stopped it;
- anchor: `runserver` in that clone.

"First page" is the login page answering 200, polled every 0.1 s from the moment the
command is started. `--load N` runs N busy loops beside it all. Prints a JSON report and
writes it to var/bench/first_page[-loadN].json.

    .venv/bin/python bench/first_page.py --rounds 4
    .venv/bin/python bench/first_page.py --rounds 2 --load 8
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "var" / "bench"
GIVE_UP_S = 600


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (http://127.0.0.1 of our own)
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def session_pids(sid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if fields[0] != "Z" and int(fields[3]) == sid:
                    found.append(int(entry.name))
    return found


def clean_env(port: int, static: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ROCPATH_") and k not in {"DATABASE_URL", "CELERY_BROKER_URL"}
    }
    env.update(
        {
            "ROCPATH_PORT": str(port),
            "ROCPATH_STATIC_ROOT": str(static),
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
        }
    )
    return env


def time_to_page(
    command: list[str], cwd: Path, port: int, static: Path
) -> tuple[float, subprocess.Popen]:
    """Seconds from starting ``command`` until the login page answers 200."""
    url = f"http://127.0.0.1:{port}/accounts/login/"
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=clean_env(port, static),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    while not answers(url):
        if proc.poll() is not None or time.perf_counter() - started > GIVE_UP_S:
            raise RuntimeError(f"{command} in {cwd} never answered {url}")
        time.sleep(0.1)
    return time.perf_counter() - started, proc


def stop(proc: subprocess.Popen) -> None:
    """Ctrl-C (make run drains and exits), then whatever is left of its session."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGINT)
    deadline = time.monotonic() + 60
    while session_pids(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in session_pids(proc.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    proc.wait(timeout=30)


@contextlib.contextmanager
def busy(n: int) -> Iterator[None]:
    loops = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
        for _ in range(n)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def one_round(scratch: Path, n: int, static: Path) -> dict[str, float]:
    """fresh, restart and anchor in one new clone; ``fresh`` is ``cold`` when ``static``
    is still empty (the first `make run` on this machine collects the static files)."""
    clone = scratch / f"clone-{n}"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    port = free_port()
    first = "fresh" if (static / "staticfiles.json").exists() else "cold"
    result: dict[str, float] = {}
    result[first], proc = time_to_page(["make", "run"], clone, port, static)
    stop(proc)
    result["restart"], proc = time_to_page(["make", "run"], clone, port, static)
    stop(proc)
    runserver = [str(clone / ".venv/bin/python"), "manage.py", "runserver", "--noreload"]
    result["anchor"], proc = time_to_page([*runserver, f"127.0.0.1:{port}"], clone, port, static)
    stop(proc)
    shutil.rmtree(clone, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", type=int, default=0, help="busy loops beside the runs")
    args = parser.parse_args()
    subprocess.run(["make", "venv"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    rounds = []
    with tempfile.TemporaryDirectory(prefix="rocpath-first-page-") as scratch, busy(args.load):
        for n in range(args.rounds):
            # One static root for the whole run, empty at first: round 0 is a first run
            # on this machine (cold), the others a fresh clone beside an earlier one.
            rounds.append(one_round(Path(scratch), n, Path(scratch) / "static"))
            print(json.dumps(rounds[-1]), file=sys.stderr)
    keys = {key for r in rounds for key in r}
    medians = {k: statistics.median(r[k] for r in rounds if k in r) for k in sorted(keys)}
    report = {
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "cpus": os.cpu_count(),
        "load": args.load,
        "rounds": rounds,
        "median_s": {k: round(v, 2) for k, v in medians.items()},
        "ratio_to_anchor": {
            k: round(v / medians["anchor"], 2) for k, v in medians.items() if k != "anchor"
        },
    }
    OUT.mkdir(parents=True, exist_ok=True)
    name = f"first_page-load{args.load}.json" if args.load else "first_page.json"
    (OUT / name).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
