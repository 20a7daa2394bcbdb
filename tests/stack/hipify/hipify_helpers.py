"""Helpers for the HIPIFY tests: CUDA sources the tests write, and which tools they need.

A module with a name of its own (test folders are not packages here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stack.tools import which

FIXTURES = Path(__file__).resolve().parent / "fixtures"

needs_hipify_perl = pytest.mark.skipif(
    which("hipify-perl") is None,
    reason="hipify-perl is not installed (scripts/install-rocm-tools.sh installs it)",
)
needs_hipcc = pytest.mark.skipif(
    which("hipcc") is None,
    reason=(
        "hipcc is not installed (scripts/install-rocm-tools.sh --hipcc; the debian job "
        "image has it): the end-to-end compile-check tests need it"
    ),
)

# Kernels, runtime API, cuBLAS calls, an API HIP lacks, a deprecated one, a removed
# texture reference, OpenGL interop; "texture" in a comment, a string and a longer word.
SAMPLE_CU = """\
#include <cuda_runtime.h>
#include "cublas_v2.h"
#include <cuda_gl_interop.h>

// the texture reference below was removed in CUDA 12
texture<float, 2, cudaReadModeElementType> texRef;

__global__ void scale(float* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = sqrtf(x[i]) * s + umin(i, n);
}

int run(float* h_x, int n, cudaGraphExec_t exec, cudaGraphNode_t node) {
  float* d_x;
  cudaMalloc(&d_x, n * sizeof(float));
  cudaMemcpy(d_x, h_x, n * sizeof(float), cudaMemcpyHostToDevice);
  scale<<<(n + 255) / 256, 256>>>(d_x, 2.0f, n);
  cudaThreadSynchronize();
  cublasHandle_t handle;
  cublasCreate(&handle);
  float alpha = 1.0f, beta = 0.0f;
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, d_x, n, d_x, n, &beta, d_x, n);
  cudaGraphExecNodeSetParams(exec, node, nullptr);
  int my_texture_count = 0;
  printf("texture bound: %d\\n", my_texture_count);
  cudaFree(d_x);
  return cudaSomethingNew(n);
}
"""

# An OpenGL header: its GLuint / GLenum are "converted" to themselves.
SAMPLE_GL_H = """\
#pragma once
#include <GL/gl.h>
#include <cuda_gl_interop.h>

struct Buffers {
  GLuint vbo;
  GLenum mode;
  cudaGraphicsResource_t resource;
};

inline void register_buffer(Buffers& b) {
  cudaGraphicsGLRegisterBuffer(&b.resource, b.vbo, cudaGraphicsMapFlagsNone);
}
"""

# Lines where hipify-perl's pos() carry-over decides what it reports.
SAMPLE_POS = """\
nvrtcGetNVVMSize(prog, &size);
x = nvrtcGetNVVM(prog, buf); nvrtcGetNVVMSize(prog, &size);
cudaThreadSynchronize(); // texture
texture<float, 2> tex; cudaBindTexture(0, tex, p, n);
cusparseScsrmv(h, op, m, n, nnz, &a, d, v, r, c, x, &b, y);
int v = ::umin(a, b) + std::umin(a, b) + umin(c, d);
"""
