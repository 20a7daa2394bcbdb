"""Environments: one immutable row per distinct fingerprint a result reported."""

from __future__ import annotations

import hashlib
import json

from jobs.models import Environment


def environment_identity(data: dict, *, image_digest: str = "") -> dict:
    """The parts of a fingerprint that make two results comparable (not timestamps or errors)."""
    host = data.get("host") or {}
    software = data.get("software") or {}
    return {
        "host": {
            k: host.get(k)
            for k in ("hostname", "cpu_model", "cpu_cores", "memory_bytes", "os", "kernel", "arch")
        },
        "gpus": sorted(
            json.dumps(
                {k: g.get(k) for k in ("vendor", "model", "arch", "memory_bytes", "driver")},
                sort_keys=True,
            )
            for g in data.get("gpus") or []
        ),
        "software": {
            k: software.get(k)
            for k in ("rocm_version", "cuda_version", "gpu_driver_version", "torch_version")
        }
        | {"libraries": software.get("libraries") or {}},
        "image_digest": image_digest,
    }


def environment_digest(data: dict, *, image: str = "", image_digest: str = "") -> str:
    """The identity of an Environment row: a hash of everything it stores.

    Two results share a row only when every byte of their fingerprint is the same, so no
    job's row is ever rewritten by another's (jobs/migrations/0005 computes the same hash).
    """
    canonical = json.dumps(
        {"data": data, "image": image, "image_digest": image_digest},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def record_environment(data: dict, *, image: str = "", image_digest: str = "") -> Environment:
    """The row of exactly this fingerprint: made the first time it is seen, never changed.

    ``fingerprint`` (the comparable parts, environment_identity) is shared by every row of one
    machine and stack, which is what results are compared by.
    """
    image, image_digest = image[:300], image_digest[:100]
    identity = environment_identity(data, image_digest=image_digest)
    fingerprint = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    gpus = data.get("gpus") or []
    first = gpus[0] if gpus else {}
    software = data.get("software") or {}
    env, _ = Environment.objects.get_or_create(
        data_sha256=environment_digest(data, image=image, image_digest=image_digest),
        defaults={
            "fingerprint": fingerprint,
            "data": data,
            "hostname": str((data.get("host") or {}).get("hostname") or "")[:255],
            "cpu_model": str((data.get("host") or {}).get("cpu_model") or "")[:255],
            "gpu_vendor": str(first.get("vendor") or "")[:32],
            "gpu_model": str(first.get("model") or "")[:255],
            "gpu_arch": str(first.get("arch") or "")[:64],
            "gpu_count": len(gpus),
            "gpu_driver": str(software.get("gpu_driver_version") or first.get("driver") or "")[
                :128
            ],
            "rocm_version": str(software.get("rocm_version") or "")[:64],
            "cuda_version": str(software.get("cuda_version") or "")[:64],
            "image": image,
            "image_digest": image_digest,
        },
    )
    return env
