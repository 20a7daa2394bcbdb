"""The GEMM shapes a workload runs, read from what the libraries and profilers log, and the
blas-bench params that replay exactly those shapes.

Four sources, one representation: ``BlasGemm``, the call as the BLAS library receives it
(column-major: m, n, k, transa, transb, batch, and the precision):

- the PyTorch profiler's Chrome trace with ``record_shapes`` (``cpu_op`` events
  ``aten::mm``/``addmm``/``bmm``/``baddbmm``/``_scaled_mm``/``_int_mm`` with ``Input
  Dims``, ``Input Strides`` and ``Input type``). PyTorch is row-major: ``C = A·B`` with A
  MxK and B KxN is the BLAS call ``C^T = B^T·A^T``, i.e. m = N, n = M, transa from B's
  layout and transb from A's; a transposed operand is the one whose last stride is not 1;
- ``ROCBLAS_LAYER=2``: one ready-to-run ``rocblas-bench -f gemm… -m … --transposeA …`` line
  per call;
- ``HIPBLASLT_LOG_MASK=32``: one ``hipblaslt-bench --api_method c -m … --transA …`` line per
  call;
- TunableOp's untuned (``PYTORCH_TUNABLEOP_RECORD_UNTUNED``) or tuned file: lines
  ``GemmTunableOp_BFloat16_TN,tn_4096_4096_1024_ld_…`` (op, data type, BLAS layout; then
  the layout again, m, n, k, ``_B_<batch>`` for strided-batched, leading dimensions).

blas-bench's torch backend takes shapes row-major (its "T" is an operand stored
transposed), so ``replay_params`` turns each BLAS call back: the torch GEMM it runs makes
the very BLAS call that was logged. Its tool backends take the BLAS form as is.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from stack.blas.precisions import PRECISION_NAMES

TRACE, ROCBLAS_LOG, HIPBLASLT_LOG, TUNABLEOP = "trace", "rocblas-log", "hipblaslt-log", "tunableop"
SOURCES = (TRACE, ROCBLAS_LOG, HIPBLASLT_LOG, TUNABLEOP)
MAX_SHAPES_PER_JOB = 256  # blas-bench's shapes maxItems


class ShapesError(ValueError):
    """The text is none of the formats this module reads, or holds no GEMM."""


@dataclass(frozen=True)
class BlasGemm:
    """One GEMM call as the BLAS library sees it (column-major)."""

    precision: str  # one of stack.blas.precisions.PRECISION_NAMES, or the raw type name
    m: int
    n: int
    k: int
    batch: int = 1
    transa: str = "N"
    transb: str = "N"

    @property
    def replayable(self) -> bool:
        """blas-bench knows this precision."""
        return self.precision in PRECISION_NAMES

    def torch_shape(self) -> dict[str, Any]:
        """blas-bench's torch (row-major) form of this call: A·B with A MxK, B KxN."""
        return {
            "m": self.n,
            "n": self.m,
            "k": self.k,
            "batch": self.batch,
            "transa": self.transb,
            "transb": self.transa,
        }

    def blas_shape(self) -> dict[str, Any]:
        """The tools' (rocblas-bench, hipblaslt-bench) form: the BLAS call itself."""
        return {
            "m": self.m,
            "n": self.n,
            "k": self.k,
            "batch": self.batch,
            "transa": self.transa,
            "transb": self.transb,
        }

    def label(self) -> str:
        """ "bf16 TN m=3072 n=4096 k=1024" (BLAS form), for logs and pages."""
        batch = f" batch={self.batch}" if self.batch > 1 else ""
        return (
            f"{self.precision} {self.transa}{self.transb} m={self.m} n={self.n} k={self.k}{batch}"
        )


def from_row_major(
    precision: str, rows: int, cols: int, inner: int, a_t: bool, b_t: bool, batch: int = 1
) -> BlasGemm:
    """The BLAS call PyTorch makes for A·B, A rowsxinner, B innerxcols (a_t, b_t: stored
    transposed)."""
    return BlasGemm(
        precision,
        m=cols,
        n=rows,
        k=inner,
        batch=batch,
        transa="T" if b_t else "N",
        transb="T" if a_t else "N",
    )


# --------------------------------------------------------------------------------------
# The PyTorch profiler's trace
# --------------------------------------------------------------------------------------

