"""The fast engine: hipify-perl's ``-examine`` findings for one file, in one pass.

hipify-perl's warning pass costs lines x table size: for every line it runs
every identifier of its tables (about 4,300 in 6.0) as a separate regex. This
engine computes the same answer from the few identifiers that can match:

1. The words of the file are looked up (memoised per process) for the table
   identifiers they contain as substrings; a file whose words contain none has
   no table warnings at all, which is most files.
2. For the lines that hold a candidate, the tool's per-line sequence of checks
   is replayed over just those candidates, with Perl's ``pos()`` semantics:
   each check is a scalar ``m/($func)/g`` on the same line, so after a hit the
   next check starts searching where the hit ended, and any miss resets the
   position to 0. That is why hipify-perl reports ``nvrtcGetNVVMSize`` but not
   the ``nvrtcGetNVVM`` inside it, and why the order of the hash-backed tables
   matters (see :mod:`stack.hipify.tables`). An identifier absent from the line
   is a miss wherever the search starts, so only runs of adjacent candidates
   need the real position.
3. Conversion applies only the substitutions whose identifier occurs in the
   file (plus any a replacement could create), in hipify-perl's order, each
   with the regex Perl used; then the "cuda token left after translation"
   pass runs on the lines that still hold ``cudaX``.

Everything is computed on the file's bytes decoded as Latin-1 with ASCII
regexes, which is how Perl sees a file read without an encoding layer.
"""

from __future__ import annotations

import heapq
import re
from bisect import bisect_right
from collections.abc import Iterator
from typing import Any

from stack.hipify import hazards as _hazards
from stack.hipify.lexer import SourceMap, line_bounds, line_starts
from stack.hipify.lexer import is_word_char as _is_word_char
from stack.hipify.tables import CUDA_TOKEN, UNCONVERTED, Check, Tables

ENGINE_VERSION = 1

_WORD = re.compile(r"\w+", re.A)
_CUDA_TOKEN_QUICK = re.compile(r"\bcuda[A-Z]\w", re.A)


class _Index:
    """Per-process lookup structures derived from Tables (built once, on first use)."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        checks = tables.checks
        self.checks: list[Check] = checks
        self.check_positions: dict[str, list[int]] = {}
        for i, check in enumerate(checks):
            self.check_positions.setdefault(check.name, []).append(i)
        names = list(self.check_positions)
        self.min_len = min(len(n) for n in names)
        self.prefix_len = min(4, self.min_len)
        self.by_prefix: dict[str, list[str]] = {}
        for name in names:
            self.by_prefix.setdefault(name[: self.prefix_len], []).append(name)
        self.word_hits: dict[str, tuple[str, ...]] = {}

        self.plain: dict[str, list[int]] = {}
        self.special: list[int] = []
        for i, s in enumerate(tables.substs):
            if s.plain:
                self.plain.setdefault(s.cuda, []).append(i)
            else:
                self.special.append(i)
        self._follow_ups: dict[int, list[int]] = {}
        self.special_needle_list = [(j, _subst_needle(tables.substs[j].cuda)) for j in self.special]
        self.special_pieces = {j: _needle_pieces(n) for j, n in self.special_needle_list}
        self._risky: dict[int, bool] = {}
        self._subst_rx: dict[int, re.Pattern[str]] = {}
        self.devfns = tables.supported_device_functions
        self.devfn_positions: dict[str, list[int]] = {}
        for i, name in enumerate(self.devfns):
            self.devfn_positions.setdefault(name, []).append(i)
        self.whitelist = tables.whitelist
        self.cub = tables.cub_transforms
        self.host = tables.host_transforms
        self._rx: dict[str, re.Pattern[str]] = {}  # compiled on first use: most files need none

    def rx(self, pattern: str) -> re.Pattern[str]:
        """A compiled ASCII regex (memoised)."""
        compiled = self._rx.get(pattern)
        if compiled is None:
            compiled = self._rx[pattern] = re.compile(pattern, re.A)
        return compiled

    def hits_in_word(self, word: str) -> tuple[str, ...]:
        """Table identifiers that occur inside ``word`` (memoised)."""
        hits = self.word_hits.get(word)
        if hits is None:
            found: list[str] = []
            plen = self.prefix_len
            by_prefix = self.by_prefix
            for i in range(len(word) - self.min_len + 1):
                for name in by_prefix.get(word[i : i + plen], ()):
                    if word.startswith(name, i) and name not in found:
                        found.append(name)
            hits = tuple(found)
            if len(self.word_hits) < 2_000_000:
                self.word_hits[word] = hits
        return hits

    def follow_ups(self, i: int) -> list[int]:
        """Later plain substitutions that subst i's replacement could create (its words)."""
        later = self._follow_ups.get(i)
        if later is None:
            hip = self.tables.substs[i].hip
            later = sorted({j for w in _WORD.findall(hip) for j in self.plain.get(w, ()) if j > i})
            self._follow_ups[i] = later
        return later

    def risky(self, i: int) -> bool:
        """Can applying subst i create text that another substitution then matches?

        True when its replacement holds a word some later plain substitution
        matches, or could form (alone or with the text around it) the literal
        needle of a later include-style substitution. Safe substitutions are
        applied together in one pass; risky ones one at a time, exactly as Perl.
        """
        risky = self._risky.get(i)
        if risky is None:
            hip = self.tables.substs[i].hip
            risky = bool(self.follow_ups(i))
            if not risky:
                if not hip or not _WORD.fullmatch(hip):
                    risky = True
                else:
                    risky = any(
                        j > i and _may_form(needle, self.special_pieces[j], hip)
                        for j, needle in self.special_needle_list
                    )
            self._risky[i] = risky
        return risky

    def subst_rx(self, i: int) -> re.Pattern[str]:
        rx = self._subst_rx.get(i)
        if rx is None:
            rx = self._subst_rx[i] = re.compile(self.tables.substs[i].pattern, re.A)
        return rx


