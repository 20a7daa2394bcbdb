"""GEMM tuning: the shapes a workload runs (shapes.py), TunableOp and hipBLASLt tuned files
(files.py), which tuned file fits which stack (registry.py) and the tune-gemm kind's runner
(runner.py, driver.py). See docs/profiling.md."""