TORCH_TYPES = {
    "c10::BFloat16": "bf16",
    "c10::Half": "fp16",
    "float": "fp32",
    "double": "fp64",
    "c10::Float8_e4m3fn": "fp8",
    "c10::Float8_e4m3fnuz": "fp8",
    "signed char": "int8",
}
# operator -> indices of (A, B) among its inputs
TORCH_GEMM_OPS = {
    "aten::mm": (0, 1),
    "aten::addmm": (1, 2),
    "aten::_addmm_activation": (1, 2),
    "aten::bmm": (0, 1),
    "aten::baddbmm": (1, 2),
    "aten::_scaled_mm": (0, 1),
    "aten::_int_mm": (0, 1),
}


def _transposed(dims: list[int], strides: list[int] | None) -> bool:
    """A matrix stored transposed: its column stride is not 1 (its row stride is)."""
    if not strides or len(strides) != len(dims) or len(dims) < 2:
        return False
    return strides[-1] != 1 and strides[-2] == 1


def gemms_from_trace(document: Any) -> list[BlasGemm]:
    """Every GEMM operator call of a Chrome trace recorded with ``record_shapes=True``."""
    from stack.profile.torch_profiler import OPERATOR_CATEGORY, trace_events

    out = []
    for event in trace_events(document):
        if event.get("cat") != OPERATOR_CATEGORY or event.get("name") not in TORCH_GEMM_OPS:
            continue
        args = event.get("args") if isinstance(event.get("args"), dict) else {}
        dims, types = args.get("Input Dims"), args.get("Input type")
        strides = args.get("Input Strides")
        ia, ib = TORCH_GEMM_OPS[event["name"]]
        try:
            da, db = list(dims[ia]), list(dims[ib])
            dtype = str(types[ia])
        except (TypeError, IndexError, KeyError):
            continue
        if len(da) != len(db) or len(da) not in (2, 3):
            continue
        sa = strides[ia] if isinstance(strides, list) and len(strides) > ib else None
        sb = strides[ib] if isinstance(strides, list) and len(strides) > ib else None
        batch = int(da[0]) if len(da) == 3 else 1
        rows, inner, cols = int(da[-2]), int(da[-1]), int(db[-1])
        out.append(
            from_row_major(
                TORCH_TYPES.get(dtype, dtype),
                rows,
                cols,
                inner,
                _transposed(da, sa),
                _transposed(db, sb),
                batch,
            )
        )
    return out


# --------------------------------------------------------------------------------------
# rocblas-bench and hipblaslt-bench command lines (ROCBLAS_LAYER=2, HIPBLASLT_LOG_MASK=32)
# --------------------------------------------------------------------------------------

BLAS_TYPES = {
    "f16_r": "fp16",
    "h": "fp16",
    "bf16_r": "bf16",
    "f32_r": "fp32",
    "s": "fp32",
    "f64_r": "fp64",
    "d": "fp64",
    "i8_r": "int8",
    "f8_r": "fp8",
    "f8_fnuz_r": "fp8",
}
ROCBLAS_GEMMS = ("gemm", "gemm_ex", "gemm_strided_batched", "gemm_strided_batched_ex")


def _options(tokens: list[str]) -> dict[str, str]:
    """``--name value`` and ``-x value`` pairs (a flag without a value maps to "")."""
    found: dict[str, str] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.startswith("-") and not _is_number(token):
            value = ""
            if i + 1 < len(tokens) and (
                not tokens[i + 1].startswith("-") or _is_number(tokens[i + 1])
            ):
                value = tokens[i + 1]
                i += 1
            found.setdefault(token.lstrip("-"), value)
        i += 1
    return found


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _precision(opts: dict[str, str], type_key: str) -> str:
    raw = opts.get(type_key) or opts.get("r") or opts.get("precision") or "f32_r"
    precision = BLAS_TYPES.get(raw, raw)
    compute = (opts.get("compute_type") or "").removeprefix("c_")
    if precision == "fp32" and (compute == "xf32_r" or opts.get("math_mode") == "1"):
        precision = "tf32"
    return precision


def _bench_lines(text: str, tool: str) -> Iterable[list[str]]:
    for line in text.splitlines():
        if tool not in line:
            continue
        try:
            tokens = shlex.split(line[line.index(tool) :])
        except ValueError:
            continue
        if tokens and tokens[0].endswith(tool):
            yield tokens[1:]


