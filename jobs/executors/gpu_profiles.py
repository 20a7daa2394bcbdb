"""GPU passthrough profiles: which devices, groups and variables a job container gets.

Chosen from what the worker has (its inventory) and what the job asked for
(``requested_hardware``), as plain data so the exact container parameters of
each profile can be unit-tested without an engine or a GPU.
"""

from __future__ import annotations

import grp
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class GpuProfile:
    name: str  # "none" | "rocm" | "nvidia"
    devices: list[str] = field(default_factory=list)  # host:container:perms, docker's format
    group_add: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    device_requests: list[dict] = field(default_factory=list)  # docker.types.DeviceRequest kwargs

    def container_kwargs(self) -> dict:
        kwargs: dict = {}
        if self.devices:
            kwargs["devices"] = list(self.devices)
        if self.group_add:
            kwargs["group_add"] = list(self.group_add)
        if self.device_requests:
            kwargs["device_requests"] = [dict(r) for r in self.device_requests]
        return kwargs


NO_GPU = GpuProfile(name="none")


class GpuUnavailable(Exception):
    """The job asked for GPUs this worker does not have."""


def _group_id(name: str) -> str | None:
    try:
        return str(grp.getgrnam(name).gr_gid)
    except KeyError:
        return None


AMD_PCI_VENDOR = "0x1002"


def render_nodes(dri: Path = Path("/dev/dri"), sysfs: Path = Path("/sys/class/drm")) -> list[str]:
    """The host's AMD GPUs' /dev/dri/renderD* nodes, in order.

    Jobs number AMD GPUs among AMD GPUs only, so another vendor's render node (an
    iGPU, a display card) must not shift them; a node whose vendor sysfs does not
    say is kept.
    """
    if not dri.is_dir():
        return []
    nodes = []
    for node in sorted(dri.glob("renderD*")):
        try:
            vendor = (sysfs / node.name / "device" / "vendor").read_text().strip()
        except OSError:
            vendor = AMD_PCI_VENDOR
        if vendor == AMD_PCI_VENDOR:
            nodes.append(str(node))
    return nodes


def rocm_profile(indices: list[int], nodes: list[str], *, kfd: str = "/dev/kfd") -> GpuProfile:
    """ROCm: /dev/kfd plus only the chosen render nodes, video and render groups.

    Passing only the chosen renderD nodes isolates GPUs at the device level;
    ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES then number them from 0 inside.
    """
    if any(i >= len(nodes) for i in indices):
        raise GpuUnavailable(f"asked for GPUs {indices}, this host has {len(nodes)} render nodes")
    chosen = [nodes[i] for i in indices]
    groups = [gid for gid in (_group_id("video"), _group_id("render")) if gid]
    visible = ",".join(str(i) for i in range(len(chosen)))
    return GpuProfile(
        name="rocm",
        devices=[f"{kfd}:{kfd}:rwm", *(f"{n}:{n}:rwm" for n in chosen)],
        group_add=groups,
        environment={"ROCR_VISIBLE_DEVICES": visible, "HIP_VISIBLE_DEVICES": visible},
    )


def nvidia_profile(indices: list[int]) -> GpuProfile:
    ids = [str(i) for i in indices]
    return GpuProfile(
        name="nvidia",
        device_requests=[{"driver": "nvidia", "device_ids": ids, "capabilities": [["gpu"]]}],
        environment={
            "CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(len(ids))),
            "NVIDIA_VISIBLE_DEVICES": ",".join(ids),
        },
    )


@dataclass(frozen=True)
class GpuRequest:
    """What a job asked for, resolved against a worker's inventory."""

    vendor: str
    count: int
    candidates: list[int]  # the indices it may get, in order (all of them when it named them)


# The properties of a GPU a job may ask for (jobs.services.HARDWARE_FIELDS); asking for
# any of them asks for at least one such GPU.
GPU_PROPERTIES = ("gpu_vendor", "gpu_model", "gpu_arch", "gpu_memory_gb")
GIB = 2**30  # gpu_memory_gb's unit: the probe's memory_bytes read in GiB


def wants_gpus(hardware: dict | None) -> bool:
    """Does a job's hardware request ask for GPUs (a count, indices or a GPU property)?"""
    return bool(
        hardware
        and (
            hardware.get("gpu_count")
            or hardware.get("gpu_indices")
            or any(key in hardware for key in GPU_PROPERTIES)
        )
    )


def gpus_needed(hardware: dict | None) -> int:
    """How many GPUs a job takes: none unless it wants GPUs (wants_gpus), else its count,
    the indices it names, or one (a bare property such as gpu_arch asks for one GPU)."""
    if not wants_gpus(hardware):
        return 0
    assert hardware is not None
    return max(1, hardware.get("gpu_count") or 0, len(hardware.get("gpu_indices") or []))


