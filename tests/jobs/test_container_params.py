"""The exact container parameters of each profile: the sandbox, checked without an engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.executors.base import ExecutorError, JobSpec
from jobs.executors.docker import container_params, limits_for
from jobs.executors.gpu_profiles import (
    NO_GPU,
    GpuUnavailable,
    nvidia_profile,
    profile_for,
    render_nodes,
    rocm_profile,
)

MI300X_HOST = {"gpus": [{"vendor": "amd", "model": "MI300X"} for _ in range(8)]}
H200_HOST = {"gpus": [{"vendor": "nvidia", "model": "H200"}]}


def _spec(tmp_path: Path, **hardware) -> JobSpec:
    return JobSpec(
        job_id=42,
        kind="probe",
        job_dir=tmp_path,
        timeout_s=60,
        image="rocpath/debian:latest",
        hardware=hardware,
        worker="w1@host",
        attempt=2,
    )


def test_every_job_container_is_sandboxed(tmp_path, settings):
    params = container_params(_spec(tmp_path), NO_GPU)
    assert params["network_mode"] == "none"
    assert params["read_only"] is True
    assert params["cap_drop"] == ["ALL"]
    assert params["security_opt"] == ["no-new-privileges"]
    assert params["user"] != "0" and not params["user"].startswith("0:")
    assert set(params["tmpfs"]) == {"/tmp"}
    assert params["mem_limit"] == params["memswap_limit"]
    assert params["pids_limit"] > 0 and params["nano_cpus"] > 0
    assert params["labels"] == {
        "rocpath.managed": "1",
        "rocpath.deployment": settings.ROCPATH_DEPLOYMENT,
        "rocpath.job": "42",
        "rocpath.worker": "w1@host",
    }
    assert params["name"] == f"rocpath-{settings.ROCPATH_DEPLOYMENT}-job-42-a2"
    assert "devices" not in params and "device_requests" not in params


def test_only_the_job_folder_is_mounted_and_never_the_docker_socket(tmp_path):
    params = container_params(_spec(tmp_path), NO_GPU)
    mounts = {m["Target"]: m for m in params["mounts"]}
    assert set(mounts) == {"/job/params.json", "/job/out"}
    assert mounts["/job/params.json"]["ReadOnly"] is True
    assert mounts["/job/out"]["ReadOnly"] is False
    assert all("docker.sock" not in m["Source"] for m in params["mounts"])
    tree = tmp_path / "tree"
    tree.mkdir()
    spec = _spec(tmp_path)
    spec = JobSpec(**{**spec.__dict__, "inputs": {"src": tree}, "cache_dir": tmp_path / "cache"})
    with_inputs = {m["Target"]: m for m in container_params(spec, NO_GPU)["mounts"]}
    assert with_inputs["/job/work/src"]["ReadOnly"] is True
    assert with_inputs["/job/work/src"]["Source"] == str(tree)
    assert with_inputs["/job/cache"]["ReadOnly"] is False
    assert container_params(spec, NO_GPU)["environment"]["ROCPATH_CACHE_DIR"] == "/job/cache"


def test_limits_come_from_the_job_within_the_servers_caps(settings):
    settings.ROCPATH_DOCKER_MAX_MEMORY_MB = 1024
    settings.ROCPATH_DOCKER_MAX_PIDS = 100
    settings.ROCPATH_DOCKER_MAX_CPUS = 2
    assert limits_for({"memory_mb": 512, "pids": 50, "cpus": 1}) == {
        "memory_mb": 512,
        "pids": 50,
        "nano_cpus": 1_000_000_000,
    }


def test_a_job_asking_for_more_than_the_caps_is_refused_naming_each(settings):
    settings.ROCPATH_DOCKER_MAX_MEMORY_MB = 1024
    settings.ROCPATH_DOCKER_MAX_PIDS = 100
    settings.ROCPATH_DOCKER_MAX_CPUS = 2
    with pytest.raises(ExecutorError) as refused:
        limits_for({"memory_mb": 10**6, "pids": 10**6, "cpus": 64})
    message = str(refused.value)
    assert "hardware.memory_mb: the job asks for 1000000 MiB, this worker's cap is 1024" in message
    assert "hardware.cpus: the job asks for 64 CPUs, this worker's cap is 2 CPUs" in message
    assert "hardware.pids: the job asks for 1000000 processes" in message


def test_the_rocm_profile_passes_kfd_only_the_chosen_render_nodes_and_the_gpu_groups(tmp_path):
    nodes = [f"/dev/dri/renderD{128 + i}" for i in range(8)]
    profile = rocm_profile([2, 5], nodes)
    assert profile.devices == [
        "/dev/kfd:/dev/kfd:rwm",
        "/dev/dri/renderD130:/dev/dri/renderD130:rwm",
        "/dev/dri/renderD133:/dev/dri/renderD133:rwm",
    ]
    # Inside the container the two GPUs are numbered from 0.
    assert profile.environment == {"ROCR_VISIBLE_DEVICES": "0,1", "HIP_VISIBLE_DEVICES": "0,1"}
    params = container_params(_spec(tmp_path), profile)
    assert params["devices"] == profile.devices
    assert params["environment"]["ROCR_VISIBLE_DEVICES"] == "0,1"
    assert params.get("group_add", []) == profile.group_add  # absent on a host with neither group


def test_the_nvidia_profile_uses_device_requests(tmp_path):
    profile = nvidia_profile([0, 3])
    params = container_params(_spec(tmp_path), profile)
    request = params["device_requests"][0]
    assert request["Driver"] == "nvidia" and request["DeviceIDs"] == ["0", "3"]
    assert request["Capabilities"] == [["gpu"]]
    assert params["environment"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert "devices" not in params


def test_a_cpu_job_gets_no_gpu_whatever_the_host_has():
    assert profile_for({}, MI300X_HOST) is NO_GPU
    assert profile_for({"gpu_count": 0}, H200_HOST) is NO_GPU


def test_the_profile_follows_the_vendor_the_job_asked_for(monkeypatch):
    monkeypatch.setattr(
        "jobs.executors.gpu_profiles.render_nodes",
        lambda: [f"/dev/dri/renderD{128 + i}" for i in range(8)],
    )
    assert profile_for({"gpu_count": 1}, MI300X_HOST).name == "rocm"
    assert profile_for({"gpu_vendor": "nvidia", "gpu_count": 1}, H200_HOST).name == "nvidia"


@pytest.mark.parametrize(
    ("hardware", "host"),
    [
        ({"gpu_vendor": "nvidia", "gpu_count": 1}, MI300X_HOST),
        ({"gpu_count": 2}, H200_HOST),
        ({"gpu_count": 1}, {"gpus": []}),
    ],
)
def test_asking_for_gpus_the_worker_lacks_is_refused(hardware, host):
    with pytest.raises(GpuUnavailable):
        profile_for(hardware, host)


def test_a_container_gets_the_gpus_its_job_leased_not_the_first_ones(monkeypatch):
    monkeypatch.setattr(
        "jobs.executors.gpu_profiles.render_nodes",
        lambda: [f"/dev/dri/renderD{128 + i}" for i in range(8)],
    )
    leased = {"gpu_vendor": "nvidia", "gpu_count": 1, "gpu_indices": [1]}
    two = {"gpus": [{"vendor": "nvidia", "model": "H200"}] * 2}
    assert profile_for(leased, two).device_requests[0]["device_ids"] == ["1"]
    amd = {"gpus": [{"vendor": "amd", "arch": "gfx942"}] * 8}
    rocm = profile_for({"gpu_vendor": "amd", "gpu_count": 2, "gpu_indices": [5, 6]}, amd)
    assert [d.split(":")[0] for d in rocm.devices] == [
        "/dev/kfd",
        "/dev/dri/renderD133",
        "/dev/dri/renderD134",
    ]


def test_only_amd_render_nodes_count_as_amd_gpus(tmp_path):
    dri, sysfs = tmp_path / "dri", tmp_path / "drm"
    for node, vendor in (("renderD128", "0x8086"), ("renderD129", "0x1002"), ("renderD130", None)):
        (dri / node).mkdir(parents=True)
        if vendor:
            (sysfs / node / "device").mkdir(parents=True)
            (sysfs / node / "device" / "vendor").write_text(vendor + "\n")
    # an Intel iGPU first would have made the first MI300X "GPU 1"; an unknown node is kept
    assert render_nodes(dri, sysfs) == [str(dri / "renderD129"), str(dri / "renderD130")]
