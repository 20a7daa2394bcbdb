"""Models of the jobs app, one module per concern."""

from jobs.models.artifact import Artifact
from jobs.models.control_beat import ControlBeat
from jobs.models.environment import Environment
from jobs.models.event import JobEvent
from jobs.models.gpu_lease import GpuLease
from jobs.models.job import IllegalTransition, Job
from jobs.models.measurement import Measurement
from jobs.models.schedule import Schedule
from jobs.models.tuned_file import TunedFile
from jobs.models.worker import Worker

__all__ = [
    "Artifact",
    "ControlBeat",
    "Environment",
    "GpuLease",
    "IllegalTransition",
    "Job",
    "JobEvent",
    "Measurement",
    "Schedule",
    "TunedFile",
    "Worker",
]
