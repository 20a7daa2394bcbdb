"""The submit form as a new user meets it: a harmless default, small first runs, readable
parameters."""

from __future__ import annotations

import json
import re

from portal.forms import param_fields
from stack.kinds import KINDS
from stack.kinds.blas_bench import KIND as BLAS_BENCH
from stack.kinds.probe import KIND as PROBE


def _selected_kind(html: str) -> str:
    return re.search(r'<option value="([^"]+)" selected>', html)[1]


def test_the_form_starts_on_the_probe_not_on_a_full_benchmark_sweep(member_client):
    html = member_client.get("/jobs/new/").content.decode()
    assert _selected_kind(html) == PROBE.name and PROBE.submit_default
    assert [k.name for k in KINDS.values() if k.submit_default] == [PROBE.name]
    assert not PROBE.needs_gpu  # harmless on the CPU a new user may be on


def test_a_kinds_small_first_run_is_offered_valid_and_fills_the_form(member_client):
    example = dict(BLAS_BENCH.example_params)
    params = BLAS_BENCH.validate(dict(example))
    assert len(params["precisions"]) < len(BLAS_BENCH.defaults()["precisions"])
    assert max(params["sizes"]) < max(BLAS_BENCH.defaults()["sizes"])
    html = member_client.get("/jobs/new/").content.decode()
    assert f'href="?kind={BLAS_BENCH.name}">start from it</a>' in html
    filled = member_client.get(f"/jobs/new/?kind={BLAS_BENCH.name}").content.decode()
    assert _selected_kind(filled) == BLAS_BENCH.name
    textarea = re.search(r"<textarea[^>]*>(.*?)</textarea>", filled, re.S)[1]
    assert json.loads(textarea.replace("&quot;", '"')) == example


def test_every_example_a_kind_offers_passes_its_schema():
    for kind in KINDS.values():
        if kind.example_params:
            kind.validate(dict(kind.example_params))


def test_the_parameters_are_rows_of_name_type_default_description_not_raw_json_schema(
    member_client,
):
    rows = {row["name"]: row for row in param_fields(BLAS_BENCH.params_schema)}
    assert rows["sizes"] == {
        "name": "sizes",
        "type": "list of integer 1\u201365536",
        "default": "[1024, 2048, 4096, 8192]",
        "description": "Square GEMM sweep: m = n = k for each size.",
    }
    assert rows["device"]["type"] == "string: auto, gpu, cpu"
    html = member_client.get("/jobs/new/").content.decode()
    assert "<td><code>sizes</code></td><td>list of integer 1\u201365536</td>" in html
    assert "&quot;properties&quot;" not in html and "&quot;maxItems&quot;" not in html
    assert html.count('<table class="params-help">') == sum(
        1 for k in KINDS.values() if k.params_schema.get("properties")
    )
