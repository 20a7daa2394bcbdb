"""The tables of the installed hipify-perl, extracted at run time, cached by the script's sha256.

Why extract rather than ship a copy: the tables change with every HIPIFY release
(thousands of ``subst(...)`` calls and identifier lists), and the promise of the
fast engine is "the same findings as the hipify-perl you have". So the script
itself is read, and every string in it is evaluated by **perl** (hipify-perl's
own interpreter is always there): Perl's double-quoted strings hold surprises a
hand-written reader would get wrong (the include look-behind of ``subst`` holds
``\\$%``, which interpolates Perl's ``$%`` variable as ``0``, so the character
class holds a NUL and neither ``$`` nor ``%``).

What is extracted, in the order hipify-perl applies it:

- ``substs``: the ``subst("cudaX", "hipX", "type")`` calls of
  ``simpleSubstitutions``, each with the exact regex Perl builds (``qr//`` of
  the pattern as interpolated, translated to Python's ``re``).
- ``checks``: the per-line warning sequence: the ``warn...`` subs in the order
  the main loop calls them (default mode: no ``-roc``, no ``-experimental``),
  each expanded into its identifiers. The three ``%..._funcs`` hashes are
  walked with ``each``, so their order is Perl's hash order; perl is asked for
  it with ``PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0``, the same setting rocpath
  runs the real tool with (left random, hipify-perl's warnings change from run
  to run, see docs/hipify.md).
- the supported device functions it counts, the ``cuda[A-Z]`` whitelist, and
  the ``s///`` rewrites of ``transformCubNamespace`` and
  ``transformHostFunctions`` (they move text and, rarely, line counts).

Anything in a layout this reader does not know raises TablesError, so a new
HIPIFY release fails loudly instead of scanning wrongly.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from stack.hipify.schemas import HIPIFY_PERL_HINT
from stack.tools import ToolMissing, which

# Bump when the extraction or the Tables shape changes: it is part of every cache key.
TABLES_FORMAT = 3

# What rocpath sets in every perl it runs (the real tool and the extractor): a fixed
# hash seed and no key-order perturbation, so that %deprecated_funcs & co. are
# walked in one reproducible order.
PERL_DETERMINISTIC_ENV = {"PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}
# Tables.hash_order of what this reader extracts; part of Tables.key, so it must not
# change wording while the setting stays: "perl PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0".
HASH_ORDER = " ".join(["perl", *(f"{k}={v}" for k, v in PERL_DETERMINISTIC_ENV.items())])

# The kinds of warning, from the sub that prints them.
KIND_BY_SUB = {
    "warnExperimentalFunctions": "experimental",
    "warnRemovedFunctions": "removed",
    "warnDeprecatedFunctions": "deprecated",
    "warnUnsupportedFunctions": "unsupported",
    "warnHipOnlyUnsupportedFunctions": "unsupported",
    "warnRocOnlyUnsupportedFunctions": "unsupported",
    "warnUnsupportedDeviceFunctions": "unsupported_device_function",
}
# The kind of the "cudaX left after translation" warning, which no warn... sub prints.
UNCONVERTED = "unconverted"

_PLAIN_CHECK_MATCH = "m/($func)/g"
_DEVICE_NS_MATCH = r"m/(\w+)::($func)\s*\(\s*.*\s*\)/g"
_DEVICE_MATCH = r"m/\b($func)\b\s*\(\s*.*\s*\)/g"
_UNCONVERTED_MATCH = r"(/(\bcuda[A-Z]\w+)/)"
# The cudaX token of the unconverted pass: _UNCONVERTED_MATCH's regex, for Python.
CUDA_TOKEN = re.compile(r"(\bcuda[A-Z]\w+)", re.A)
_SUBST_CALL = re.compile(r'^\s*subst\("', re.M)
_S_OP = re.compile(r"s/((?:[^/\\\n]|\\.)*)/((?:[^/\\\n]|\\.)*)/g")


class TablesError(RuntimeError):
    """The hipify-perl script is not in a layout this reader understands."""


class Subst(NamedTuple):
    """One ``subst(cuda, hip, type)``: a global regex replacement over the whole file."""

    cuda: str
    hip: str
    type: str
    pattern: str  # Python regex source, exactly what Perl matched
    plain: bool  # pattern is \bNAME\b with NAME all word characters (no look-behind)


class Check(NamedTuple):
    """One identifier a ``warn...`` sub tries on every line, in the order it is tried."""

    name: str
    kind: str
    sub: str
    since: str | None  # "CUDA 12.0", "CUDNN 9.0.0", "HIP 6.0.0" (experimental), or None
    device: bool  # a device function: a call-shaped regex instead of a plain substring


class Transform(NamedTuple):
    """One ``s/PATTERN/REPLACEMENT/g`` of transformCubNamespace / transformHostFunctions."""

    sub: str
    pattern: str  # Python regex source
    replacement: tuple[str | int, ...]  # literal text and group numbers, in order
    needle: str  # a literal the pattern needs (skip the regex when it is absent)


@dataclass
class Tables:
    """Everything the fast engine needs to reproduce one hipify-perl script."""

    script: str
    sha256: str
    hip_version: str
    perl: str
    perl_version: str
    hash_order: str  # HASH_ORDER: the perl setting that ordered the hash-backed checks
    wording: str  # "hip-6.0" (Debian 6.0.x) or "hip-6.3" (newer) warning lines
    substs: list[Subst]
    checks: list[Check]
    supported_device_functions: list[str]
    whitelist: list[str]
    cub_transforms: list[Transform]
    host_transforms: list[Transform]

    @property
    def key(self) -> str:
        """Identifies these tables in cache keys: script, perl build and reader version."""
        material = f"{TABLES_FORMAT}:{self.sha256}:{self.perl_version}:{self.hash_order}"
        return hashlib.sha256(material.encode()).hexdigest()[:24]

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form (for the on-disk cache)."""
        return {
            "format": TABLES_FORMAT,
            "script": self.script,
            "sha256": self.sha256,
            "hip_version": self.hip_version,
            "perl": self.perl,
            "perl_version": self.perl_version,
            "hash_order": self.hash_order,
            "wording": self.wording,
            "substs": [[s.cuda, s.hip, s.type, s.pattern, s.plain] for s in self.substs],
            "checks": [[c.name, c.kind, c.sub, c.since, c.device] for c in self.checks],
            "supported_device_functions": self.supported_device_functions,
            "whitelist": self.whitelist,
            "cub_transforms": [_transform_json(t) for t in self.cub_transforms],
            "host_transforms": [_transform_json(t) for t in self.host_transforms],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Tables:
        """Inverse of to_json; TablesError for another format version."""
        if data.get("format") != TABLES_FORMAT:
            raise TablesError(f"cached tables have format {data.get('format')}")
        return cls(
            script=data["script"],
            sha256=data["sha256"],
            hip_version=data["hip_version"],
            perl=data["perl"],
            perl_version=data["perl_version"],
            hash_order=data["hash_order"],
            wording=data["wording"],
            substs=list(map(Subst._make, data["substs"])),
            checks=list(map(Check._make, data["checks"])),
            supported_device_functions=list(data["supported_device_functions"]),
            whitelist=list(data["whitelist"]),
            cub_transforms=[_transform_from(t) for t in data["cub_transforms"]],
            host_transforms=[_transform_from(t) for t in data["host_transforms"]],
        )

    def describe(self) -> dict[str, Any]:
        """What a result's summary says about the tables it used (a fresh copy)."""
        return {**self._description, "checks_by_kind": dict(self._description["checks_by_kind"])}

    @cached_property
    def _description(self) -> dict[str, Any]:
        # a scan job states it three times (summary, findings.json, report): count once
        return {
            "script": self.script,
            "sha256": self.sha256,
            "hip_version": self.hip_version,
            "perl_version": self.perl_version,
            "wording": self.wording,
            "hash_order": self.hash_order,
            "substitutions": len(self.substs),
            "checks": len(self.checks),
            "checks_by_kind": dict(Counter(check.kind for check in self.checks)),
        }


def _transform_json(t: Transform) -> list[Any]:
    return [t.sub, t.pattern, list(t.replacement), t.needle]


def _transform_from(row: list[Any]) -> Transform:
    return Transform(row[0], row[1], tuple(row[2]), row[3])


# --- locating the tool -------------------------------------------------------------


def find_hipify_perl(path: str | None = None) -> str:
    """The hipify-perl script to use: ``path``, else PATH, else $ROCM_PATH/bin.

    Raises ToolMissing naming where to get it. Symlinks are resolved so that the
    sha256 is that of the script itself.
    """
    found = which(path or "hipify-perl")
    if found is None:
        raise ToolMissing("hipify-perl", HIPIFY_PERL_HINT)
    return os.path.realpath(found)


def file_sha256(path: str) -> str:
    """sha256 of a file, hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _perl_for(script: str) -> str:
    """The perl the script's shebang names (what running the tool would use)."""
    with open(script, "rb") as f:
        first = f.readline().decode("latin-1").strip()
    if first.startswith("#!"):
        parts = first[2:].split()
        if parts:
            interpreter = (
                parts[1] if os.path.basename(parts[0]) == "env" and len(parts) > 1 else parts[0]
            )
            found = which(interpreter, ())
            if found:
                return found
    found = which("perl", ())
    if found is None:
        raise ToolMissing("perl", "Debian package 'perl' (hipify-perl depends on it)")
    return found


# --- loading with caches ---------------------------------------------------------------

_MEMO: dict[tuple[str, str], Tables] = {}


def load_tables(
    script: str | None = None, cache_dir: str | os.PathLike[str] | None = None
) -> Tables:
    """The tables of the installed (or given) hipify-perl, from cache when possible.

    Cached in memory per process and, with ``cache_dir``, on disk (marshal of
    to_json(), keyed by the script's sha256, the perl build (path, size, mtime)
    and the Python version), so a job pays for the perl extraction (about
    0.2 s) once per tool version.
    """
    path = find_hipify_perl(script)
    sha = file_sha256(path)
    perl = _perl_for(path)
    st = os.stat(perl)
    perl_id = f"{os.path.realpath(perl)}:{st.st_size}:{int(st.st_mtime)}"
    memo_key = (sha, perl_id)
    cache_file = None
    if cache_dir is not None:
        material = f"{TABLES_FORMAT}:{sha}:{perl_id}:{sys.version_info[:2]}"
        tag = hashlib.sha256(material.encode()).hexdigest()[:24]
        cache_file = Path(cache_dir) / f"hipify-tables-{tag}.marshal"
    if memo_key in _MEMO:
        tables = _MEMO[memo_key]
        if cache_file is not None and not cache_file.exists():
            _write_cache(cache_file, tables)
        return tables
    if cache_file is not None:
        try:
            # marshal: plain data, loads in a few ms (JSON of the same takes 3x longer)
            tables = Tables.from_json(marshal.loads(cache_file.read_bytes()))  # noqa: S302
            tables.script = path
            _MEMO[memo_key] = tables
            return tables
        except (OSError, EOFError, ValueError, KeyError, TypeError, TablesError):
            pass
    tables = extract_tables(path, perl=perl, sha256=sha)
    _MEMO[memo_key] = tables
    if cache_file is not None:
        _write_cache(cache_file, tables)
    return tables


def _write_cache(cache_file: Path, tables: Tables) -> None:
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps(tables.to_json()))
        os.replace(tmp, cache_file)
    except OSError:
        pass  # a read-only cache is not worth failing a scan for


