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
       cap=st.sampled_from([1, 2, 8]), count=st.sampled_from([1, 2]))
def test_path_cap_limits_requests_in_flight_per_drive(block_k, threads, cap, count):
    """Little's law with N capped: N = min(threads, drives x cap), X = min(N block / L0, drive ceilings, GPU link)."""
    block = block_k * 1024
    device = "solidigm-d5-p5336"
    p = GdsReadParams(block_size=block, threads=threads, size_per_thread=32 * 2**20, p2p_requests_per_drive=cap)
    m = simulate(_system(device, count=count), p, seed=1).metrics
    spec = catalog.spec_from("ssd", device)
    gpu = catalog.spec_from("gpu", "nvidia-l4")
    per_drive_block = max(block / count, 4096.0) if count > 1 else block  # a striped request waits for its slowest piece
    n = min(threads, count * cap)
    expected = min(n * block / _l0(spec, per_drive_block), count * read_throughput_Bps(spec, per_drive_block, "seq"),
                   link_payload_Bps(gpu.link) * gpu.copy_efficiency)
    assert m["bandwidth_MB_per_second"] * 1e6 == pytest.approx(expected, rel=1e-6)
    assert m["latency_mean_us"] * 1e-6 == pytest.approx(threads / m["iops"], rel=1e-9)  # Little's law over all threads


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


def test_storagereview_gdsio_rows():
    """Published (StorageReview, Scaling AI Checkpoints; gdsio into an L4, 1 MiB, IO depth 128): D5-P5336 4.2 GiB/s,
    D7-PS1010 6.2 GiB/s.  One platform window for both drives; each must land within 10 %, and the prediction must
    be each drive's QD1 1 MiB rate from its datasheet latency law (the mechanism, checked by hand)."""
    from pathlib import Path

    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    lib = Path(__file__).resolve().parents[1] / "scenarios" / "library" / "storagereview"
    rows = []
    for name, device, published in (("p5336", "solidigm-d5-p5336", 4.2), ("ps1010", "solidigm-d7-ps1010", 6.2)):
        doc, _ = run_scenario(load(lib / f"gdsio_l4_{name}.yaml"))
        got = doc["metrics"]["bandwidth_GiB_per_second"]
        hand = 2**20 / _l0(catalog.spec_from("ssd", device), 2**20) / GiB
        rows.append((name, got, published))
        assert got == pytest.approx(hand, rel=1e-6)
        assert got == pytest.approx(published, rel=0.10)
    print("\ngdsio 1 MiB into L4: " + ", ".join(f"{n} {g:.2f} GiB/s (published {p})" for n, g, p in rows))
