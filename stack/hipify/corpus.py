"""A synthetic CUDA source tree, generated deterministically from a seed, for benchmarks and tests.

Built from the tables of the installed hipify-perl (so every generated tree
exercises the identifiers the tool really knows) and from code shapes seen in
real CUDA projects: kernels with device-function calls, runtime / driver /
cuBLAS / cuFFT / cuRAND calls, OpenGL interop, comments and strings that
mention ``texture`` and API names, identifiers that contain table names,
several table identifiers on one line (the case where hipify-perl's ``pos()``
behaviour decides what it reports), CRLF files, non-ASCII bytes, and the
multi-line shapes that move line numbers (``using\\nnamespace cub``,
``cudaMemcpyToSymbol\\n(...)``).

Never committed: the benchmark and the tests write it under a temporary folder.
"""

from __future__ import annotations

import random
from pathlib import Path

from stack.hipify.tables import Tables

EXTENSIONS = (".cu", ".cu", ".cu", ".cuh", ".cpp", ".h", ".hpp", ".cc", ".c", ".inl", ".cxx")


class _Pools:
    def __init__(self, tables: Tables) -> None:
        by_kind: dict[str, list[str]] = {}
        for check in tables.checks:
            by_kind.setdefault(check.kind, []).append(check.name)
        self.unsupported = sorted(set(by_kind.get("unsupported", [])))
        self.deprecated = sorted(set(by_kind.get("deprecated", [])))
        self.removed = sorted(set(by_kind.get("removed", [])))
        self.experimental = sorted(set(by_kind.get("experimental", [])))
        self.device_unsupported = sorted(set(by_kind.get("unsupported_device_function", [])))
        plain = [s for s in tables.substs if s.plain]
        self.runtime = [s.cuda for s in plain if s.cuda.startswith("cuda")]
        self.driver = [s.cuda for s in plain if s.cuda.startswith("cu") and s.cuda[2:3].isupper()]
        self.libs = [
            s.cuda
            for s in plain
            if s.cuda.lower().startswith(
                ("cublas", "cufft", "curand", "cusparse", "cusolver", "cudnn", "nvrtc")
            )
        ]
        self.constants = [s.cuda for s in plain if s.type in ("numeric_literal", "define")]
        self.types = [s.cuda for s in plain if s.type in ("type", "device_type")]
        self.includes = [s.cuda for s in tables.substs if s.type.startswith("include")]
        self.device_supported = sorted(set(tables.supported_device_functions))
        self.whitelist = list(tables.whitelist)


_COMMENTS = (
    "// bind the texture before the launch",
    "// TODO: replace the texture fetch with a plain load",
    "/* texture memory is cached; see the programming guide */",
    "// note: cudaThreadSynchronize was replaced long ago",
    "//   cudaMemcpy from host to device, then launch",
    "// the surface and texture references are set up in init()",
    "/* legacy: texture<float, 2> tex2D reference */",
    "// r\u00e9sum\u00e9 of the optimisation (UTF-8 in a comment)",
)

_STRINGS = (
    'printf("texture bound at %p\\n", ptr);',
    'fprintf(stderr, "cudaMalloc failed: %s\\n", msg);',
    'const char* kName = "cudaBindTexture";',
    'std::string label = "uses texture memory";',
    'puts("can\'t find the device");',
)

# Plain C++ between the CUDA calls: most lines of real projects are like these.
_FILLER = (
    "    for (int j = 0; j < n; ++j) {{",
    "        acc += a[j] * b[j] - offset;",
    "    }}",
    "    if (status != 0) {{ return status; }}",
    "    std::vector<float> host_{k}(n, 0.0f);",
    "    const size_t bytes_{k} = n * sizeof(float);",
    "    // accumulate the partial sums of block {k}",
    "",
    "    result.push_back(std::make_pair(i, value));",
    "    auto it = table.find(key);",
    "    double mean = total / static_cast<double>(count);",
    '    std::printf("step %d took %.3f ms\\n", step, ms);',
)

_LONGER = (
    "int my_texture_count = 0;",
    "float textureScale = 1.0f;",
    "bool use_texture_path = false;",
    "size_t {name}_calls = 0;",
    "static int last_{name}Result;",
)


def _pick(rng: random.Random, pool: list[str], default: str = "x") -> str:
    return rng.choice(pool) if pool else default


def _kernel(rng: random.Random, pools: _Pools, n: int) -> list[str]:
    name = f"kernel_{n}"
    lines = [
        f"__global__ void {name}(float* out, const float* in, int n) {{",
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;",
        "    __shared__ float tile[256];",
        "    if (i >= n) return;",
    ]
    for _ in range(rng.randint(2, 12)):
        r = rng.random()
        if r < 0.35:
            fn = _pick(rng, pools.device_supported, "sqrtf")
            lines.append(f"    out[i] = {fn}(in[i]) + 1.0f;")
        elif r < 0.5:
            fn = _pick(rng, pools.device_unsupported, "umin")
            lines.append(f"    int v{rng.randint(0, 99)} = {fn}(i, n);")
        elif r < 0.55:
            fn = _pick(rng, pools.device_supported, "sqrtf")
            lines.append(f"    out[i] = std::{fn}(in[i]);")
        elif r < 0.6:
            fn = _pick(rng, pools.device_unsupported, "umin")
            lines.append(f"    out[i] = ::{fn}(i, n) + {fn}(n, i);")
        elif r < 0.7:
            lines.append("    __syncthreads();")
        elif r < 0.8:
            lines.append("    tile[threadIdx.x] = in[i] * 2.0f;  // texture-free path")
        else:
            lines.append("    out[i] += tile[(threadIdx.x + 1) % 256];")
    lines.append("}")
    lines.append("")
    return lines