def _int(opts: dict[str, str], *names: str, default: int | None = None) -> int:
    for name in names:
        if opts.get(name):
            return int(float(opts[name]))
    if default is None:
        raise ShapesError(f"a bench line without -{names[0]}")
    return default


def gemms_from_rocblas_log(text: str) -> list[BlasGemm]:
    """The GEMM lines of a ``ROCBLAS_LAYER=2`` log (other functions are skipped)."""
    out = []
    for tokens in _bench_lines(text, "rocblas-bench"):
        opts = _options(tokens)
        if opts.get("f", opts.get("function", "gemm")) not in ROCBLAS_GEMMS:
            continue
        out.append(
            BlasGemm(
                _precision(opts, "a_type"),
                m=_int(opts, "m", "sizem"),
                n=_int(opts, "n", "sizen"),
                k=_int(opts, "k", "sizek"),
                batch=_int(opts, "batch_count", "batch", default=1),
                transa=(opts.get("transposeA") or "N").upper(),
                transb=(opts.get("transposeB") or "N").upper(),
            )
        )
    return out


def gemms_from_hipblaslt_log(text: str) -> list[BlasGemm]:
    """The ``hipblaslt-bench`` lines of a ``HIPBLASLT_LOG_MASK=32`` log."""
    out = []
    for tokens in _bench_lines(text, "hipblaslt-bench"):
        opts = _options(tokens)
        out.append(
            BlasGemm(
                _precision(opts, "a_type"),
                m=_int(opts, "m", "sizem"),
                n=_int(opts, "n", "sizen"),
                k=_int(opts, "k", "sizek"),
                batch=_int(opts, "batch_count", default=1),
                transa=(opts.get("transA") or "N").upper(),
                transb=(opts.get("transB") or "N").upper(),
            )
        )
    return out


# --------------------------------------------------------------------------------------
# TunableOp files
# --------------------------------------------------------------------------------------

TUNABLEOP_TYPES = {
    "float": "fp32",
    "tf32": "tf32",
    "double": "fp64",
    "BFloat16": "bf16",
    "Half": "fp16",
    "Float8_e4m3fn": "fp8",
    "Float8_e4m3fnuz": "fp8",
}
TUNABLEOP_GEMMS = (
    "GemmTunableOp",
    "GemmAndBiasTunableOp",
    "GemmStridedBatchedTunableOp",
    "ScaledGemmTunableOp",
)


def tunableop_entry(op: str, params: str) -> BlasGemm | None:
    """One TunableOp entry (op signature, param signature) as a BLAS call, or None for an
    op that is not a GEMM (or a line this reader does not know)."""
    parts = op.split("_")
    if parts[0] not in TUNABLEOP_GEMMS or len(parts) < 3:
        return None
    layout = parts[-1]
    # data type: one token ("BFloat16", "float") or, for scaled GEMMs, A's two ("Float8_e4m3fn")
    dtype = parts[1] if parts[1] in TUNABLEOP_TYPES else "_".join(parts[1:3])
    fields = params.split("_")
    try:
        m, n, k = (int(f) for f in fields[1:4])
        batch = int(fields[5]) if len(fields) > 5 and fields[4] == "B" else 1
    except (ValueError, IndexError):
        return None
    if len(layout) != 2 or any(c not in "NT" for c in layout.upper()):
        return None
    return BlasGemm(
        TUNABLEOP_TYPES.get(dtype, dtype),
        m=m,
        n=n,
        k=k,
        batch=batch,
        transa=layout[0].upper(),
        transb=layout[1].upper(),
    )


def gemms_from_tunableop(text: str) -> list[BlasGemm]:
    """The GEMMs of a TunableOp untuned or tuned file (Validator lines skipped)."""
    out = []
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 2 or fields[0] == "Validator":
            continue
        gemm = tunableop_entry(fields[0], fields[1])
        if gemm is not None:
            out.append(gemm)
    return out


# --------------------------------------------------------------------------------------
# Any of them, counted, and replayed
# --------------------------------------------------------------------------------------