def _needle_pieces(needle: str) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]:
    """Where a word can sit in ``needle``: bounded by its ends or by its non-word characters.

    Heads end before a non-word character, tails start after one, middles do both.
    """
    starts = [0] + [k + 1 for k in range(len(needle)) if not _is_word_char(needle[k])]
    ends = [k for k in range(len(needle)) if not _is_word_char(needle[k])] + [len(needle)]
    heads = tuple(needle[:b] for b in ends if 0 < b < len(needle))
    tails = tuple(needle[a:] for a in starts if 0 < a < len(needle))
    middles = frozenset(needle[a:b] for a in starts for b in ends if 0 < a < b < len(needle))
    return heads, tails, middles


def _may_form(
    needle: str, pieces: tuple[tuple[str, ...], tuple[str, ...], frozenset[str]], hip: str
) -> bool:
    """Could inserting the word ``hip`` between two non-word characters create ``needle``?

    The characters around the inserted word are non-word ones, so an occurrence
    of the needle overlapping it must contain it whole, or meet it where the
    needle itself has a non-word character: the word ends with a head of the
    needle, starts with a tail, or is a middle piece.
    """
    if not needle:
        return False
    if needle in hip:
        return True
    heads, tails, middles = pieces
    return (
        hip in middles
        or any(hip.endswith(h) for h in heads)
        or any(hip.startswith(t) for t in tails)
    )


def _subst_needle(cuda: str) -> str:
    """Literal prefix of a substitution's identifier up to its first regex metacharacter."""
    m = re.match(r"[\w/-]+", cuda, re.A)
    return m.group() if m else ""


_INDEXES: dict[int, _Index] = {}


def index_for(tables: Tables) -> _Index:
    """The lookup structures for these tables, built once per process."""
    # Keyed by id: the index holds its tables, so no other Tables can get that id.
    idx = _INDEXES.get(id(tables))
    if idx is None:
        idx = _INDEXES[id(tables)] = _Index(tables)
    return idx


# The part of hipify-perl's device-function regexes after the name: a call on the line.
_CALL_TAIL = re.compile(r"\s*\(\s*.*\s*\)", re.A)


