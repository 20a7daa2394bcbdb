"""A private one-node Slurm cluster (munged + slurmdbd + slurmctld + slurmd) for tests and
benchmarks.

Everything is this run's own: the munge key and socket, the ports, the cluster and node
names, the spool and state folders under one root, and the accounting database: slurmdbd
stores into the machine's MariaDB (127.0.0.1:3306, user root, no password) in a database of
this run's own (slurm_acct_<tag>), dropped by stop(); no other database is touched.
Another rocpath suite may run its own cluster on the same machine at the same time; the two
never see each other's jobs. The daemons run as root without systemd (what Debian's
slurm-wlm 22.05 allows), slurmdbd, the controller and the node bound to the host name's
address (CommunicationParameters=NoInAddrAny; 127.0.0.1 on the test machines).

The node is CPU-only but announces two GPUs (``Gres=gpu:2``): Slurm needs a device file
per GPU, so each is a character device made with mknod (/dev/null's and /dev/zero's
numbers), which lets ``--gres=gpu:N`` be scheduled, counted and refused for real.

    cluster = SlurmCluster(Path("/tmp/x"))
    cluster.start()          # returns once sacctmgr answers and sinfo says the node is idle
    os.environ.update(cluster.env)
    ...
    cluster.stop()
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

DAEMONS = (
    "munged",
    "slurmdbd",
    "slurmctld",
    "slurmd",
    "sbatch",
    "squeue",
    "scontrol",
    "sinfo",
    "sacct",
    "sacctmgr",
)
MARIADB = ("127.0.0.1", 3306)  # the machine's MariaDB; slurmdbd's StorageHost/StoragePort
START_S = 60.0  # what a daemon may take to start and the node to come up idle
CPUS = 2
MEMORY_MB = 2048
GPUS = 2
MAX_TIME_MIN = 60


def missing() -> str | None:
    """Why no private cluster can start here (None: it can)."""
    absent = [d for d in DAEMONS if shutil.which(d) is None]
    if absent:
        return (
            f"{', '.join(absent)} not installed: scripts/install-slurm.sh installs Debian's "
            "slurm-wlm and munge"
        )
    if os.geteuid() != 0:
        return "the private Slurm cluster runs its daemons as root (SlurmUser=root)"
    return None


def mysql_client() -> str | None:
    return shutil.which("mariadb") or shutil.which("mysql")


def accounting_missing() -> str | None:
    """Why slurmdbd can have no database here (None: MariaDB answers as root, no password)."""
    host, port = MARIADB
    client = mysql_client()
    if client is None:
        return "no mariadb/mysql client: slurmdbd's database cannot be made or dropped"
    try:
        with socket.create_connection(MARIADB, timeout=2):
            pass
    except OSError as exc:
        return f"MariaDB does not answer on {host}:{port} ({exc}): slurmdbd needs it for sacct"
    done = _sql("SELECT 1")
    if done.returncode != 0:
        return f"MariaDB on {host}:{port} refuses root without a password: {done.stderr.strip()}"
    return None


def _sql(statement: str) -> subprocess.CompletedProcess:
    host, port = MARIADB
    return subprocess.run(
        [mysql_client() or "mariadb", f"-h{host}", f"-P{port}", "-uroot", "-e", statement],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    """One node, one partition, two (file-backed) GPUs; its client environment in ``env``."""

    def __init__(
        self, root: Path, *, scheduler_parameters: str = "", min_job_age_s: int = 300
    ) -> None:
        tag = uuid.uuid4().hex[:8]
        # slurm.conf's SchedulerParameters (e.g. batch_sched_delay=0); "": Slurm's defaults
        self.scheduler_parameters = scheduler_parameters
        # how long slurmctld keeps an ended job (scontrol / squeue know it); sacct keeps it on
        self.min_job_age_s = min_job_age_s
        self.database = f"slurm_acct_{tag}"  # this run's own, in the machine's MariaDB
        self.made_database = False
        self.root = root
        self.name = f"rp{tag}"  # ClusterName: lower case, short
        self.node = f"rpn{tag}"
        self.partition = f"rpp{tag}"
        self.conf = root / "slurm.conf"
        self.dbd_conf = root / "slurmdbd.conf"  # slurmdbd reads it beside SLURM_CONF
        self.munge_socket = root / "munge" / "sock"
        self.procs: dict[str, int] = {}
        self.env = {"SLURM_CONF": str(self.conf)}

    # --- configuration ------------------------------------------------------------------
    def _write(self) -> None:
        root = self.root
        for sub in ("munge", "state", "spool", "log", "dev"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "munge").chmod(0o700)
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for i, minor in enumerate((3, 5)):  # /dev/null and /dev/zero: harmless to open
            node = root / "dev" / f"gpu{i}"
            if not node.exists():
                os.mknod(node, 0o666 | 0o020000, os.makedev(1, minor))
        ctld_port, slurmd_port, self.dbd_port = free_port(), free_port(), free_port()
        host, port = MARIADB
        self.dbd_conf.write_text(
            "\n".join(
                [
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={self.munge_socket}",
                    "DbdHost=localhost",
                    "DbdAddr=127.0.0.1",
                    f"DbdPort={self.dbd_port}",
                    # bind the host name's address (127.0.0.1, as for slurmctld), not any
                    "CommunicationParameters=NoInAddrAny",
                    "SlurmUser=root",
                    f"PidFile={root}/slurmdbd.pid",
                    f"LogFile={root}/log/slurmdbd.log",
                    "StorageType=accounting_storage/mysql",
                    f"StorageHost={host}",
                    f"StoragePort={port}",
                    "StorageUser=root",
                    f"StorageLoc={self.database}",
                    "",
                ]
            )
        )
        self.dbd_conf.chmod(0o600)  # slurmdbd refuses a config others can read
        self.conf.write_text(
            "\n".join(
                [
                    f"ClusterName={self.name}",
                    "SlurmctldHost=localhost(127.0.0.1)",
                    f"SlurmctldPort={ctld_port}",
                    f"SlurmdPort={slurmd_port}",
                    "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny",
                    "SlurmUser=root",
                    "SlurmdUser=root",
                    "AuthType=auth/munge",
                    f"AuthInfo=socket={self.munge_socket}",
                    "CredType=cred/munge",
                    f"StateSaveLocation={root}/state",
                    f"SlurmdSpoolDir={root}/spool/%n",
                    f"SlurmctldPidFile={root}/slurmctld.pid",
                    f"SlurmdPidFile={root}/slurmd.%n.pid",
                    f"SlurmctldLogFile={root}/log/slurmctld.log",
                    f"SlurmdLogFile={root}/log/slurmd.%n.log",
                    "ProctrackType=proctrack/linuxproc",
                    "TaskPlugin=task/none",
                    # proctrack/linuxproc's process tree, sampled: sacct's MaxRSS, CPU time
                    "JobAcctGatherType=jobacct_gather/linux",
                    "AccountingStorageType=accounting_storage/slurmdbd",
                    "AccountingStorageHost=127.0.0.1",
                    f"AccountingStoragePort={self.dbd_port}",
                    # munge's socket for slurmdbd's connections (AuthInfo is not read there)
                    f"AccountingStoragePass={self.munge_socket}",
                    "JobCompType=jobcomp/none",
                    "SchedulerType=sched/backfill",
                    "SelectType=select/cons_tres",
                    "SelectTypeParameters=CR_Core_Memory",
                    # a job asking more than the partition allows is refused at sbatch
                    "EnforcePartLimits=ALL",
                    "ReturnToService=1",  # a node an admin set down stays down (its reason kept)
                    "SlurmdTimeout=30",
                    "KillWait=5",
                    f"MinJobAge={self.min_job_age_s}",
                    "MessageTimeout=5",
                    "GresTypes=gpu",
                    *(
                        [f"SchedulerParameters={self.scheduler_parameters}"]
                        if self.scheduler_parameters
                        else []
                    ),
                    f"NodeName={self.node} NodeHostname=localhost NodeAddr=127.0.0.1 "
                    f"CPUs={CPUS} RealMemory={MEMORY_MB} Gres=gpu:{GPUS} State=UNKNOWN",
                    f"PartitionName={self.partition} Nodes={self.node} Default=YES "
                    f"MaxTime={MAX_TIME_MIN} State=UP",
                    "",
                ]
            )
        )
        (root / "gres.conf").write_text(
            f"NodeName={self.node} Name=gpu File={root}/dev/gpu[0-{GPUS - 1}]\n"
        )

    # --- daemons -------------------------------------------------------------------------
    def start(self) -> None:
        """Start the four daemons, register the cluster in slurmdbd and return once the node
        is idle (or raise, with logs)."""
        self._write()
        m = self.root / "munge"
        self._spawn(
            "munged",
            [
                "munged",
                f"--key-file={m / 'munge.key'}",
                f"--socket={self.munge_socket}",
                f"--pid-file={m / 'pid'}",
                f"--log-file={m / 'log'}",
                f"--seed-file={m / 'seed'}",
                "--force",
            ],
            m / "pid",
        )
        self.made_database = True  # slurmdbd creates it: stop() drops it, even half-started
        self._spawn("slurmdbd", ["slurmdbd"], "slurmdbd.pid")
        self.wait_for_accounting()
        # the cluster, and root's association in it (the root account sacctmgr makes with
        # the cluster): slurmctld's jobs are stored against it
        self.client("sacctmgr", "-i", "add", "cluster", self.name)
        self._spawn("slurmctld", ["slurmctld", "-c", "-f", str(self.conf)], "slurmctld.pid")
        self._spawn(
            "slurmd", ["slurmd", "-f", str(self.conf), "-N", self.node], f"slurmd.{self.node}.pid"
        )
        self.wait_for_node("idle")

    def _spawn(self, name: str, argv: list[str], pid_file: str | Path) -> None:
        pid_path = self.root / pid_file
        done = subprocess.run(argv, capture_output=True, text=True, env=self._env(), check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{name} did not start: {done.stderr or done.stdout}\n{self.logs()}")
        deadline = time.monotonic() + START_S
        while not (pid_path.exists() and pid_path.read_text().strip()):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} wrote no pid file {pid_path}\n{self.logs()}")
            time.sleep(0.05)
        self.procs[name] = int(pid_path.read_text().split()[0])

    def _env(self) -> dict[str, str]:
        return {**os.environ, **self.env}

    def client(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster."""
        done = subprocess.run(
            list(argv), capture_output=True, text=True, env=self._env(), check=False, timeout=60
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr or done.stdout}")
        return done

    def node_state(self) -> str:
        done = self.client("sinfo", "-h", "-N", "-n", self.node, "-o", "%T", check=False)
        return done.stdout.strip() if done.returncode == 0 else ""

    def wait_for_accounting(self, timeout: float = START_S) -> None:
        """Until sacctmgr gets an answer from this cluster's slurmdbd."""
        deadline = time.monotonic() + timeout
        while (
            done := self.client("sacctmgr", "-n", "-P", "list", "cluster", check=False)
        ).returncode:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"slurmdbd does not answer sacctmgr: {done.stderr.strip()}\n{self.logs()}"
                )
            time.sleep(0.05)

    def sacct(self, slurm_id: str, fields: str) -> str:
        """sacct's parsable line for a job's allocation (what the executor reads)."""
        return self.client("sacct", "-n", "-P", "-X", "-j", slurm_id, "-o", fields).stdout

    def wait_for_node(self, state: str, timeout: float = START_S) -> None:
        """Until sinfo shows the node in ``state`` (e.g. idle)."""
        deadline = time.monotonic() + timeout
        while (seen := self.node_state()) != state:
            if time.monotonic() > deadline:
                raise RuntimeError(f"node {self.node} is {seen!r}, not {state}\n{self.logs()}")
            time.sleep(0.1)

    def set_node(self, state: str, reason: str = "") -> None:
        args = ["scontrol", "update", f"nodename={self.node}", f"state={state}"]
        if reason:
            args.append(f"reason={reason}")
        self.client(*args)

    def logs(self) -> str:
        parts = []
        for path in sorted((self.root / "log").glob("*.log")):
            parts.append(f"--- {path.name}\n{path.read_text(errors='replace')[-2000:]}")
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel what is left, stop the daemons (slurmd and slurmctld first) and wait, then
        drop this run's accounting database."""
        with contextlib.suppress(Exception):
            self.client("scancel", "--full", f"--partition={self.partition}", check=False)
        for name in ("slurmd", "slurmctld", "slurmdbd", "munged"):
            pid = self.procs.pop(name, None)
            if pid is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.made_database:
            # its own name only (slurm_acct_<tag>): never another database
            done = _sql(f"DROP DATABASE IF EXISTS `{self.database}`")
            if done.returncode != 0:
                raise RuntimeError(f"could not drop {self.database}: {done.stderr.strip()}")
            self.made_database = False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError):
        # a zombie of a daemon whose parent is gone is dead for our purpose
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