def detect(text: str) -> str:
    """Which source the text is (SOURCES), by its content."""
    head = text.lstrip()[:1]
    if head in "[{":
        return TRACE
    if "hipblaslt-bench" in text:
        return HIPBLASLT_LOG
    if "rocblas-bench" in text:
        return ROCBLAS_LOG
    if "TunableOp_" in text:
        return TUNABLEOP
    raise ShapesError(
        "not a format read here: a Chrome trace (JSON), a ROCBLAS_LAYER=2 or "
        "HIPBLASLT_LOG_MASK=32 log, or a TunableOp file"
    )


def gemms_from_text(text: str, source: str | None = None) -> list[BlasGemm]:
    """The GEMM calls of a trace, log or TunableOp file (its source detected if not given)."""
    source = source or detect(text)
    if source == TRACE:
        try:
            return gemms_from_trace(json.loads(text))
        except ValueError as exc:
            raise ShapesError(f"the trace is not JSON: {exc}") from None
    readers = {
        ROCBLAS_LOG: gemms_from_rocblas_log,
        HIPBLASLT_LOG: gemms_from_hipblaslt_log,
        TUNABLEOP: gemms_from_tunableop,
    }
    if source not in readers:
        raise ShapesError(f"source: {source!r} is none of {', '.join(SOURCES)}")
    return readers[source](text)


def shapes_gemms(text: str) -> list[BlasGemm]:
    """The GEMMs of any file read here, a profile job's result.json included (its summary's
    ``gemm_shapes``, each call counted as often as it ran)."""
    if text.lstrip()[:1] == "{":
        try:
            document = json.loads(text)
        except ValueError as exc:
            raise ShapesError(f"not JSON: {exc}") from None
        summary = document.get("summary") if isinstance(document, dict) else None
        if isinstance(summary, dict) and "gemm_shapes" in summary:
            rows = summary.get("gemm_shapes") or []
            return [g for row in rows for g in shapes_from_rows([row]) * int(row["calls"])]
        return gemms_from_trace(document)
    return gemms_from_text(text)


def count_shapes(gemms: Iterable[BlasGemm]) -> list[dict[str, Any]]:
    """Each distinct call once, with how often it ran, most frequent first (JSON-ready)."""
    counted = Counter(gemms)
    ordered = sorted(counted.items(), key=lambda item: (-item[1], item[0].label()))
    return [{**asdict(gemm), "calls": calls} for gemm, calls in ordered]


def shapes_from_rows(rows: Iterable[dict[str, Any]]) -> list[BlasGemm]:
    """``count_shapes`` rows (a summary's ``gemm_shapes``) back to calls, once each."""
    out = []
    for row in rows:
        out.append(
            BlasGemm(
                str(row["precision"]),
                m=int(row["m"]),
                n=int(row["n"]),
                k=int(row["k"]),
                batch=int(row.get("batch", 1)),
                transa=str(row.get("transa", "N")),
                transb=str(row.get("transb", "N")),
            )
        )
    return out


@dataclass
class ReplayPlan:
    """blas-bench params, one per precision (its shapes run in every precision it is
    given, so one job per precision replays exactly the shapes seen), and what was left
    out and why."""

    params: list[dict[str, Any]]
    skipped: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"params": self.params, "skipped": self.skipped}


def replay_params(
    gemms: Iterable[BlasGemm], backend: str = "torch", base: dict[str, Any] | None = None
) -> ReplayPlan:
    """blas-bench params replaying exactly these GEMMs (no square sweep, no other family).

    ``backend`` torch takes the row-major form, the tools the BLAS form; ``base`` adds
    blas-bench params (timing, device) to every job.
    """
    by_precision: dict[str, list[dict[str, Any]]] = {}
    skipped = []
    for gemm in dict.fromkeys(gemms):
        if not gemm.replayable:
            skipped.append({**asdict(gemm), "reason": f"blas-bench has no {gemm.precision!r}"})
            continue
        shape = gemm.torch_shape() if backend == "torch" else gemm.blas_shape()
        by_precision.setdefault(gemm.precision, []).append(shape)
    params = []
    for precision in PRECISION_NAMES:
        shapes = by_precision.get(precision, [])
        for start in range(0, len(shapes), MAX_SHAPES_PER_JOB):
            params.append(
                {
                    **(base or {}),
                    "families": ["gemm"],
                    "backends": [backend],
                    "precisions": [precision],
                    "sizes": [],
                    "shapes": shapes[start : start + MAX_SHAPES_PER_JOB],
                }
            )
    return ReplayPlan(params=params, skipped=skipped)