def gpu_fits(gpu: dict, hardware: dict) -> bool:
    """Whether one GPU of an inventory has every GPU property the job names: its vendor,
    a model containing gpu_model (any case: "MI300X" in "AMD Instinct MI300X"), its
    architecture exactly, and at least gpu_memory_gb GiB."""
    if "gpu_vendor" in hardware and gpu.get("vendor") != hardware["gpu_vendor"]:
        return False
    model = hardware.get("gpu_model")
    if model is not None and str(model).lower() not in str(gpu.get("model") or "").lower():
        return False
    if "gpu_arch" in hardware and gpu.get("arch") != hardware["gpu_arch"]:
        return False
    memory = hardware.get("gpu_memory_gb")
    return memory is None or (gpu.get("memory_bytes") or 0) >= memory * GIB


def request_for(hardware: dict, inventory: dict, lendable: list[int] | None) -> GpuRequest | None:
    """The GPUs a job needs from this worker; None for a CPU job.

    Only GPUs with the properties the job names are candidates (a host of two GPU models
    gives a gfx942 job its MI300X). Raises GpuUnavailable when this worker can never
    satisfy it (no such GPUs).
    """
    if not wants_gpus(hardware):
        return None
    # Submission validates these (jobs.services.validate_hardware); a row written before that
    # check, or by hand, must still end its job with a message rather than crash the worker.
    count = hardware.get("gpu_count") or 0
    named = hardware.get("gpu_indices") or []
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise GpuUnavailable(f"gpu_count must be a non-negative integer, not {count!r:.40}")
    if not isinstance(named, list) or any(
        isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in named
    ):
        raise GpuUnavailable(
            f"gpu_indices must be a list of non-negative integers, not {named!r:.80}"
        )
    count = count or 1  # a GPU property alone asks for one such GPU
    everything = [g for g in inventory.get("gpus") or [] if isinstance(g, dict)]
    vendor = hardware.get("gpu_vendor")
    if not vendor:  # the vendor of the first GPU that fits
        fitting = [g for g in everything if gpu_fits(g, hardware)] or everything
        vendor = str(fitting[0].get("vendor")) if fitting else None
    gpus = [g for g in everything if g.get("vendor") == vendor] if vendor else []
    if not gpus:
        raise GpuUnavailable(f"no {vendor + ' ' if vendor else ''}GPU on this worker")
    assert vendor is not None
    asks = {k: hardware[k] for k in GPU_PROPERTIES if k in hardware and k != "gpu_vendor"}
    usable = [
        i
        for i, gpu in enumerate(gpus)
        if (lendable is None or i in lendable) and gpu_fits(gpu, asks)
    ]
    such = f"{vendor} GPUs{' with ' + str(asks) if asks else ''}"
    if named:
        missing = sorted(set(named) - set(usable))
        if missing:
            raise GpuUnavailable(f"asked for GPUs {named}; this worker lends {such} {usable}")
        return GpuRequest(vendor, len(named), named)
    if count > len(usable):
        raise GpuUnavailable(f"asked for {count} GPUs, this worker lends {len(usable)} {such}")
    return GpuRequest(vendor, count, usable)


def profile_for(hardware: dict, inventory: dict) -> GpuProfile:
    """The profile for a job's request on a worker whose inventory (probe output) is given.

    ``hardware``: {"gpu_vendor": "amd"|"nvidia"|None, "gpu_count": N, "gpu_indices": [..]}
    (after leasing, jobs.leases names the leased indices). ``inventory``: the probe's
    environment dict for this host ("gpus": [...]).
    """
    request = request_for(hardware, inventory, None)
    if request is None:
        return NO_GPU
    indices = request.candidates[: request.count]
    if request.vendor == "amd":
        return rocm_profile(indices, render_nodes())
    if request.vendor == "nvidia":
        return nvidia_profile(indices)
    raise GpuUnavailable(f"no passthrough profile for GPU vendor {request.vendor!r}")


_inventory: dict | None = None


def worker_inventory() -> dict:
    """What GPUs this worker host has, once per process: the operator's configured
    inventory (ROCPATH_WORKER_INVENTORY, jobs.fleet) when there is one, so that leases and
    passthrough see the GPUs the worker announced; else probed (stack's probe, in-process).
    """
    global _inventory  # one inventory per worker process, by design
    if _inventory is None:
        from jobs.fleet import configured_inventory

        _inventory = configured_inventory()
        if _inventory is None:
            from stack.probe import inventory

            _inventory = inventory()
    return _inventory
