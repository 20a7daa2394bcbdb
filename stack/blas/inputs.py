"""What data a GEMM is fed: a documented parameter, recorded with every result.

Matrix-unit throughput depends on the data, not only on the shape. Measured on an
NVIDIA H200 (issue 15, Triton's do_bench, 8192³): bf16 all-zero operands ran at 802
TFLOP/s against 672 for normals (+19 %), small integers at 766 (+14 %); FP64 operands
drawn as float32 and cast up (29 zero mantissa bits) at 59.9 TFLOP/s against 53.3 for
full-entropy float64 (+12 %). Fewer toggling bits draw less power, so a power-capped
chip clocks higher. A benchmark that informs a purchase must say what it fed, and feed
by default what real work looks like: values that use every bit of their precision.

So every operand is drawn in its own precision or wider: float64 cases draw float64
normals; narrower floats draw float32 (more bits than they keep) and round once; int8
draws integers. The distribution is the ``inputs`` parameter and part of each
measurement's case, so two runs with different data never align in a comparison.
"""

from __future__ import annotations

from typing import Any

NORMAL = "normal"
DISTRIBUTIONS: dict[str, str] = {
    NORMAL: (
        "standard normal values drawn in the operand's own precision (float64 for FP64; "
        "float32 rounded once for narrower floats); int8: uniform over -128..127"
    ),
    "uniform": "uniform on [-1, 1) in the operand's precision; int8: uniform over -128..127",
    "small-int": "integers -4..4 (exact in every precision): fewer toggling bits",
    "zeros": "all zeros: the least power a matrix unit can draw, an upper bound, not a workload",
}
SMALL_INT = 4
# What a case of an external benchmark tool records: the tool makes its own data
# (rocblas-bench and hipblaslt-bench: their --initialization, rand_int by default).
TOOL_DEFAULT = "tool-default"


def describe(distribution: str) -> str:
    """One line for the report and the page."""
    return f"{distribution}: {DISTRIBUTIONS[distribution]}"


def torch_operand(
    torch: Any, shape: tuple[int, ...], dtype: Any, distribution: str, generator: Any, device: Any
) -> Any:
    """A tensor of ``shape`` and ``dtype`` with the asked distribution, made on ``device``."""
    if distribution == "zeros":
        return torch.zeros(shape, device=device, dtype=dtype)
    if dtype == torch.int8:
        low, high = (-SMALL_INT, SMALL_INT + 1) if distribution == "small-int" else (-128, 128)
        return torch.randint(low, high, shape, generator=generator, device=device, dtype=dtype)
    if distribution == "small-int":
        ints = torch.randint(-SMALL_INT, SMALL_INT + 1, shape, generator=generator, device=device)
        return ints.to(dtype)
    draw = torch.float64 if dtype == torch.float64 else torch.float32
    if distribution == "uniform":
        values = torch.rand(shape, generator=generator, device=device, dtype=draw) * 2 - 1
    else:
        values = torch.randn(shape, generator=generator, device=device, dtype=draw)
    return values if values.dtype == dtype else values.to(dtype)


def numpy_operand(np: Any, rng: Any, shape: tuple[int, ...], dtype: Any, distribution: str) -> Any:
    """The numpy twin of torch_operand (numpy's GEMMs are float64, float32 and float16)."""
    if distribution == "zeros":
        return np.zeros(shape, dtype=dtype)
    if distribution == "small-int":
        return rng.integers(-SMALL_INT, SMALL_INT + 1, size=shape).astype(dtype)
    draw = np.float64 if np.dtype(dtype) == np.float64 else np.float32
    if distribution == "uniform":
        values = rng.uniform(-1.0, 1.0, size=shape).astype(draw)
    else:
        values = rng.standard_normal(shape, dtype=draw)
    return values if values.dtype == np.dtype(dtype) else values.astype(dtype)
