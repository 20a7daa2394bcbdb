"""Parameter schemas of the hipify-scan, hipify-convert and compile-check kinds, and their tools.

Kept apart from the runners so that the kind registry (imported by the web
side to list and validate) never imports the runners' code.
"""

from __future__ import annotations

import re
from typing import Any

from stack.hipify.hazards import RULE_NAMES as HAZARD_RULES

# Where the tools of these kinds come from, for ToolMissing messages (Kind.install_hints).
HIPIFY_PERL_HINT = "Debian trixie package 'hipify-perl'; /opt/rocm/bin/hipify-perl in ROCm images"
HIPCC_HINT = "Debian trixie package 'hipcc'; /opt/rocm/bin/hipcc in the ROCm images"

_GLOBS = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 500},
    "maxItems": 200,
    "default": [],
}

# A path inside the tree: not absolute, no ".." part, and no newline (``.`` stops
# at one, which would let a ".." after it past the look-ahead).
_RELATIVE_PATH = r"^(?!/)(?!.*(^|/)\.\.(/|$)).*$"

_PATH = {
    "type": "string",
    "maxLength": 500,
    "pattern": _RELATIVE_PATH,
    "default": "",
    "description": "A folder inside the source tree to work on (relative; empty: the whole tree).",
}

# What reaches hipcc must never reach a shell. Debian's hipcc (hipcc.pl, bookworm and
# trixie) joins its arguments into one string for system(): it backslash-escapes each one
# but passes on unescaped, and runs ``ar xv`` in backticks on, any argument ending in .a or
# .lo; trixie's also takes ``--rocm-path=`` / ``--hip-path=`` anywhere in any argument for
# where its clang is. So every value we pass is held to characters no shell or hipcc reads
# specially: letters, digits and _ . + - (and / between folders), never ending in .a or .lo.
# ``(?!.*\n)``: jsonschema matches with re.search, whose ``$`` also matches before a final
# newline.
_NO_NEWLINE = r"(?!.*\n)"
# Text hipcc.pl acts on wherever it sits in an argument: trixie's takes "--rocm-path=" and
# "--hip-path=" for where its clang is (a folder of the upload would do) and both take
# "--amdhsa-code-object-version=" (its value goes into the command unescaped), "--genco" and
# "-fopenmp-targets=" (they change the compile). Refused inside any flag at submission
# (`-Wx--rocm-path=…` passed the flag pattern and failed only in the runner).
HIPCC_OPTION_TEXT = (
    "--rocm-path=",
    "--hip-path=",
    "--amdhsa-code-object-version=",
    "--genco",
    "-fopenmp-targets=",
)
_NO_HIPCC_OPTION = "(?!.*(?:" + "|".join(re.escape(t) for t in HIPCC_OPTION_TEXT) + "))"
_NOT_A_LIBRARY = r"(?!.*\.(?:[aA]|[lL][oO])/*$)"
_FOLDER_CHARS = r"[A-Za-z0-9_.+/-]"
# A folder of the tree given to hipcc (include_dirs, compile-check's path): relative, no
# "..", safe characters only.
TREE_FOLDER_PATTERN = (
    rf"^{_NO_NEWLINE}{_NOT_A_LIBRARY}(?!/)(?!(?:.*/)?\.\.(?:/|$)){_FOLDER_CHARS}*$"
)
TREE_FOLDER_MESSAGE = (
    "must be a folder of the tree (relative, no '..') named with letters, digits and "
    "_ . + - only, not ending in .a or .lo (hipcc would hand it to a shell)"
)

# hipcc flags a job may add: optimisation, macros, the language standard, warnings, debug
# info and include folders of the tree (relative, no ".."). Nothing that names a host file
# (-include, -MF, -B, -fplugin=, --sysroot), loads code (-Xclang -load) or passes options on
# to another tool (-Wp,... -Wa,... -Xarch...): the offload architecture is ours (targets).
# A -D value is one token of [A-Za-z0-9_.:+-] (no space, quote, $, =, ...), so it can carry
# neither a shell command nor a second flag.
COMPILE_FLAG_PATTERN = (
    rf"^{_NO_NEWLINE}{_NOT_A_LIBRARY}{_NO_HIPCC_OPTION}"
    r"(?:-O(?:[0-3sgz]|fast)?"
    r"|-[DU][A-Za-z_][A-Za-z0-9_]*(?:=[A-Za-z0-9_.:+-]*)?"
    r"|-std=(?:c|c\+\+|gnu|gnu\+\+|hip)[0-9a-z]{1,4}"
    r"|-W(?:no-)?[a-z0-9][a-z0-9+_=-]*|-w|-pedantic(?:-errors)?"
    r"|-g(?:[0-3]|line-tables-only)?"
    rf"|-I(?![/=-])(?!\.\.(?:/|$))(?!.*/\.\.(?:/|$)){_FOLDER_CHARS}+)$"
)
COMPILE_FLAG_MESSAGE = (
    "not allowed: extra_flags are -O*, -DNAME[=VALUE] (VALUE of letters, digits and "
    "_ . : + -), -UNAME, -std=..., -W..., -w, -pedantic, -g, -I<folder of the tree>; "
    "none ending in .a or .lo"
)

