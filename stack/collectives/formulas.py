"""What nccl-tests computes, so rocpath's figures read like theirs (PERFORMANCE.md there).

``size`` is the bytes of the operation as nccl-tests prints it: the whole buffer (for
all-gather the gathered output, for reduce-scatter the input, for all-to-all one rank's
send buffer). algbw = size / time. busbw = algbw times a factor of the rank count n that
makes the figure comparable with the hardware's link bandwidth whatever n is:
all-reduce 2(n-1)/n; all-gather, reduce-scatter, all-to-all (n-1)/n; broadcast and
send/recv 1.
"""

from __future__ import annotations

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv")
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8}


def bus_factor(op: str, ranks: int) -> float:
    if ranks < 1:
        raise ValueError("at least one rank")
    if op == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if op in ("all_gather", "reduce_scatter", "all_to_all"):
        return (ranks - 1) / ranks
    if op in ("broadcast", "send_recv"):
        return 1.0
    raise ValueError(f"unknown collective {op!r}")


def algbw_gbps(size_bytes: int, seconds: float) -> float:
    """Algorithm bandwidth in GB/s (10^9 bytes, as nccl-tests prints)."""
    return size_bytes / seconds / 1e9


def busbw_gbps(op: str, ranks: int, size_bytes: int, seconds: float) -> float:
    return algbw_gbps(size_bytes, seconds) * bus_factor(op, ranks)


def sweep(min_bytes: int, max_bytes: int, factor: int, ranks: int, dtype: str) -> list[int]:
    """Sizes from min to max, each a multiple of ranks times the element size (so every rank's
    share is whole), multiplied by ``factor`` each step — nccl-tests' -b -e -f."""
    unit = ranks * DTYPE_BYTES[dtype]
    sizes: list[int] = []
    size = max(min_bytes, unit)
    while size <= max_bytes:
        rounded = max(unit, size // unit * unit)
        if not sizes or rounded != sizes[-1]:
            sizes.append(rounded)
        size *= factor
    return sizes
