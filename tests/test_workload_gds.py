"""gds_read (gdsio-style): bounded by min(drive, GPU link); Little's law at low concurrency."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import catalog
from iowatt.models.links import link_payload_Bps
from iowatt.models.ssd import read_stream_Bps, read_throughput_Bps
from iowatt.simulator.run import simulate
from iowatt.simulator.system import SystemConfig
from iowatt.simulator.workloads.gds_read import GdsReadParams

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


# ----------------------------------------------------------------------------- the platform's P2P path cap


@settings(max_examples=30, deadline=None)
@given(block_k=st.sampled_from([8, 64, 256, 512, 1024]), threads=st.sampled_from([1, 4, 16, 128]),
       cap=st.sampled_from([1, 2, 8]), count=st.sampled_from([1, 2]), device=st.sampled_from(["solidigm-d5-p5336", "solidigm-d7-ps1010"]))
def test_a_window_of_c_requests_per_drive_behaves_as_that_many_threads(block_k, threads, cap, count, device):
    """Oracle: the population constraint of a closed queueing network.  A window that admits at most `cap` requests per
    drive in front of T threads, with no service time of its own, leaves min(T, drives x cap) requests at the drives,
    so the run must equal an independent run of that many threads without a window (and Little's law holds overall)."""
    block = block_k * 1024

    def run(n: int, window: int | None) -> dict:
        p = GdsReadParams(block_size=block, threads=n, size_per_thread=32 * 2**20, p2p_requests_per_drive=window)
        return simulate(_system(device, count=count), p, seed=1).metrics

    capped = run(threads, cap)
    free = run(min(threads, count * cap), None)
    assert capped["bandwidth_MB_per_second"] == pytest.approx(free["bandwidth_MB_per_second"], rel=1e-9)
    assert capped["latency_mean_us"] * 1e-6 == pytest.approx(threads / capped["iops"], rel=1e-9)  # Little's law over all threads


@settings(max_examples=25, deadline=None)
@given(block_k=st.sampled_from([8, 128, 1024]), threads=st.sampled_from([1, 8, 128]), caps=st.tuples(
    st.sampled_from([1, 4, 32]), st.sampled_from([1, 4, 32])))
def test_a_looser_cap_is_never_slower(block_k, threads, caps):
    small, large = sorted(caps)

    def bw(cap):
        p = GdsReadParams(block_size=block_k * 1024, threads=threads, size_per_thread=16 * 2**20, p2p_requests_per_drive=cap)
        return simulate(_system(), p, seed=1).metrics["bandwidth_MB_per_second"]

    assert bw(small) <= bw(large) * (1 + 1e-9) <= bw(None) * (1 + 1e-9)


def test_capped_sweep_tops_at_the_largest_block():
    """With one request per drive, X = block / L0(block) rises with the block (L0 = a + block / c): the sweep's
    maximum is at 1 MiB, where the study reports its top figures."""
    r = simulate(_system(), GdsReadParams(sweep=True, size_per_thread=2**24, p2p_requests_per_drive=1), seed=1)
    rows = r.detail["sweep"]["rows"]
    best = max(rows, key=lambda row: row[2])
    assert best[0] == 2**20
    assert r.metrics["sweep_max_bandwidth_GiB_per_second"] == pytest.approx(best[2])
