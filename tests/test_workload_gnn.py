"""GNN (BaM/GIDS) workload: conservation, phase accounting, Little's law, monotonicity in drives, link roof."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import catalog, ssd_power
from iowatt.models.links import link_payload_Bps
from iowatt.simulator.run import simulate
from iowatt.simulator.system import SystemConfig
from iowatt.simulator.workloads.gnn import IGBH_FULL_READS_PER_ITERATION, GnnParams


def _system(device: str = "micron-9550-pro", count: int = 1) -> SystemConfig:
    return SystemConfig.model_validate(
        {
            "server": {"cpu": "intel-xeon-8568y-plus", "sockets": 2, "memory": "1.5 TiB"},
            "gpus": {"model": "nvidia-h100-nvl", "count": 1},
            "storage": {"device": device, "count": count},
        }
    )


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 4096), fanout=st.lists(st.integers(1, 15), min_size=1, max_size=3),
       hit=st.floats(0, 0.9), dim=st.sampled_from([128, 256, 1024]), iters=st.integers(1, 20))
def test_bytes_read_equal_unique_nodes_times_feature_size(batch, fanout, hit, dim, iters):
    p = GnnParams(dataset="custom", batch_size=batch, fanout=fanout, cache_hit_ratio=hit, feature_dim=dim, iterations=iters, io_size=512)
    m = simulate(_system(), p, seed=1).metrics
    sampled = batch
    frontier = batch
    for f in fanout:
        frontier *= f
        sampled += frontier
    unique = min(sampled * 0.9, 547e6) * (1 - hit)
    assert m["features_read_GB"] * 1e9 == pytest.approx(iters * unique * dim * 4, rel=1e-9)
    assert m["sampling_seconds"] + m["aggregation_seconds"] + m["training_seconds"] == pytest.approx(m["completion_time_seconds"], rel=1e-9)


def test_igbh_full_reads_match_the_gids_log():
    """Preset: 48,828,950 page reads of 4 KiB per 100 iterations (GIDS_IGBH.txt)."""
    m = simulate(_system(), GnnParams(), seed=1).metrics
    assert m["ssd_reads"] == pytest.approx(100 * IGBH_FULL_READS_PER_ITERATION, rel=1e-12)
    assert m["features_read_GB"] == pytest.approx(48_828_950 * 4096 / 1e9, rel=1e-12)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), extra=st.integers(1, 4), device=st.sampled_from(["micron-9550-pro", "kioxia-cm7-r", "samsung-pm1743"]))
def test_more_ssds_never_slow_aggregation(n, extra, device):
    t = [simulate(_system(device, k), GnnParams(iterations=5), seed=1).metrics["aggregation_seconds"] for k in (n, n + extra)]
    assert t[1] <= t[0] * (1 + 1e-9)


def _law_iops(device: str, n: float) -> float:
    """Oracle: the concurrency law N / (L0 + (N - 1) S), S = 1 / the 4 KiB ceiling (models.ssd docstring)."""
    spec = catalog.spec_from("ssd", device)
    return n / (spec.read_latency_us * 1e-6 + (n - 1) / spec.rand_read_iops)


def test_few_requests_in_flight_follow_the_concurrency_law():
    """32 requests in flight on one drive: well below the ceiling, close to N / L0 (Little's law) but lower:
    requests collide on the drive's c = C x L0 flash units."""
    p = GnnParams(gpu_sms=1, blocks_per_sm=32, iterations=3)
    m = simulate(_system(), p, seed=1).metrics
    spec = catalog.spec_from("ssd", "micron-9550-pro")
    assert m["ssd_read_iops_aggregation"] == pytest.approx(_law_iops("micron-9550-pro", 32), rel=1e-9)
    assert m["ssd_read_iops_aggregation"] < 32 / (spec.read_latency_us * 1e-6)


def test_many_requests_in_flight_run_close_to_the_4k_ceiling():
    """GIDS keeps 132 x 32 = 4,224 pages in flight: one 9550 runs on the flat part of its knee, within 5 %
    below its 4 KiB random-read ceiling (its power stays under any cap: it has none in the catalog)."""
    m = simulate(_system(), GnnParams(iterations=3), seed=1).metrics
    spec = catalog.spec_from("ssd", "micron-9550-pro")
    assert m["ssd_read_iops_aggregation"] == pytest.approx(_law_iops("micron-9550-pro", 4224), rel=1e-9)
    assert 0.95 * spec.rand_read_iops < m["ssd_read_iops_aggregation"] < spec.rand_read_iops


@pytest.mark.parametrize("device", ["kioxia-cm7-r", "samsung-pm1743", "micron-9550-pro"])
def test_datasheet_4k_iops_fit_under_ps0_and_gids_energy_is_its_components(device):
    """Oracles: the vendors measure their 4 KiB random-read IOPS at PS0, so the component model must let them through
    (power at the datasheet IOPS below the PS0 cap: nothing throttles GIDS below the concurrency law); and energy
    conservation: the drive's energy is idle over the run, plus the busy floor over aggregation, plus the commands
    and NAND bytes read (independent sums of models.ssd_power's components, not the engine's meter)."""
    spec = catalog.spec_from("ssd", device)
    model = ssd_power.power_model(spec)
    cap = spec.power_states[0].max_W if spec.power_states else float("inf")
    assert ssd_power.busy_power_W(model, spec.rand_read_iops * 4096, 0.0, 4096) < cap
    sim = simulate(_system(device), GnnParams(iterations=3), seed=1)
    m = sim.metrics
    assert m["ssd_read_iops_aggregation"] == pytest.approx(_law_iops(device, 4224), rel=1e-9)
    reads = m["ssd_reads"]
    expected = (model.idle_W * m["completion_time_seconds"] + model.floor_W * m["aggregation_seconds"]
                + reads * (model.command_J + 4096 * model.read_J_per_byte))
    assert sim.energy["components"]["ssd0"]["energy_J"] == pytest.approx(expected, rel=1e-9)


def test_two_drives_each_hold_half_the_requests():
    """Pages are striped: each of 2 drives holds 2,112 requests, so IOPS = 2 x law(2,112) < 2 x law(4,224)."""
    m = simulate(_system(count=2), GnnParams(iterations=3), seed=1).metrics
    assert m["ssd_read_iops_aggregation"] == pytest.approx(2 * _law_iops("micron-9550-pro", 2112), rel=1e-9)
    assert m["ssd_read_iops_aggregation"] < 2 * _law_iops("micron-9550-pro", 4224)


def test_gpu_link_is_the_roof_for_many_drives():
    """Eight Gen5 drives offer more than the H100 NVL's PCIe Gen5 x16: aggregation runs at the GPU link's copy rate."""
    m = simulate(_system(count=8), GnnParams(iterations=3), seed=1).metrics
    gpu = catalog.spec_from("gpu", "nvidia-h100-nvl")
    assert m["aggregation_GB_per_second"] * 1e9 == pytest.approx(link_payload_Bps(gpu.link) * gpu.copy_efficiency, rel=1e-9)


def test_gnn_needs_a_gpu():
    from iowatt.simulator.workloads import WorkloadConfigError

    cfg = SystemConfig.model_validate({"storage": {"device": "micron-9550-pro"}})
    with pytest.raises(WorkloadConfigError, match=r"gpus\.count"):
        simulate(cfg, GnnParams(iterations=1), seed=1)


@pytest.mark.parametrize("busy", [0.0, 0.5, 1.0])
def test_gpu_energy_by_phase(busy):
    """GPU energy = idle x total + (active - idle) x (sampling + training + busy x aggregation): BaM warps poll while reads fly."""
    sim = simulate(_system(), GnnParams(iterations=4, gpu_busy_during_aggregation=busy), seed=1)
    m = sim.metrics
    gpu = catalog.spec_from("gpu", "nvidia-h100-nvl")
    expected = gpu.idle_W * m["completion_time_seconds"] + (gpu.active_W - gpu.idle_W) * (
        m["sampling_seconds"] + m["training_seconds"] + busy * m["aggregation_seconds"]
    )
    assert sim.energy["components"]["gpu0"]["energy_J"] == pytest.approx(expected, rel=1e-9)
    # by phase: the three add up to the GPU's energy; sampling and training run the GPU at its active power
    phases = [m[f"gpu_energy_{p}_J"] for p in ("sampling", "aggregation", "training")]
    assert sum(phases) == pytest.approx(sim.energy["components"]["gpu0"]["energy_J"], rel=1e-9)
    assert m["gpu_energy_sampling_J"] == pytest.approx(gpu.active_W * m["sampling_seconds"], rel=1e-9)
    assert m["gpu_energy_aggregation_J"] == pytest.approx((gpu.idle_W + busy * (gpu.active_W - gpu.idle_W)) * m["aggregation_seconds"], rel=1e-9)