_JOBS = {
    "type": "integer",
    "minimum": 0,
    "maximum": 256,
    "default": 0,
    "description": "Worker processes (0: every CPU the job may use).",
}

HIPIFY_SCAN_PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "include": {
            **_GLOBS,
            "description": (
                "Globs of files to examine (none: every .cu .cuh .cpp .cc .cxx .c .h .hpp "
                ".hxx .hh .inl). "
                "'*' stays in a folder, '**' spans folders; a glob without '/' matches names."
            ),
        },
        "exclude": {**_GLOBS, "description": "Globs of files or folders to leave out."},
        "path": _PATH,
        "engine": {
            "type": "string",
            "enum": ["fast", "hipify-perl"],
            "default": "fast",
            "description": (
                "fast: rocpath's one-pass engine driven by the installed hipify-perl's tables "
                "(same findings, far faster); hipify-perl: run the real tool's warning pass."
            ),
        },
        "jobs": _JOBS,
        "vendored": {
            **_GLOBS,
            "description": (
                "Globs of third-party code besides what the scan detects (third_party/, "
                "Common/GL/, glew.h, stb_*.h, ...): reported apart, out of the estimate."
            ),
        },
        "not_vendored": {
            **_GLOBS,
            "description": "Globs of the project's own code that the detection took for vendored.",
        },
        "hazards_off": {
            "type": "array",
            "items": {"type": "string", "enum": list(HAZARD_RULES)},
            "maxItems": len(HAZARD_RULES),
            "uniqueItems": True,
            "default": [],
            "description": "Hazard rules the project does not count (docs/hipify.md lists them).",
        },
    },
    "additionalProperties": False,
}

HIPIFY_CONVERT_PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "include": {**_GLOBS, "description": "Globs of files to translate (none: all CUDA files)."},
        "exclude": {**_GLOBS, "description": "Globs of files or folders not to translate."},
        "path": _PATH,
        "jobs": _JOBS,
    },
    "additionalProperties": False,
}

COMPILE_CHECK_PARAMS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "targets": {
            "type": "array",
            "items": {
                "type": "string",
                "pattern": rf"^{_NO_NEWLINE}gfx[0-9a-f]{{3,5}}(:[a-z]+[+-])*$",
            },
            "minItems": 1,
            "maxItems": 16,
            "uniqueItems": True,
            "default": ["gfx942"],
            "description": (
                "AMD GPU architectures: gfx942 (MI300X/MI325X), gfx90a (MI250X/MI210), "
                "gfx1100 (Radeon PRO W7900), gfx950 (MI355X), ..."
            ),
        },
        "extra_flags": {
            "type": "array",
            "items": {
                "type": "string",
                "maxLength": 500,
                "pattern": COMPILE_FLAG_PATTERN,
                "x-pattern-message": COMPILE_FLAG_MESSAGE,
            },
            "maxItems": 100,
            "default": [],
            "description": (
                "More hipcc flags, from: -O0..-O3 -Os -Og -Oz -Ofast, -DNAME[=VALUE], -UNAME, "
                "-std=c++17 (and other standards), -Wwarning / -Wno-warning / -Werror[=...], "
                "-w, -pedantic, -g, -I<folder of the tree> (relative)."
            ),
        },
        "include_dirs": {
            "type": "array",
            "items": {
                "type": "string",
                "maxLength": 500,
                "pattern": TREE_FOLDER_PATTERN,
                "x-pattern-message": TREE_FOLDER_MESSAGE,
            },
            "maxItems": 100,
            "default": [],
            "description": "Folders of the tree to pass as -I (the tree's root always is).",
        },
        "hipify": {
            "type": "boolean",
            "default": True,
            "description": (
                "Translate WORK/src with hipify-perl first (false: WORK/src is already HIP). "
                "Ignored when WORK/hipified.tar.gz (a hipify-convert artifact) is given."
            ),
        },
        "include": {**_GLOBS, "description": "Globs of files to compile (none: all sources)."},
        "exclude": {**_GLOBS, "description": "Globs of files not to compile."},
        "path": {
            **_PATH,
            "pattern": TREE_FOLDER_PATTERN,
            "x-pattern-message": TREE_FOLDER_MESSAGE,
        },
        "jobs": _JOBS,
        "file_timeout_s": {
            "type": "number",
            "exclusiveMinimum": 0,
            "maximum": 3600,
            "default": 300,
            "description": "Limit for one hipcc call.",
        },
    },
    "additionalProperties": False,
}
