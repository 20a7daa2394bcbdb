"""Profiling a workload with whichever profilers the machine has, into one normalised profile.

The profile kind (stack/kinds/profile.py) is the entry point; this package is its
library. schema.py holds its parameters; driver.py runs a workload (a built-in GEMM or
transformer block, or a script of the project's) in a child process, under the PyTorch
profiler or wrapped by Nsight Compute / rocprofv3; torch_profiler.py, ncu.py and
rocprof.py read what each profiler wrote; normalise.py turns any of them into the same
top-kernels table and the measurements the results layer compares; runner.py puts
them together. Light at import time: torch is imported by the driver only.
"""
