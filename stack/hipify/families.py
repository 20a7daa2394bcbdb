"""Which CUDA API family an identifier belongs to, and the porting-effort estimate.

Families are what a team plans by ("all of cuFFT maps to hipFFT; the three
cuSPARSE calls HIP lacks need a rewrite"), so counts are reported per family.
hipify-perl does not say the family; it is derived here from the identifier's
prefix and, for converted references, the ``subst`` type (``include``,
``device_function``, ``openGL``, ...). hipify-clang's families are the model:
CUDA RT API, CUDA Driver API, cuBLAS, cuFFT, ...
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

# Checked in order: longer / more specific prefixes first.
_PREFIXES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("cublasLt", "CUBLASLT"), "cuBLASLt"),
    (("cublas", "CUBLAS"), "cuBLAS"),
    (("cufft", "CUFFT"), "cuFFT"),
    (("curand", "CURAND"), "cuRAND"),
    (("cudnn", "CUDNN"), "cuDNN"),
    (
        (
            "cusparse",
            "CUSPARSE",
            "pruneInfo",
            "bsric02Info",
            "bsrilu02Info",
            "bsrsv2Info",
            "bsrsm2Info",
            "csric02Info",
            "csrilu02Info",
            "csrsv2Info",
            "csrsm2Info",
            "csrgemm2Info",
            "csru2csrInfo",
        ),
        "cuSPARSE",
    ),
    (("cusolver", "CUSOLVER", "syevjInfo", "gesvdjInfo"), "cuSOLVER"),
    (("cutensor", "CUTENSOR"), "cuTENSOR"),
    (("cub::", "CUB_", "cub/"), "CUB"),
    (("thrust",), "Thrust"),
    (("nccl", "NCCL"), "NCCL"),
    (("nvrtc", "NVRTC"), "NVRTC"),
    (("nvtx", "NVTX"), "NVTX"),
    (("nvml", "NVML"), "NVML"),
    (("cuComplex", "cuDoubleComplex", "cuFloatComplex", "make_cu", "cuC"), "cuComplex"),
    (("cudaGL", "cuGL", "cudaGraphicsGL", "cuGraphicsGL", "CU_GL_", "cudaGL"), "graphics interop"),
    (
        ("cudaD3D", "cuD3D", "cudaVDPAU", "cuVDPAU", "cudaEGL", "cuEGL", "CU_D3D", "CU_EGL"),
        "graphics interop",
    ),
    (("CUDART_",), "CUDA RT API"),
)

_TYPE_FAMILIES = {
    "include": "headers",
    "include_cuda_main_header": "headers",
    "include_cuda_main_header_v2": "headers",
    "device_function": "device functions",
    "device_library": "device functions",
    "device_type": "device types",
    "openGL": "graphics interop",
    "D3D9": "graphics interop",
    "D3D10": "graphics interop",
    "D3D11": "graphics interop",
    "VDPAU": "graphics interop",
    "EGL": "graphics interop",
    "complex": "cuComplex",
}

FAMILY_ORDER = (
    "CUDA RT API",
    "CUDA Driver API",
    "cuBLAS",
    "cuBLASLt",
    "cuFFT",
    "cuRAND",
    "cuDNN",
    "cuSPARSE",
    "cuSOLVER",
    "cuTENSOR",
    "CUB",
    "Thrust",
    "NCCL",
    "NVRTC",
    "NVTX",
    "NVML",
    "cuComplex",
    "device functions",
    "device types",
    "graphics interop",
    "headers",
    "other",
)


@lru_cache(maxsize=65536)
def family_of(name: str, subst_type: str | None = None) -> str:
    """The API family of a CUDA identifier (``subst_type`` from hipify's tables, if known)."""
    for prefixes, family in _PREFIXES:
        if name.startswith(prefixes):
            return family
    if subst_type in _TYPE_FAMILIES:
        return _TYPE_FAMILIES[subst_type]
    if name.startswith("cuda"):
        return "CUDA RT API"
    if name.startswith(("cu", "CU")) and len(name) > 2 and (name[2].isupper() or name[2] == "_"):
        return "CUDA Driver API"
    if name.startswith("__"):
        return "device functions"
    if name == "texture" or name.startswith(("tex1D", "tex2D", "tex3D", "surf")):
        return "CUDA RT API"
    return "other"


# --- porting effort ---------------------------------------------------------------

# Hours per input. Deliberately simple and shown next to every estimate, so a team
# can redo the sum with its own numbers. Only findings in code count: hipify's
# matches in comments, strings and inside longer identifiers are noise here.
EFFORT_WEIGHTS: dict[str, float] = {
    "converted_cuda_refs": 0.02,  # review each automatic conversion
    "unsupported_apis": 8.0,  # per distinct API HIP lacks: find an alternative or rewrite
    "unsupported_refs": 0.5,  # per place it is used
    "removed_apis": 4.0,  # per distinct removed API (textures, ...): port to the modern API first
    "removed_refs": 0.5,
    "deprecated_apis": 1.0,  # per distinct deprecated API
    "deprecated_refs": 0.1,
    "unconverted_refs": 0.25,  # cudaX tokens hipify left untranslated
    "unsupported_device_function_refs": 0.5,
    "files_with_device_code": 1.0,  # build, test and tune each translated kernel file
    # per place a hazard rule found (stack.hipify.hazards), by the rule's severity: a
    # warp-size idiom or PTX is a rewrite to check, a texture object a review
    "hazards_high": 1.0,
    "hazards_medium": 0.5,
    "hazards_low": 0.1,
}

HOURS_PER_DAY = 6.0


def effort_estimate(
    inputs: dict[str, int], weights: dict[str, float] | None = None
) -> dict[str, Any]:
    """hours = sum(weight x input); the inputs, weights and formula travel with the number."""
    weights = dict(EFFORT_WEIGHTS if weights is None else weights)
    terms = {key: round(weights.get(key, 0.0) * inputs.get(key, 0), 2) for key in weights}
    hours = round(sum(terms.values()), 1)
    return {
        "hours": hours,
        "person_days": round(hours / HOURS_PER_DAY, 1),
        "formula": " + ".join(f"{weights[k]:g} h x {k}" for k in weights),
        "inputs": {k: int(inputs.get(k, 0)) for k in weights},
        "weights_hours": weights,
        "terms_hours": terms,
        "hours_per_day": HOURS_PER_DAY,
        "note": (
            "a planning aid, not a quote: only findings in code count (not comments, "
            "strings or longer identifiers); see docs/hipify.md"
        ),
    }