# --- pytest fixtures (registered in tests/conftest.py) -----------------------------------
try:
    import pytest
except ImportError:  # bench/ imports the cluster without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    @pytest.fixture(scope="session")
    def slurm_cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
        """A private Slurm cluster for the session, its clients pointed at it (SLURM_CONF).

        Without slurm-wlm (and slurmdbd's MariaDB) these tests cannot mean anything: in CI
        (.ci/run installs it with scripts/install-slurm.sh) that is a failure, on a
        developer machine a skip that says why.
        """
        problem = missing() or accounting_missing()
        if problem:
            if os.environ.get("CI"):
                pytest.fail(problem)
            pytest.skip(problem)
        cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
        saved = os.environ.get("SLURM_CONF")
        try:
            cluster.start()
            os.environ.update(cluster.env)  # the workers started later inherit it
            yield cluster
        finally:
            cluster.stop()
            if saved is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = saved

    @pytest.fixture
    def slurm_worker(transactional_db, settings, tmp_path, slurm_cluster):  # type: ignore[no-untyped-def]
        """A Celery worker that runs jobs with the slurm executor on the private cluster."""
        from tests.workers import _start_worker

        slurm_cluster.wait_for_node("idle")  # a test that took the node down gave it back
        settings.ROCPATH_EXECUTOR = "slurm"
        handle = _start_worker(settings, tmp_path, ROCPATH_EXECUTOR="slurm", **slurm_cluster.env)
        yield handle
        handle.stop()
