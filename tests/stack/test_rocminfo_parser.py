"""rocminfo's report → GPU records, on an 8x MI300X host and a host without GPUs."""

from stack_helpers import fixture_text

from stack.parsers import rocminfo

MI300X = fixture_text("rocminfo-mi300x-8gpu.txt")


def test_rocminfo_parser_finds_the_eight_mi300x_gpus():
    gpus = rocminfo.parse_gpus(MI300X)
    assert len(gpus) == 8
    assert [g["index"] for g in gpus] == list(range(8))
    assert {g["model"] for g in gpus} == {"AMD Instinct MI300X"}
    assert {g["arch"] for g in gpus} == {"gfx942"}
    assert {g["compute_units"] for g in gpus} == {304}
    assert {g["vendor"] for g in gpus} == {"amd"}
    assert {g["source"] for g in gpus} == {"rocminfo"}


def test_rocminfo_parser_skips_cpu_agents():
    report = rocminfo.parse_rocminfo(MI300X)
    assert len(report["agents"]) == 10
    cpu_names = [a["fields"]["Name"] for a in report["agents"][:2]]
    assert cpu_names == ["AMD EPYC 9654 96-Core Processor"] * 2
    assert all("EPYC" not in g["model"] for g in rocminfo.parse_gpus(MI300X))


def test_rocminfo_parser_reads_vram_from_the_coarse_grained_pool():
    # 201310208 KB, the same 196592 MiB that amd-smi reports for an MI300X.
    assert rocminfo.parse_gpus(MI300X)[0]["memory_bytes"] == 196592 * 1024**2


def test_rocminfo_parser_does_not_mistake_isa_or_pool_fields_for_the_agent_s():
    agent = rocminfo.gpu_agents(rocminfo.parse_rocminfo(MI300X))[0]
    assert agent["fields"]["Name"] == "gfx942"
    assert agent["isas"][0]["Name"] == "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
    assert agent["fields"]["Compute Unit"] == "304"
    assert agent["fields"]["WatchPts on Addr. Ranges"] == "4"


def test_rocminfo_parser_keeps_the_gpu_uuid():
    assert rocminfo.parse_gpus(MI300X)[0]["uuid"] == "GPU-8e1a3c5d7f902b46"


def test_rocminfo_parser_drops_the_placeholder_uuid():
    text = MI300X.replace("GPU-8e1a3c5d7f902b46", "GPU-XX")
    assert rocminfo.parse_gpus(text)[0]["uuid"] is None


def test_rocminfo_parser_reads_runtime_and_rock_module_versions():
    report = rocminfo.parse_rocminfo(MI300X)
    assert report["runtime_version"] == "1.14"
    assert report["rock_module_version"] == "6.8.5"


def test_rocminfo_parser_accepts_output_indented_as_in_the_docs():
    indented = "\n".join("        " + line for line in MI300X.splitlines())
    assert rocminfo.parse_gpus(indented) == rocminfo.parse_gpus(MI300X)


def test_rocminfo_parser_finds_no_gpus_on_a_host_without_the_rock_module():
    text = "\x1b[37mROCk module is NOT loaded, possibly no GPU devices\x1b[0m\n"
    report = rocminfo.parse_rocminfo(text)
    assert report["agents"] == []
    assert rocminfo.parse_gpus(text) == []
