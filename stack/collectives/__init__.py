"""collective-bench: collectives over a size sweep through torch.distributed, and the
rccl-tests / nccl-tests binaries where the image has them (docs/collectives.md)."""
