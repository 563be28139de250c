"""gds_read (gdsio-style): bounded by min(drive, GPU link); Little's law at low concurrency."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models import catalog
from models.links import link_payload_Bps
from models.ssd import read_stream_Bps, read_throughput_Bps
from simulator.run import simulate
from simulator.system import SystemConfig
from simulator.workloads.gds_read import GdsReadParams

GiB = 2**30


def _system(device: str = "solidigm-d7-ps1010", count: int = 1, gpu: str = "nvidia-l4") -> SystemConfig:
    return SystemConfig.model_validate(
        {
            "server": {"cpu": "intel-xeon-gold-6430", "sockets": 2, "memory": "1024 GB"},
            "gpus": {"model": gpu, "count": 1},
            "storage": {"device": device, "count": count},
        }
    )


def _l0(spec, block: float) -> float:
    """QD1 latency by hand: datasheet 4 KiB latency + the extra bytes at the drive's internal streaming rate."""
    return spec.read_latency_us * 1e-6 + max(0.0, block - 4096) / read_stream_Bps(spec)


@settings(max_examples=30, deadline=None)
@given(block_k=st.sampled_from([8, 16, 32, 64, 128, 256, 512, 1024]), threads=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128]),
       device=st.sampled_from(["solidigm-d7-ps1010", "solidigm-d5-p5336"]))
def test_bandwidth_is_min_of_concurrency_drive_and_gpu_link(block_k, threads, device):
    block = block_k * 1024
    p = GdsReadParams(block_size=block, threads=threads, size_per_thread=64 * 2**20)
    m = simulate(_system(device), p, seed=1).metrics
    spec = catalog.spec_from("ssd", device)
    gpu = catalog.spec_from("gpu", "nvidia-l4")
    gpu_link = link_payload_Bps(gpu.link) * gpu.copy_efficiency
    drive = read_throughput_Bps(spec, block, "seq")
    concurrency = threads * block / _l0(spec, block)
    bw = m["bandwidth_MB_per_second"] * 1e6
    # closed network asymptotic bound: X = min(N / L0, ceilings); PS0 caps are above the read power here
    assert bw == pytest.approx(min(concurrency, drive, gpu_link), rel=1e-6)
    assert m["latency_mean_us"] * 1e-6 == pytest.approx(threads / m["iops"], rel=1e-9)  # Little's law


def test_one_thread_sees_the_qd1_latency():
    """One request in flight: latency = L0 and IOPS = 1 / L0 (Little's law with N = 1)."""
    spec = catalog.spec_from("ssd", "solidigm-d7-ps1010")
    m = simulate(_system(), GdsReadParams(block_size=2**20, threads=1, size_per_thread=2**28), seed=1).metrics
    assert m["latency_mean_us"] * 1e-6 == pytest.approx(_l0(spec, 2**20), rel=1e-9)
    assert m["iops"] == pytest.approx(1.0 / _l0(spec, 2**20), rel=1e-9)


def test_gpu_link_binds_four_gen5_drives():
    """Four PCIe Gen5 drives outrun the L4's Gen4 x16 link: bandwidth = the link's copy rate."""
    m = simulate(_system(count=4), GdsReadParams(block_size=2**20, threads=128, size_per_thread=2**28), seed=1).metrics
    gpu = catalog.spec_from("gpu", "nvidia-l4")
    assert m["bandwidth_MB_per_second"] * 1e6 == pytest.approx(link_payload_Bps(gpu.link) * gpu.copy_efficiency, rel=1e-9)


def test_sweep_covers_the_gdsio_grid_and_its_maximum():
    m = simulate(_system(), GdsReadParams(sweep=True, size_per_thread=2**26), seed=1)
    rows = m.detail["sweep"]["rows"]
    assert len(rows) == 8 * 8
    assert {r[0] for r in rows} == {8 * 1024 * 2**k for k in range(8)}
    assert m.metrics["sweep_max_bandwidth_GiB_per_second"] == pytest.approx(max(r[2] for r in rows))
    # bandwidth never falls with more threads at a fixed block (shared ceilings, max-min fair)
    for block in {r[0] for r in rows}:
        bws = [r[2] for r in sorted((r for r in rows if r[0] == block), key=lambda r: r[1])]
        assert all(b2 >= b1 * (1 - 1e-9) for b1, b2 in itertools.pairwise(bws))