def _whole_words(text: str, name: str, pos: int = 0) -> Iterator[int]:
    """Where ``\\bNAME\\b`` matches from ``pos``, NAME being all word characters.

    ``str.find`` and a look at the characters around each hit: far faster than
    the regex, of which a file may need thousands.
    """
    find = text.find
    size = len(name)
    n = len(text)
    i = find(name, pos)
    while i >= 0:
        end = i + size
        if (i == 0 or not _is_word_char(text[i - 1])) and (
            end == n or not _is_word_char(text[end])
        ):
            yield i
        i = find(name, i + 1)


def _search_call(text: str, name: str, pos: int) -> tuple[int, int] | None:
    """``m/\\b(NAME)\\b\\s*\\(\\s*.*\\s*\\)/g`` from ``pos``: (start of NAME, end).

    NAME is a literal word, so a match is a whole-word occurrence of it followed
    by the call tail; the first such occurrence is the leftmost match, and the
    tail's greedy match is the regex's.
    """
    size = len(name)
    for i in _whole_words(text, name, pos):
        m = _CALL_TAIL.match(text, i + size)
        if m is not None:
            return i, m.end()
    return None


def _search_ns_call(text: str, name: str, pos: int) -> int | None:
    """``m/(\\w+)::(NAME)\\s*\\(\\s*.*\\s*\\)/g`` from ``pos``: the end of the match.

    A match starts inside the run of word characters right before ``::NAME``
    (at its first character, or at ``pos``): the first ``::NAME`` with a
    non-empty run and a call tail gives the leftmost match.
    """
    find = text.find
    needle = "::" + name
    i = find(needle, pos)
    while i >= 0:
        if i > pos and _is_word_char(text[i - 1]):
            m = _CALL_TAIL.match(text, i + len(needle))
            if m is not None:
                return m.end()
        i = find(needle, i + 1)
    return None


def _device_check(name: str, text: str, pos: int) -> tuple[bool, int, int]:
    """hipify-perl's two scalar m//g of a device function; (counted, new pos, column)."""
    ns_end = _search_ns_call(text, name, pos)
    pos = ns_end if ns_end is not None else 0
    found = _search_call(text, name, pos)
    if found is None:
        return False, 0, -1
    return (ns_end is None), found[1], found[0]


def _table_warnings(
    idx: _Index, text: str, words: set[str]
) -> tuple[list[tuple[int, int, Check]], list[int]]:
    """Pass 1: (line number, column, check) in the order hipify-perl prints them.

    Also the text's line starts, for examine to reuse; empty when not needed.
    """
    hit_names: set[str] = set()
    hits_in_word = idx.hits_in_word
    for word in words:
        hit = hits_in_word(word)
        if hit:
            hit_names.update(hit)
    if not hit_names:
        return [], []
    starts = line_starts(text)
    by_line: dict[int, set[str]] = {}
    find = text.find
    for name in hit_names:
        i = find(name)
        while i >= 0:
            by_line.setdefault(bisect_right(starts, i), set()).add(name)
            i = find(name, i + 1)
    positions = idx.check_positions
    checks = idx.checks
    out: list[tuple[int, int, Check]] = []
    for line_no in sorted(by_line):
        start, end = line_bounds(starts, line_no, len(text))
        line = text[start:end]
        order = sorted({p for name in by_line[line_no] for p in positions[name]})
        pos = 0
        previous = -2
        for p in order:
            if p != previous + 1:
                pos = 0  # a check in between found nothing and reset pos()
            previous = p
            check = checks[p]
            if check.device:
                warned, pos, col = _device_check(check.name, line, pos)
                if warned:
                    out.append((line_no, col, check))
            else:
                col = line.find(check.name, pos)
                if col >= 0:
                    pos = col + len(check.name)
                    out.append((line_no, col, check))
                else:
                    pos = 0
    return out, starts


