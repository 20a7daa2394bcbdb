"""Math-library benchmarks (GEMM, memory bandwidth, FFT, dense solvers) that can be trusted.

Teams choose hardware from these numbers, so every figure carries how it was
measured: the raw samples, the coefficient of variation, a correctness check
against a higher-precision reference, the clocks, power and temperature seen
while it ran, and the share of the vendor's peak it reached.

The package is plain Python: importing it (or any module in it) loads only the
standard library, because the runner module is preloaded by a forking zygote.
numpy and torch are imported inside the functions that need them.
"""
