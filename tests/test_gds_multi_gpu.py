"""gds_read into several GPUs at once (gdsio run on every GPU together): the drives serve every GPU's threads,
each GPU's link carries its own threads' bytes.

Oracles: the bottleneck law of operational analysis (a throughput is at most every resource's capacity over
its demand: each GPU's link, the drives' ceilings); the monotonicity of a closed network in its population
(Lazowska et al., Quantitative System Performance, ch. 8: more threads never lower the rate); independent
links in parallel add up (max-min fairness with no shared bottleneck); published rows used in no fit.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import catalog
from iowatt.models.links import link_payload_Bps
from iowatt.models.ssd import read_throughput_Bps
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario
from iowatt.simulator.run import simulate
from iowatt.simulator.system import SystemConfig
from iowatt.simulator.workloads import WorkloadConfigError
from iowatt.simulator.workloads.gds_read import GdsReadParams

MiB = 2**20
GiB = 2**30
LIB = Path(__file__).resolve().parents[1] / "scenarios" / "library" / "gds"


def _system(drives: int, gpus: int, gpu: str = "nvidia-l40s") -> SystemConfig:
    return SystemConfig.model_validate({
        "server": {"cpu": {"base": "amd-epyc-9654", "cores": 64}, "sockets": 2, "memory": "768 GB"},
        "gpus": {"model": gpu, "count": gpus},
        "storage": {"kind": "raid", "level": 0, "device": "solidigm-d7-ps1010", "count": drives, "stripe_unit": "512 KiB"},
    })


def _link_Bps(gpu: str) -> float:
    spec = catalog.spec_from("gpu", gpu)
    return link_payload_Bps(spec.link) * spec.copy_efficiency  # type: ignore[attr-defined]


@settings(max_examples=8, deadline=None)
@given(gpus=st.integers(1, 4), drives=st.integers(1, 4), threads=st.sampled_from([1, 4, 16]),
       block=st.sampled_from([1 * MiB, 8 * MiB]))
def test_several_gpus_stay_under_every_resources_capacity_and_more_gpus_never_read_less(gpus, drives, threads, block):
    """Bottleneck law: the aggregate is at most the GPUs' links together and the drives' ceilings together;
    closed-network monotonicity: one more GPU's threads never lower the aggregate."""
    system = _system(drives, 4)
    params = GdsReadParams(block_size=block, threads=threads, gpus=gpus, size_per_thread=32 * MiB)
    got = simulate(system, params, seed=1).metrics["bandwidth_MB_per_second"] * 1e6
    ssd = catalog.spec_from("ssd", "solidigm-d7-ps1010")
    drives_Bps = drives * read_throughput_Bps(ssd, min(block, 512 * 1024), "seq")  # type: ignore[arg-type]
    assert got <= min(gpus * _link_Bps("nvidia-l40s"), drives_Bps) * (1 + 1e-6)
    if gpus < 4:
        more = simulate(system, params.model_copy(update={"gpus": gpus + 1}), seed=1).metrics["bandwidth_MB_per_second"] * 1e6
        assert more >= got * (1 - 1e-9)


def test_links_in_parallel_add_up_when_the_drives_do_not_bind():
    """Two L4 links (Gen4 x16 each) behind four Gen5 drives (~54 GiB/s): no shared bottleneck, so two GPUs read
    twice one GPU's link rate, and one GPU exactly its own."""
    system = _system(4, 2, gpu="nvidia-l4")
    one = simulate(system, GdsReadParams(block_size=8 * MiB, threads=32, size_per_thread=256 * MiB), seed=1).metrics
    two = simulate(system, GdsReadParams(block_size=8 * MiB, threads=32, gpus=2, size_per_thread=256 * MiB), seed=1).metrics
    assert one["bandwidth_MB_per_second"] * 1e6 == pytest.approx(_link_Bps("nvidia-l4"), rel=1e-6)
    assert two["bandwidth_MB_per_second"] == pytest.approx(2 * one["bandwidth_MB_per_second"], rel=1e-6)
    assert two["drive_requests"] == 64 and two["latency_mean_us"] * 1e-6 == pytest.approx(64 / two["iops"], rel=1e-9)  # Little


def test_more_gpus_than_the_system_has_is_refused_naming_the_field():
    with pytest.raises(WorkloadConfigError, match=r"workload\.gpus: expected at most 1 .* found 2"):
        simulate(_system(1, 2), GdsReadParams(gpu=1, gpus=2), seed=1)


def test_the_gds_benchmark_rows_on_four_ps1010_and_l40s():
    """Published rows used in no fit (gds-bench.farmgpu.net gdsio page: one L40S 24.3 GiB/s, four at once
    53.0 GiB/s, 8 MiB, 4 workers per GPU): one GPU is held by its link, four by the drives (asserted), and each
    row lands within 10 %."""
    scenario = LIB / "gdsbench_l40s_ps1010_raid0.yaml"
    ssd = catalog.spec_from("ssd", "solidigm-d7-ps1010")
    for gpus, published, bound in ((1, 24.3, _link_Bps("nvidia-l40s")),
                                   (4, 53.0, 4 * read_throughput_Bps(ssd, 512 * 1024, "seq"))):  # type: ignore[arg-type]
        doc, _ = run_scenario(load(scenario, [f"workload.gpus={gpus}", "workload.size_per_thread=256 MiB"]))
        got = doc["metrics"]["bandwidth_GiB_per_second"]
        assert got * GiB == pytest.approx(bound, rel=0.02)
        assert got == pytest.approx(published, rel=0.10)
