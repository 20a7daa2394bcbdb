"""One rank of collective-bench: ``python -m stack.collectives.worker PLAN.json RANK``.

Each rank is its own process (the runner starts them), joined through
torch.distributed's TCP store on 127.0.0.1. For every collective and size it checks
the result once (each rank's data is chosen so the right answer is known), warms up,
then times ``repeats`` blocks of ``iters`` back-to-back calls between device
synchronisations: one sample is a block's time divided by its calls, the slowest rank's
(the collective is done when the last rank is), as nccl-tests averages over its
iterations. Rank 0 writes every sample to the plan's output file.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from stack.collectives.formulas import DTYPE_BYTES


def _tensors(torch: Any, op: str, size: int, dtype: Any, ranks: int, rank: int, device: Any):
    """(input, output, expected output or None) for one call of ``op`` on ``size`` bytes."""
    count = size // DTYPE_BYTES[str(dtype).removeprefix("torch.")]
    share = count // ranks
    full = lambda v: torch.full((count,), float(v), dtype=dtype, device=device)  # noqa: E731
    if op == "all_reduce":
        return full(rank + 1), None, full(ranks * (ranks + 1) / 2)
    if op == "all_gather":
        inp = torch.full((share,), float(rank + 1), dtype=dtype, device=device)
        expected = torch.arange(1, ranks + 1, dtype=dtype, device=device).repeat_interleave(share)
        return inp, torch.empty(share * ranks, dtype=dtype, device=device), expected
    if op == "reduce_scatter":
        inp = torch.arange(1, ranks + 1, dtype=dtype, device=device).repeat_interleave(share)
        expected = torch.full((share,), float(ranks * (rank + 1)), dtype=dtype, device=device)
        return inp, torch.empty(share, dtype=dtype, device=device), expected
    if op == "all_to_all":
        # rank r sends block j the value r * ranks + j; it receives from rank j its block r
        inp = (torch.arange(ranks, dtype=dtype, device=device) + rank * ranks).repeat_interleave(
            share
        )
        expected = (
            torch.arange(ranks, dtype=dtype, device=device) * ranks + rank
        ).repeat_interleave(share)
        return inp, torch.empty(share * ranks, dtype=dtype, device=device), expected
    if op == "broadcast":
        return full(42 if rank == 0 else -1), None, full(42)
    if op == "send_recv":
        # a ring, as nccl-tests' sendrecv: to rank+1, from rank-1
        return (
            full(rank + 1),
            torch.empty(count, dtype=dtype, device=device),
            full((rank - 1) % ranks + 1),
        )
    raise ValueError(op)


def _call(dist: Any, op: str, inp: Any, out: Any, rank: int, ranks: int) -> None:
    if op == "all_reduce":
        dist.all_reduce(inp)
    elif op == "all_gather":
        dist.all_gather_into_tensor(out, inp)
    elif op == "reduce_scatter":
        dist.reduce_scatter_tensor(out, inp)
    elif op == "all_to_all":
        dist.all_to_all_single(out, inp)
    elif op == "broadcast":
        dist.broadcast(inp, src=0)
    elif op == "send_recv":
        ops = [
            dist.P2POp(dist.isend, inp, (rank + 1) % ranks),
            dist.P2POp(dist.irecv, out, (rank - 1) % ranks),
        ]
        for request in dist.batch_isend_irecv(ops):
            request.wait()


def main(plan_path: str, rank_text: str) -> int:
    import torch
    import torch.distributed as dist

    plan = json.loads(Path(plan_path).read_text())
    rank, ranks = int(rank_text), int(plan["ranks"])
    backend = plan["backend"]
    if backend == "nccl":
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
        sync = torch.cuda.synchronize
    else:
        device, sync = torch.device("cpu"), (lambda: None)
    dist.init_process_group(
        backend,
        init_method=f"tcp://127.0.0.1:{plan['port']}",
        rank=rank,
        world_size=ranks,
        timeout=timedelta(seconds=plan["timeout_s"]),
        **({"device_id": device} if backend == "nccl" else {}),
    )
    dtype = getattr(torch, plan["dtype"])
    rows: list[dict[str, Any]] = []
    for op in plan["ops"]:
        for size in plan["sizes"]:
            row: dict[str, Any] = {"op": op, "size": size}
            try:
                inp, out, expected = _tensors(torch, op, size, dtype, ranks, rank, device)
                original = inp.clone()
                _call(dist, op, inp, out, rank, ranks)
                sync()
                got = out if out is not None else inp
                wrong = int((got != expected).sum().item())
                flag = torch.tensor([wrong], dtype=torch.int64, device=device)
                dist.all_reduce(flag)
                row["wrong"] = int(flag.item())
                for _ in range(plan["warmup"]):
                    inp.copy_(original)
                    _call(dist, op, inp, out, rank, ranks)
                samples = []
                for _ in range(plan["repeats"]):
                    dist.barrier()
                    sync()
                    started = time.perf_counter()
                    for _ in range(plan["iters"]):
                        _call(dist, op, inp, out, rank, ranks)
                    sync()
                    samples.append((time.perf_counter() - started) / plan["iters"])
                slowest = torch.tensor(samples, dtype=torch.float64, device=device)
                dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
                row["seconds"] = slowest.cpu().tolist()
            except Exception as exc:  # one op the backend lacks must not sink the rest
                row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
                dist.barrier()
            rows.append(row)
            if rank == 0:
                print(json.dumps({"op": op, "size": size, "done": True}), flush=True)
    if rank == 0:
        Path(plan["out"]).write_text(json.dumps({"rows": rows, "torch": torch.__version__}))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