# --- extraction ----------------------------------------------------------------------


def _sub_bodies(source: str) -> dict[str, str]:
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"^sub (\w+) \{\n(.*?)^\}\n", source, re.M | re.S)
    }


def _list_after(body: str, opener: str, where: str) -> str:
    """The text of a parenthesised list starting right after ``opener`` (balanced parens)."""
    start = body.find(opener)
    if start < 0:
        raise TablesError(f"{where}: no {opener!r}")
    i = start + len(opener)
    depth = 1
    in_string = False
    while i < len(body):
        ch = body[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return body[start + len(opener) : i]
        i += 1
    raise TablesError(f"{where}: unbalanced list")


def _hash_definition(source: str, name: str) -> str:
    m = re.search(rf"^my %{name} = \(\n", source, re.M)
    if m is None:
        raise TablesError(f"no definition of %{name}")
    inner = _list_after(source[m.start() :], "(", f"%{name}")
    return f"my %{name} = ({inner});\n"


def _main_program(source: str) -> str:
    """The script after its last sub: the main loop."""
    ends = [m.end() for m in re.finditer(r"^sub \w+ \{\n.*?^\}\n", source, re.M | re.S)]
    if not ends:
        raise TablesError("no subs found: not a hipify-perl script")
    return source[max(ends) :]


def _check_subs_in_order(main: str) -> list[str]:
    """The warn subs the per-line loop calls, in order, for the default mode."""
    calls = re.findall(r"\$s = (warn\w+)\(\$line_num\);", main)
    order = [name for name in calls if name != "warnRocOnlyUnsupportedFunctions"]
    if not order or len(set(order)) != len(order):
        raise TablesError(f"unexpected warning loop: {calls}")
    unknown = [name for name in order if name not in KIND_BY_SUB]
    if unknown:
        raise TablesError(f"unknown warning subs {unknown}")
    return order


def _perl_string_program(source: str, subs: dict[str, str], check_subs: list[str]) -> str:
    """A perl program that prints every table, hex-encoded, one record per line."""
    if "simpleSubstitutions" not in subs or "subst" not in subs:
        raise TablesError("no simpleSubstitutions/subst subs")
    subst_body = subs["subst"]
    ops = list(_S_OP.finditer(subst_body))
    if len(ops) != 1 or ops[0].group(2) != "$b":
        raise TablesError("subst() is not one s/PATTERN/$b/g")
    patched_subst = (
        subst_body[: ops[0].start()]
        + f"::rec_subst($t, $a, $b, qr/{ops[0].group(1)}/)"
        + subst_body[ops[0].end() :]
    )
    parts = [
        "no strict; no warnings;\n",
        "binmode STDOUT;\n",
        'sub emit { print join("\\t", map { unpack("H*", defined $_ ? "$_" : "") } @_), "\\n" }\n',
        'sub rec_subst { my ($t, $a, $b, $re) = @_; emit("SUBST", $t, $a, $b, "$re"); return 0 }\n',
        'sub rec_s { my ($sub, $idx, $re, $f) = @_; emit("S", $sub, $idx, "$re", $f); return 0 }\n',
        f"sub subst {{\n{patched_subst}}}\n",
        f"sub simpleSubstitutions {{\n{subs['simpleSubstitutions']}}}\n",
        "simpleSubstitutions();\n",
    ]
    for sub in check_subs:
        body = subs.get(sub)
        if body is None:
            raise TablesError(f"no sub {sub}")
        m = re.search(r"each %(\w+)\)", body)
        if m:
            if _PLAIN_CHECK_MATCH not in body:
                raise TablesError(f"{sub}: not a plain m/($func)/g check")
            hash_name = m.group(1)
            parts.append(_hash_definition(source, hash_name))
            parts.append(
                f'while (my ($k, $v) = each %{hash_name}) {{ emit("CHECK", "{sub}", $k, $v) }}\n'
            )
        else:
            items = _list_after(body, "foreach $func (", sub)
            if sub == "warnUnsupportedDeviceFunctions":
                if _DEVICE_NS_MATCH not in body or _DEVICE_MATCH not in body:
                    raise TablesError(f"{sub}: unexpected device function regexes")
            elif _PLAIN_CHECK_MATCH not in body:
                raise TablesError(f"{sub}: not a plain m/($func)/g check")
            parts.append(f'for my $f ({items}) {{ emit("CHECK", "{sub}", $f, "") }}\n')
    body = subs.get("countSupportedDeviceFunctions")
    if body is None or _DEVICE_MATCH not in body:
        raise TablesError("countSupportedDeviceFunctions missing or changed")
    items = _list_after(body, "foreach $func (", "countSupportedDeviceFunctions")
    parts.append(f'for my $f ({items}) {{ emit("DEVFN", $f) }}\n')
    m = re.search(r"^@whitelist = \(", source, re.M)
    if m is None:
        raise TablesError("no @whitelist")
    items = _list_after(source[m.start() :], "(", "@whitelist")
    parts.append(f'for my $f ({items}) {{ emit("WL", $f) }}\n')
    for sub in ("transformCubNamespace", "transformHostFunctions"):
        body = subs.get(sub)
        if body is None:
            raise TablesError(f"no sub {sub}")
        patched = []
        last = 0
        for index, op in enumerate(_S_OP.finditer(body)):
            patched.append(body[last : op.start()])
            patched.append(f'::rec_s("{sub}", {index}, qr/{op.group(1)}/, $func)')
            last = op.end()
        patched.append(body[last:])
        parts.append(f"sub {sub} {{\n{''.join(patched)}}}\n$func = undef;\n{sub}();\n")
    parts.append('emit("PERL", sprintf("%vd", $^V));\n')
    return "".join(parts)


def _replacement_parts(raw: str, func: str | None) -> tuple[str | int, ...]:
    """Perl replacement text (``$func\\(HIP_SYMBOL\\($2\\),``) as literal pieces and groups."""
    out: list[str | int] = []
    literal: list[str] = []
    i = 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt.isalnum():
                raise TablesError(f"replacement escape \\{nxt} not understood in {raw!r}")
            literal.append(nxt)
            i += 2
            continue
        if ch == "$":
            m = re.match(r"\$(?:(\d+)|\{(\d+)\}|(func)\b)", raw[i:])
            if m is None:
                raise TablesError(f"replacement variable not understood in {raw!r}")
            if m.group(3):
                if func is None:
                    raise TablesError(f"$func outside a loop in {raw!r}")
                literal.append(func)
            else:
                if literal:
                    out.append("".join(literal))
                    literal = []
                out.append(int(m.group(1) or m.group(2)))
            i += m.end()
            continue
        literal.append(ch)
        i += 1
    if literal:
        out.append("".join(literal))
    return tuple(out)


def perl_regex_to_python(qr: str) -> str:
    """``(?^:...)`` as perl stringifies a qr// -> the Python ``re`` source (ASCII mode)."""
    m = re.fullmatch(r"\(\?\^([a-z]*):(.*)\)", qr, re.S)
    if m is None:
        raise TablesError(f"not a stringified qr//: {qr!r}")
    flags, body = m.groups()
    if flags not in ("", "u"):
        raise TablesError(f"regex flags {flags!r} not supported: {qr!r}")
    if "(?R)" in body or "\\G" in body or "\\K" in body:
        raise TablesError(f"perl-only regex construct in {qr!r}")
    # \/ is a plain slash in both; Python warns about nothing else used here.
    return body


def _literal_needle(pattern: str) -> str:
    """A literal word every match of ``pattern`` contains (for a cheap pre-check).

    Look-behinds and character classes are dropped (they match nothing
    required), as are escapes like ``\\b`` and ``\\s``; the longest remaining
    run of word characters not made optional by a quantifier is the needle.
    """
    text = re.sub(r"\(\?<[!=](?:[^()\\]|\\.)*\)", " ", pattern)
    text = re.sub(r"\[(?:[^\]\\]|\\.)*\]", " ", text)
    text = re.sub(r"\\[A-Za-z]", " ", text)
    best = ""
    for m in re.finditer(r"\w+", text, re.A):
        word = m.group()
        if m.end() < len(text) and text[m.end()] in "*?{":
            word = word[:-1]
        if len(word) > len(best):
            best = word
    return best


def extract_tables(script: str, *, perl: str | None = None, sha256: str | None = None) -> Tables:
    """Read the script's tables with perl's help (see the module docstring)."""
    source = Path(script).read_bytes().decode("latin-1")
    subs = _sub_bodies(source)
    main = _main_program(source)
    check_subs = _check_subs_in_order(main)
    if _UNCONVERTED_MATCH not in main:
        raise TablesError("the 'cuda token left after translation' check changed")
    m = re.search(r'print STDERR "HIP version ([^"\\]+)\\n"', source)
    hip_version = m.group(1) if m else "unknown"
    wording = "hip-6.3" if "warning: unsupported HIP identifier:" in source else "hip-6.0"

    program = _perl_string_program(source, subs, check_subs)
    perl = perl or _perl_for(script)
    from stack.tools import die_with_parent_preexec

    env = {**os.environ, **PERL_DETERMINISTIC_ENV}
    proc = subprocess.run(
        [perl, "-"],
        input=program.encode("latin-1"),
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
        preexec_fn=die_with_parent_preexec(),
    )
    if proc.returncode != 0:
        raise TablesError(
            f"perl could not evaluate the tables of {script}: "
            f"{proc.stderr.decode('latin-1', 'replace')[:2000]}"
        )

    substs: list[Subst] = []
    checks: list[Check] = []
    devfns: list[str] = []
    whitelist: list[str] = []
    transforms: dict[str, list[Transform]] = {
        "transformCubNamespace": [],
        "transformHostFunctions": [],
    }
    raw_s_ops = {sub: [op.group(2) for op in _S_OP.finditer(subs[sub])] for sub in transforms}
    perl_version = ""
    for line in proc.stdout.decode("ascii").splitlines():
        fields = [bytes.fromhex(f).decode("latin-1") for f in line.split("\t")]
        tag = fields[0]
        if tag == "SUBST":
            t, a, b, qr = fields[1:5]
            pattern = perl_regex_to_python(qr)
            plain = bool(re.fullmatch(r"\w+", a, re.A)) and pattern == rf"\b{a}\b"
            substs.append(Subst(a, b, t, pattern, plain))
        elif tag == "CHECK":
            sub, name, val = fields[1:4]
            kind = KIND_BY_SUB[sub]
            since = None
            if kind in ("removed", "deprecated"):
                since = f"{'CUDNN' if name.lower().startswith('cudnn') else 'CUDA'} {val}"
            elif kind == "experimental":
                since = f"HIP {val}"
            if not re.fullmatch(r"\w+", name, re.A):
                raise TablesError(f"{sub}: identifier {name!r} is not a plain word")
            checks.append(Check(name, kind, sub, since, sub == "warnUnsupportedDeviceFunctions"))
        elif tag == "DEVFN":
            if not re.fullmatch(r"\w+", fields[1], re.A):
                raise TablesError(f"device function {fields[1]!r} is not a plain word")
            devfns.append(fields[1])
        elif tag == "WL":
            whitelist.append(fields[1])
        elif tag == "S":
            sub, index, qr, func = fields[1], int(fields[2]), fields[3], fields[4] or None
            pattern = perl_regex_to_python(qr)
            repl = _replacement_parts(raw_s_ops[sub][index], func)
            transforms[sub].append(Transform(sub, pattern, repl, _literal_needle(pattern)))
        elif tag == "PERL":
            perl_version = fields[1]
    if not substs or not checks:
        raise TablesError(f"no tables found in {script}")
    for s in substs:
        try:
            re.compile(s.pattern, re.A)
        except re.error as exc:
            raise TablesError(f"subst pattern {s.pattern!r}: {exc}") from None
        if not s.plain and not (s.pattern.endswith(r"\b") and r"\b" in s.pattern[:-2]):
            raise TablesError(f"subst pattern {s.pattern!r} has an unexpected shape")
    return Tables(
        script=script,
        sha256=sha256 or file_sha256(script),
        hip_version=hip_version,
        perl=perl,
        perl_version=perl_version,
        hash_order=HASH_ORDER,
        wording=wording,
        substs=substs,
        checks=checks,
        supported_device_functions=devfns,
        whitelist=whitelist,
        cub_transforms=transforms["transformCubNamespace"],
        host_transforms=transforms["transformHostFunctions"],
    )