def _apply_plain_batch(idx: _Index, text: str, batch: list[int], counts: dict[int, int]) -> str:
    """Several ``\\bNAME\\b`` substitutions that cannot interact, in one rebuild of the text.

    Each NAME is all word characters, so its matches are whole words: the
    matches of different names never overlap and applying them together is the
    same as applying them one after the other.
    """
    substs = idx.tables.substs
    edits: list[tuple[int, int, str]] = []
    for i in batch:
        name = substs[i].cuda
        hip = substs[i].hip
        size = len(name)
        before = len(edits)
        edits.extend((j, j + size, hip) for j in _whole_words(text, name))
        if len(edits) > before:
            counts[i] = len(edits) - before
    if not edits:
        return text
    edits.sort()
    parts = []
    last = 0
    for start, end, hip in edits:
        parts.append(text[last:start])
        parts.append(hip)
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _convert(idx: _Index, text: str, words: set[str]) -> tuple[str, dict[int, int]]:
    """simpleSubstitutions: the text after them and the count of each applied subst.

    Only the substitutions whose identifier occurs in the file are tried (plus
    those a replacement could create), in hipify-perl's order.
    """
    substs = idx.tables.substs
    queue: list[int] = []
    seen: set[int] = set()
    for word in words:
        for i in idx.plain.get(word, ()):
            if i not in seen:
                seen.add(i)
                queue.append(i)
    for i, needle in idx.special_needle_list:
        if needle in text:
            seen.add(i)
            queue.append(i)
    heapq.heapify(queue)
    counts: dict[int, int] = {}
    while queue:
        i = heapq.heappop(queue)
        s = substs[i]
        if s.plain and not idx.risky(i):
            batch = [i]
            while queue and substs[queue[0]].plain and not idx.risky(queue[0]):
                batch.append(heapq.heappop(queue))
            text = _apply_plain_batch(idx, text, batch, counts)
            continue
        text, n = idx.subst_rx(i).subn(s.hip.replace("\\", "\\\\"), text)
        if not n:
            continue
        counts[i] = n
        # A replacement can create text that a later substitution matches.
        for j in idx.follow_ups(i):
            if j not in seen:
                seen.add(j)
                heapq.heappush(queue, j)
        for j, needle in idx.special_needle_list:
            if j > i and j not in seen and needle in text:
                seen.add(j)
                heapq.heappush(queue, j)
    return text, counts


def _apply_transforms(idx: _Index, transforms: list[Any], text: str) -> str:
    for t in transforms:
        if t.needle and t.needle not in text:
            continue
        rx = idx.rx(t.pattern)
        parts = t.replacement

        def expand(m: re.Match[str], parts: tuple[str | int, ...] = parts) -> str:
            return "".join(p if isinstance(p, str) else (m.group(p) or "") for p in parts)

        text = rx.sub(expand, text)
    return text


def _count_device_functions(idx: _Index, text: str, words: set[str]) -> int:
    """countSupportedDeviceFunctions over the converted text (pos() carried across it).

    ``words`` must hold every word of ``text``; a function absent from it fails
    both regexes, which only resets pos(), so only the present ones are replayed.
    """
    present = sorted(p for word in words for p in idx.devfn_positions.get(word, ()))
    k = 0
    pos = 0
    previous = -2
    for p in present:
        if p != previous + 1:
            pos = 0
        previous = p
        counted, pos, _col = _device_check(idx.devfns[p], text, pos)
        k += counted
    return k


def _unconverted_warnings(idx: _Index, text: str) -> tuple[list[tuple[int, int, str]], list[int]]:
    """Pass 2: (line, column, cuda token) for cudaX left after translation.

    Also the text's line starts, for examine to reuse; empty when not needed.
    """
    if not _CUDA_TOKEN_QUICK.search(text):
        return [], []
    starts = line_starts(text)
    line_numbers = sorted(
        {bisect_right(starts, m.start()) for m in _CUDA_TOKEN_QUICK.finditer(text)}
    )
    out = []
    for line_no in line_numbers:
        start, end = line_bounds(starts, line_no, len(text))
        line = text[start:end]
        for word in idx.whitelist:
            if word in line:
                line = idx.rx(rf"\b{re.escape(word)}\b").sub("ZAP", line)
        m = CUDA_TOKEN.search(line)
        if m:
            out.append((line_no, m.start(1), m.group(1)))
    return out, starts


