"""Totals: files added and taken out one by one give the summary a sum from scratch gives."""

from __future__ import annotations

import random
from typing import Any

import pytest

from stack.hipify.totals import MAX_LOCATIONS, Totals, aggregate, record_core, summarize

# A few identifiers, so that files share APIs and an API's places run past MAX_LOCATIONS.
_WARNED = [
    ("cudaGraphExecNodeSetParams", "unsupported", ""),
    ("cudaThreadSynchronize", "deprecated", "10.0"),
    ("texture", "removed", "12.0"),
    ("cublasSgemmEx_64", "unsupported", ""),
    ("cudaMemcpyToArray", "deprecated", "10.1"),
    ("cuGLInit", "removed", "12.0"),
    ("umin", "unsupported_device_function", ""),
    ("cudaSomethingNew", "unconverted", ""),
]
_REFS = [
    ("cudaMalloc", "hipMalloc", "type"),
    ("cublasCreate", "hipblasCreate", "type"),
    ("GLenum", "GLenum", "openGL"),
    ("cufftPlan1d", "hipfftPlan1d", "type"),
]
_CONTEXTS = ("code", "comment", "string", "identifier")


def _aggregate(rng: random.Random) -> dict[str, Any]:
    """The aggregate of a made-up file's findings, through the real record_core/aggregate."""
    warnings = sorted(
        [
            rng.randint(1, 400),
            rng.randint(0, 40),
            *rng.choice(_WARNED),  # an identifier's kind and "since" are the tables'
            rng.choice(_CONTEXTS),
        ]
        for _ in range(rng.randint(0, 12))
    )
    refs = [[cuda, hip, typ, rng.randint(1, 9)] for cuda, hip, typ in _REFS if rng.random() < 0.5]
    findings = {
        "loc": rng.randint(1, 500),
        "bytes": rng.randint(1, 20_000),
        "converted_refs": sum(r[3] for r in refs),
        "device_functions": None if rng.random() < 0.1 else rng.randint(0, 5),
        "warnings_count": len(warnings),
        "printed": bool(refs or warnings),
        "refs": refs,
        "warnings": warnings,
    }
    return aggregate(record_core(findings))


def _tree(rng: random.Random, n: int) -> dict[str, tuple[str, bool, dict[str, Any]]]:
    return {
        f"d{rng.randint(0, 3)}/f{i:03d}.cu": (f"sha-{i}", rng.random() < 0.5, _aggregate(rng))
        for i in range(n)
    }


def _from_scratch(files: dict[str, tuple[str, bool, dict[str, Any]]]) -> dict[str, Any]:
    return summarize([(path, dev, agg) for path, (_, dev, agg) in files.items()])


def _change(rng: random.Random, files: dict, totals: Totals, tag: str) -> None:
    """Change, delete and add a few files, in ``files`` and in ``totals`` alike."""
    for path in rng.sample(sorted(files), min(len(files), rng.randint(1, 4))):
        totals.remove(path, files.pop(path)[2])
        if rng.random() < 0.6:  # changed rather than deleted
            files[path] = (f"sha-{tag}-{path}", rng.random() < 0.5, _aggregate(rng))
            totals.add(path, *files[path])
    for i in range(rng.randint(0, 2)):
        path = f"d{rng.randint(0, 4)}/new-{tag}-{i}.cu"
        files[path] = (f"sha-new-{tag}-{i}", False, _aggregate(rng))
        totals.add(path, *files[path])


def test_files_changed_added_and_taken_out_give_the_summary_summed_from_scratch():
    refilled = 0
    for seed in range(40):
        rng = random.Random(seed)
        files = _tree(rng, rng.randint(5, 60))
        totals = Totals.loads(Totals.build((p, *v) for p, v in files.items()).dumps())
        for step in range(6):
            _change(rng, files, totals, f"{seed}-{step}")
            refilled += bool(totals.refill(lambda paths, f=files: {p: f[p][2] for p in paths}))
            assert totals.summary() == _from_scratch(files), (seed, step)
            totals = Totals.loads(totals.dumps())
    assert refilled > 20  # the places were listed anew often, not only kept


def _one_texture(line: int) -> dict[str, Any]:
    """The aggregate of a file whose only finding is one removed ``texture`` in code."""
    findings = {
        "loc": 100,
        "bytes": 1000,
        "converted_refs": 0,
        "device_functions": 0,
        "warnings_count": 1,
        "printed": True,
        "refs": [],
        "warnings": [[line, 0, "texture", "removed", "12.0", "code"]],
    }
    return aggregate(record_core(findings))


def test_taking_out_a_file_that_held_a_place_lists_the_next_users_place_loading_no_other():
    totals = Totals()
    for i in range(MAX_LOCATIONS + 2):  # one place each: the first MAX_LOCATIONS files listed
        totals.add(f"f{i:02d}.cu", f"sha{i}", False, _one_texture(i + 1))
    totals.remove("f00.cu", _one_texture(1))
    asked: list[str] = []

    def load(paths: list[str]) -> dict[str, Any]:
        asked.extend(paths)
        return {p: _one_texture(int(p[1:3]) + 1) for p in paths}

    assert totals.refill(load) == 1
    assert asked == ["f10.cu"]  # the next user, the one holding the 10th place now
    expected = summarize(
        [(f"f{i:02d}.cu", False, _one_texture(i + 1)) for i in range(1, MAX_LOCATIONS + 2)]
    )
    assert totals.summary() == expected


def test_taking_out_a_listed_file_when_every_file_is_listed_loses_nothing():
    totals = Totals()
    for i in range(MAX_LOCATIONS):
        totals.add(f"f{i:02d}.cu", f"sha{i}", False, _one_texture(i + 1))
    totals.remove("f03.cu", _one_texture(4))
    assert totals.refill(lambda paths: pytest.fail(f"loaded {paths}")) == 0
    expected = summarize(
        [(f"f{i:02d}.cu", False, _one_texture(i + 1)) for i in range(MAX_LOCATIONS) if i != 3]
    )
    assert totals.summary() == expected


def test_a_file_changed_in_place_keeps_its_places_listed():
    rng = random.Random(7)
    files = _tree(rng, 30)
    totals = Totals.build((p, *v) for p, v in files.items())
    for path in sorted(files)[:5]:  # the files that hold the places of the common APIs
        totals.remove(path, files[path][2])
        totals.add(path, *files[path])
    assert totals.refill(lambda paths: pytest.fail(f"loaded {paths}")) == 0
    assert totals.summary() == _from_scratch(files)


def test_a_file_counted_twice_is_refused():
    totals = Totals()
    agg = _aggregate(random.Random(1))
    totals.add("a.cu", "sha", False, agg)
    with pytest.raises(ValueError, match="counted already"):
        totals.add("a.cu", "sha", False, agg)


def test_a_damaged_or_older_state_is_refused_not_trusted():
    state = Totals.build([("a.cu", "sha", False, _aggregate(random.Random(2)))]).dumps()
    with pytest.raises(ValueError, match="not a totals state"):
        Totals.loads(state[:-5])
    import marshal

    older = marshal.dumps((0, *marshal.loads(state)[1:]))  # noqa: S302 - our own bytes
    with pytest.raises(ValueError, match="version 0"):
        Totals.loads(older)
