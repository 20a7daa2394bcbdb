"""The checklist pre-filled from data; the recommendation on the product's scenarios."""

from __future__ import annotations

import pytest

from roadmap import criteria
from roadmap.checklist import evaluate, hardware_answer
from roadmap.criteria import Facts
from roadmap.models import ChecklistAnswer, DecisionContext
from roadmap.recommend import CUDA, ROCM, UNDECIDED, nvidia_only_found, recommend
from teams.models import ApiDecision
from tests.roadmap.conftest import (
    GAPS_CU,
    NVIDIA_ONLY_CU,
    benchmark,
    environment,
    ready_source,
    real_scan,
    scan,
)

pytestmark = pytest.mark.django_db


def test_hardware_compatibility_is_read_from_rocms_support_list():
    assert hardware_answer(["MI300X"])[0] == "yes"
    answer, evidence = hardware_answer(["MI300X", "NVIDIA H100"])
    assert answer == "partly" and "Not on it: NVIDIA H100" in evidence and "ROCm 6.3.1" in evidence
    assert hardware_answer(["gfx803"])[0] == "no"
    assert hardware_answer([])[0] is None
    # A name rocpath does not know (a typo, a GPU the table lacks) is not a "no".
    assert hardware_answer(["Radeon Quantum 9000"])[0] is None
    assert hardware_answer(["MI300X"], release="9.9")[0] is None  # never guessed


def test_the_checklist_is_prefilled_from_data_and_the_team_answers_the_rest(project):
    project.target_gpus = ["MI300X"]
    project.save()
    scan(project, ready_source(project))
    rows = {r.key: r for r in evaluate(Facts(project))}
    assert rows["hardware"].answer == "yes" and rows["hardware"].source == "data"
    assert rows["software"].answer == "yes" and "400 CUDA references" in rows["software"].evidence
    assert rows["toolchain"].answer is None and rows["maintenance"].answer is None
    ChecklistAnswer.objects.create(
        project=project, question="toolchain", answer="partly", note="two of five know HIP"
    )
    rows = {r.key: r for r in evaluate(Facts(project))}
    assert rows["toolchain"].answer == "partly" and rows["toolchain"].source == "team"


def test_a_large_code_base_and_a_short_window_stay_on_cuda_with_the_reasons(project):
    scan(project, ready_source(project), hours=2000)
    DecisionContext.objects.create(project=project, time_window_weeks=4, engineers=2)
    project.refresh_from_db()
    rec = recommend(Facts(project))
    assert rec.verdict == CUDA
    # One convention: 4 weeks x 2 engineers x 5 days x 6 focused hours, as the estimate's
    # person-days count them (a 40-h week made it 320 h).
    said = next(r.text for r in rec.reasons if r.kind == "effort")
    assert "2000 h (333.3 person-days of 6 h), exceeds the 240 h" in said, said
    assert rec.would_change and "240 h" in rec.would_change[0]
    assert all(r.evidence for r in rec.reasons if r.kind == "effort")


def test_a_multi_vendor_fleet_with_a_good_measured_ratio_moves_to_rocm(project):
    scan(project, ready_source(project), hours=200)
    DecisionContext.objects.create(
        project=project, time_window_weeks=8, engineers=2, multi_vendor_fleet=True
    )
    project.refresh_from_db()
    benchmark(project, environment("nvidia", "NVIDIA H200"), {4096: 650.0, 8192: 690.0})
    benchmark(project, environment("amd", "AMD Instinct MI300X"), {4096: 700.0, 8192: 720.0})
    rec = recommend(Facts(project))
    assert rec.verdict == ROCM
    assert rec.figures["performance_ratio"] == pytest.approx(
        ((700 / 650) * (720 / 690)) ** 0.5, abs=1e-3
    )
    texts = " ".join(r.text for r in rec.reasons)
    assert "multi-vendor fleet" in texts and "1.06x" in texts


@pytest.mark.process  # the scan runner asks hipify-perl for its tables
def test_nvidia_only_technology_a_real_scan_finds_keeps_a_team_on_cuda(project):
    real_scan(project, {"reduce.cu": NVIDIA_ONLY_CU})
    DecisionContext.objects.create(
        project=project, time_window_weeks=10, engineers=3, new_cluster=True
    )
    project.refresh_from_db()
    rec = recommend(Facts(project))
    technology = [r.text for r in rec.reasons if r.kind == "technology"]
    assert rec.verdict == CUDA, rec.reasons
    assert "NVSHMEM" in technology[0] and "CUDA graph features" in technology[0]


@pytest.mark.process
def test_a_graph_api_the_team_decided_no_longer_holds_it_on_cuda(project, user):
    real_scan(project, {"graph.cu": GAPS_CU})
    ApiDecision.objects.create(
        project=project, api="cudaGraphExecNodeSetParams", decision="port", decided_by=user
    )
    assert nvidia_only_found(Facts(project)) == []


def test_without_data_the_answer_is_not_yet_decidable_and_says_what_is_missing(project):
    rec = recommend(Facts(project))
    assert rec.verdict == UNDECIDED
    assert any("HIPIFY scan" in m for m in rec.missing)
    assert rec.would_change


def _ready_to_move(project):
    """A small CUDA tree a real scan estimates, a window it fits, a ROCm scenario and a
    candidate measured well: "Use ROCm" while the checklist has no "no"."""
    real_scan(project, {"saxpy.cu": SAXPY_CU})
    DecisionContext.objects.create(
        project=project, time_window_weeks=8, engineers=2, multi_vendor_fleet=True
    )
    project.refresh_from_db()
    benchmark(project, environment("nvidia", "NVIDIA H200"), {4096: 650.0, 8192: 690.0})
    benchmark(project, environment("amd", "AMD Instinct MI300X"), {4096: 700.0, 8192: 720.0})


SAXPY_CU = """\
#include <cuda_runtime.h>
__global__ void saxpy(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
int run(int n, const float* hx, float* hy) {
  float *x, *y;
  cudaMalloc(&x, n * sizeof(float));
  cudaMalloc(&y, n * sizeof(float));
  cudaMemcpy(x, hx, n * sizeof(float), cudaMemcpyHostToDevice);
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
  cudaMemcpy(hy, y, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(x);
  cudaFree(y);
  return 0;
}
"""


@pytest.mark.process
def test_a_no_in_the_checklist_turns_use_rocm_into_not_yet_decidable_quoting_it(project, user):
    _ready_to_move(project)
    assert recommend(Facts(project)).verdict == ROCM
    ChecklistAnswer.objects.create(
        project=project, question="toolchain", answer="no", note="nobody here has used hipcc"
    )
    ChecklistAnswer.objects.create(project=project, question="maintenance", answer="no")
    rec = recommend(Facts(project))
    assert rec.verdict == UNDECIDED
    said = [r.text for r in rec.reasons if r.kind == "checklist"]
    assert len(said) == 2 and '"nobody here has used hipcc"' in said[0]
    assert any("toolchain familiarity" in w for w in rec.would_change)
    gate = criteria.checklist_complete(Facts(project))
    assert gate.status == criteria.FAILED and "Toolchain familiarity: no" in gate.detail


@pytest.mark.process
def test_a_no_to_hardware_keeps_the_team_on_cuda(project):
    _ready_to_move(project)
    ChecklistAnswer.objects.create(project=project, question="hardware", answer="no")
    rec = recommend(Facts(project))
    assert rec.verdict == CUDA and any(r.kind == "hardware" for r in rec.reasons)