def _host_line(rng: random.Random, pools: _Pools) -> str:
    r = rng.random()
    if r < 0.25:
        return f"    CHECK({_pick(rng, pools.runtime)}(&d_ptr, bytes));"
    if r < 0.35:
        return f"    status = {_pick(rng, pools.driver)}(&ctx, 0, dev);"
    if r < 0.5:
        return f"    stat = {_pick(rng, pools.libs)}(handle, m, n, k, &alpha, A, lda);"
    if r < 0.58:
        return f"    int flag = {_pick(rng, pools.constants)};"
    if r < 0.64:
        return f"    {_pick(rng, pools.types)} value_{rng.randint(0, 999)};"
    if r < 0.70:
        return f"    res = {_pick(rng, pools.unsupported)}(handle, desc);"
    if r < 0.75:
        return f"    {_pick(rng, pools.deprecated)}();"
    if r < 0.78:
        return f"    {_pick(rng, pools.removed)}(0, tex, d_ptr, bytes);"
    if r < 0.80:
        return f"    {_pick(rng, pools.experimental)}(graph, node);"
    if r < 0.84:
        # several table identifiers on one line: pos() decides what hipify-perl reports
        names = [
            _pick(rng, rng.choice([pools.unsupported, pools.deprecated, pools.removed]))
            for _ in range(rng.randint(2, 4))
        ]
        return "    " + " ".join(f"{n}(x);" for n in names)
    if r < 0.87:
        a = _pick(rng, pools.unsupported)
        return f"    {a}Ex({a}(h), 1);  // {a}"
    if r < 0.89:
        return f"    int {_pick(rng, pools.whitelist, 'cudaDevice')} = 0; cudaSomethingNew(x);"
    if r < 0.91:
        return f"    cudaFoo{rng.randint(0, 99)}(ptr);"
    if r < 0.93:
        return "    kernel_0<<<grid, block, 0, stream>>>(d_out, d_in, n);"
    if r < 0.95:
        return "    cub::DeviceReduce::Sum(d_temp, temp_bytes, d_in, d_out, n);"
    if r < 0.97:
        return "    thrust::device_vector<float> v(n); GLuint vbo; GLenum mode = GL_TRIANGLES;"
    return "    " + rng.choice(_STRINGS)


def generate_file(rng: random.Random, pools: _Pools, target_lines: int) -> list[str]:
    """One file's lines (without newlines)."""
    lines: list[str] = ["// generated by rocpath's synthetic corpus (not real code)"]
    for _ in range(rng.randint(1, 4)):
        inc = _pick(rng, pools.includes, "cuda_runtime.h")
        lines.append(f"#include {rng.choice(['<%s>', chr(34) + '%s' + chr(34)]) % inc}")
    lines.append("#include <GL/gl.h>")
    if rng.random() < 0.2:
        lines.append("using namespace cub;")
    if rng.random() < 0.05:
        lines += ["using", "namespace cub;"]
    n_kernel = 0
    while len(lines) < target_lines:
        r = rng.random()
        if r < 0.15:
            lines += _kernel(rng, pools, n_kernel)
            n_kernel += 1
        elif r < 0.20:
            lines.append(rng.choice(_COMMENTS))
        elif r < 0.22:
            lines += ["/*", f" * uses {_pick(rng, pools.removed)} and texture fetches", " */"]
        elif r < 0.25:
            lines.append(rng.choice(_LONGER).format(name=_pick(rng, pools.deprecated)))
        elif r < 0.26:
            lines += ["    cudaMemcpyToSymbol", "        (d_sym, h_src, bytes);"]
        elif r < 0.45:
            body = [_host_line(rng, pools) for _ in range(rng.randint(3, 15))]
            lines += [f"void host_step_{len(lines)}() {{", *body, "}", ""]
        else:
            k = len(lines)
            lines += [rng.choice(_FILLER).format(k=k) for _ in range(rng.randint(8, 40))]
    return lines


def generate_corpus(
    root: str | Path,
    tables: Tables,
    *,
    files: int = 320,
    lines: int = 110_000,
    seed: int = 4,
) -> list[str]:
    """Write a tree of about ``files`` files and ``lines`` lines under ``root``; return the paths.

    File sizes follow a long tail (a few headers of thousands of lines, many
    small files), like real projects.
    """
    rng = random.Random(seed)  # noqa: S311 (a reproducible corpus, not a secret)
    pools = _Pools(tables)
    root = Path(root)
    weights = [rng.paretovariate(1.3) for _ in range(files)]
    scale = lines / sum(weights)
    paths = []
    for i, w in enumerate(weights):
        target = max(8, int(w * scale))
        ext = rng.choice(EXTENSIONS)
        rel = f"mod{i % 17:02d}/sub{i % 5}/file_{i:04d}{ext}"
        body = generate_file(rng, pools, target)
        newline = "\r\n" if rng.random() < 0.05 else "\n"
        text = newline.join(body) + (newline if rng.random() < 0.95 else "")
        data = text.encode("utf-8")
        if rng.random() < 0.03:
            data += b"// latin-1 byte \xe9 in a comment\n"
        target_path = root / rel
        target_path.parent.mkdir(parents=True, exist_ok=True)
        target_path.write_bytes(data)
        paths.append(rel)
    return paths
