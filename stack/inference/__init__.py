"""inference-bench: how fast an LLM serves (TTFT, TPOT, throughput, KV memory, energy)."""