def examine(
    data: bytes, tables: Tables, *, warnings: bool = True, hazards: bool = False
) -> dict[str, Any]:
    """The findings for one file's content (path-free, so they can be cached by hash).

    Returns ``loc``, ``converted_refs`` (hipify-perl's "CONVERTED refs count"),
    ``device_functions`` (the supported device-function calls it counts into
    that figure), ``warnings_count`` (its "WARNINGS"), ``printed`` (whether it
    would print a statistics block), ``refs`` ([cuda, hip, type, count] per
    identifier, true per-identifier counts) and ``warnings``
    ([line, column, identifier, kind, since, context] in printed order; the
    column is 0-based within the original line; for an ``unconverted`` token
    that only the translated line holds, within the translated line).

    ``warnings=False`` is ``-quiet-warnings``: conversion counts only.
    ``hazards``: also run the hazard rules (stack.hipify.hazards) on the same text,
    with the same SourceMap, into ``hazards`` (not hipify-perl's: the scan's own).
    """
    idx = index_for(tables)
    text = data.decode("latin-1")
    words = set(_WORD.findall(text))
    table_hits, starts = _table_warnings(idx, text, words) if warnings else ([], [])
    has_device_code = ("__global__" in text) + ("__shared__" in text)
    converted, counts = _convert(idx, text, words)
    converted = _apply_transforms(idx, idx.cub, converted)
    unconverted, converted_starts = _unconverted_warnings(idx, converted) if warnings else ([], [])
    # $hasDeviceCode = keywords + substitutions of type device_function (none in 6.0)
    has_device_code += sum(
        n for i, n in counts.items() if tables.substs[i].type == "device_function"
    )
    device_functions = 0
    if has_device_code:
        # the converted text's words: the original ones plus those replacements brought
        words_after = set(words)
        for i in counts:
            words_after.update(_WORD.findall(tables.substs[i].hip))
        for t in idx.cub:
            words_after.update(
                _WORD.findall("".join(p for p in t.replacement if isinstance(p, str)))
            )
        device_functions = _count_device_functions(idx, converted, words_after)
    final = _apply_transforms(idx, idx.host, converted)
    loc = final.count("\n")

    found: list[list[Any]] = []
    smap: SourceMap | None = None
    if table_hits or unconverted:
        smap = SourceMap(text)
        if not starts:
            starts = line_starts(text)
        for line_no, col, check in table_hits:
            context = smap.context(starts[line_no - 1] + col, len(check.name))
            found.append([line_no, col, check.name, check.kind, check.since, context])
        # Reported where the token is in the original file (the same line: substitutions
        # never add or remove newlines before this pass, except a rare multi-line
        # "using namespace cub"); else where it is in the translated line.
        converted_map: SourceMap | None = None
        for line_no, col, token in unconverted:
            original_col = -1
            if line_no <= len(starts):
                original_col = text.find(token, *line_bounds(starts, line_no, len(text)))
            if original_col >= 0:
                context = smap.context(original_col, len(token))
                col = original_col - starts[line_no - 1]
            else:
                if converted_map is None:
                    converted_map = SourceMap(converted)
                context = converted_map.context(converted_starts[line_no - 1] + col, len(token))
            found.append([line_no, col, token, UNCONVERTED, None, context])

    hazard_findings: list[list[Any]] = []
    if hazards:
        hits = _hazards.raw_hits(text)
        if hits:
            hazard_findings = _hazards.in_code(
                text, hits, smap or SourceMap(text), starts or line_starts(text)
            )

    substs = tables.substs
    refs = sorted(
        ([substs[i].cuda, substs[i].hip, substs[i].type, n] for i, n in counts.items()),
        key=lambda r: r[0],
    )
    converted_refs = sum(counts.values()) + device_functions
    return {
        "loc": loc,
        "bytes": len(data),
        "converted_refs": converted_refs,
        "device_functions": device_functions,
        "warnings_count": len(found),
        "printed": bool(converted_refs + len(found)),
        "refs": refs,
        "warnings": found,
        **({"hazards": hazard_findings} if hazards else {}),
    }
