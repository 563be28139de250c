"""SSD and NAND laws against their oracles (theory, a small greedy-GC simulation, datasheet points)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import catalog, links, nand, ssd, ssd_power, ssd_states
from iowatt.models.links import LinkSpec, link_payload_Bps
from iowatt.models.ssd import SSDSpec
from iowatt.simulator.flows import FlowEngine, run_until_idle
from iowatt.simulator.storage import Access, FileWrite
from iowatt.simulator.storage.ssd import SsdDrive

from tests.queueing_oracle import law_latency, per_io_units

KiB = 1024
SPEC_6550 = catalog.spec_from("ssd", "micron-6550-ion")
SPEC_P5336 = catalog.spec_from("ssd", "solidigm-d5-p5336")
SPEC_9200 = catalog.spec_from("ssd", "micron-9200-pro")
SSD_NAMES = [e.name for e in catalog.entries() if catalog.SPEC_TYPES[e.kind] is SSDSpec]  # every SSD family


# ---------------------------------------------------------------- block-size law


@pytest.mark.parametrize("name", SSD_NAMES)
def test_block_size_law_passes_through_both_datasheet_points(name: str) -> None:
    """t(b) = t_fe + b / X: 4 KiB gives the datasheet IOPS, 128 KiB the datasheet bandwidth (unless the
    4 KiB IOPS is itself bandwidth-bound, when t_fe = 0)."""
    spec = catalog.drive_spec(name)
    t_fe, _x = ssd.two_point_fit(spec.seq_read_MBps * 1e6, spec.rand_read_iops)
    bw_128k = 1.0 / ssd.read_seconds_per_byte(spec, 128 * KiB)
    assert bw_128k == pytest.approx(spec.seq_read_MBps * 1e6, rel=1e-9)
    iops_4k = 1.0 / ssd.read_seconds_per_byte(spec, 4 * KiB) / (4 * KiB)
    if t_fe > 0:
        assert iops_4k == pytest.approx(spec.rand_read_ceiling_iops, rel=1e-9)
    else:
        assert iops_4k <= spec.rand_read_ceiling_iops * (1 + 1e-9)
    if spec.rand_read_iops_outstanding is not None and t_fe > 0:
        # the datasheet point: its IOPS at its queue depth, through the concurrency law (S08: 6550 at QD512)
        bw, _lat = ssd.closed_loop(spec, 4 * KiB, spec.rand_read_iops_outstanding, 1.0)
        assert bw / (4 * KiB) == pytest.approx(spec.rand_read_iops, rel=1e-9)
    else:
        assert spec.rand_read_ceiling_iops == spec.rand_read_iops


@pytest.mark.parametrize("name", SSD_NAMES)
def test_block_size_law_smooth_and_monotone_4k_to_1m(name: str) -> None:
    """Bandwidth rises and IOPS falls with block size, with no jump (the law is a rational function)."""
    spec = catalog.drive_spec(name)
    blocks = np.geomspace(4 * KiB, 1024 * KiB, 200)
    bw = np.array([ssd.read_throughput_Bps(spec, b) for b in blocks])
    iops = bw / blocks
    assert np.all(np.diff(bw) >= -1e-6 * bw[:-1])
    assert np.all(np.diff(iops) <= 1e-6 * iops[:-1])
    # smooth: neighbouring points on a 200-point log grid differ by little (no step)
    assert np.max(np.abs(np.diff(np.log(bw)))) < 0.05
    # and the law never exceeds the link
    assert np.all(bw <= link_payload_Bps(spec.link) * (1 + 1e-12))


# ---------------------------------------------------------------- queue depth


def _mva_units(n: int, c: int, unit_s: float) -> float:
    """Exact MVA (Reiser & Lavenberg 1980) of a closed network: c FCFS exponential units, each request
    sent to a uniformly random unit (visit ratio 1/c), no think time.  Written per station, no symmetry used."""
    visits = np.full(c, 1.0 / c)
    q = np.zeros(c)
    x = 0.0
    for k in range(1, n + 1):
        r = unit_s * (1.0 + q)  # residence per visit: own service + the queue found (arrival theorem)
        x = k / float(np.dot(visits, r))
        q = x * visits * r
    return x


def _simpy_units(n: int, c: int, unit_s: float, requests: int = 12000, seed: int = 7) -> float:
    """Per-request SimPy run of the same network: n clients, c FCFS units, exponential service, random unit."""
    return per_io_units(n, c, unit_s, requests, seed)


@pytest.mark.parametrize("c", [1, 4, 16])
def test_concurrency_law_is_the_exact_mva_of_c_random_units(c: int) -> None:
    """X(N) = N / (L0 + (N - 1) / C) with c = C x L0 units equals the per-station MVA recursion exactly."""
    l0 = 80e-6
    service = l0 / c  # 1 / C
    for n in (1, 2, 3, 7, 16, 64, 300):
        assert ssd.concurrency_throughput(l0, service, n) == pytest.approx(_mva_units(n, c, l0), rel=1e-9)


@pytest.mark.parametrize("n", [1, 4, 8, 32])
def test_concurrency_law_matches_a_per_request_simpy_run(n: int) -> None:
    """Monte Carlo oracle: requests hashed onto c = 8 units in a SimPy closed loop (12k requests, +-4 %)."""
    c, l0 = 8, 100e-6
    x = ssd.concurrency_throughput(l0, l0 / c, n)
    assert _simpy_units(n, c, l0) == pytest.approx(x, rel=0.04)


@pytest.mark.parametrize("name", ["micron-9200-pro", "micron-5210-ion", "micron-6550-ion", "micron-9550-pro"])
@pytest.mark.parametrize("block", [4 * KiB, 128 * KiB])
def test_closed_loop_applies_the_concurrency_law_to_the_drive(name: str, block: int) -> None:
    """closed_loop = N_dev / R(N_dev): the textbook MVA of m = floor(L0 / S) units of demand S and a delay L0 - m S
    (tests/queueing_oracle.law_latency), S = 1 / block-size ceiling, L0 = QD1 latency; Little's law;
    QD1 runs at 1 / L0; deep queues approach the ceiling from below (never above it)."""
    spec = catalog.drive_spec(name)
    service = block / ssd.read_throughput_Bps(spec, block)
    l0 = ssd.unloaded_latency_s(spec, block, False)
    limit = links.device_queue_limit(spec.interface)
    for n in (1, 2, 4, 8, 32, 128, 512, 4096):
        bw, lat = ssd.closed_loop(spec, block, n, 1.0)
        x = bw / block
        n_dev = n if limit is None else min(n, limit)
        assert x == pytest.approx(n_dev / law_latency(l0, service, n_dev, ssd.flash_units(spec, block)), rel=1e-9)
        assert x * lat == pytest.approx(n, rel=1e-9)  # Little's law
        assert x <= (1.0 / service) * (1 + 1e-12)
    assert ssd.closed_loop(spec, block, 1, 1.0)[0] / block == pytest.approx(1.0 / l0, rel=1e-9)
    if limit is None:
        deep = ssd.closed_loop(spec, block, 10**7, 1.0)[0] / block
        assert deep == pytest.approx(1.0 / service, rel=1e-3)


@settings(max_examples=40, deadline=None)
@given(
    l0_us=st.floats(5.0, 5000.0),
    units=st.floats(1.0, 2000.0),
    n=st.integers(1, 100_000),
    extra=st.integers(1, 1000),
)
def test_concurrency_law_monotone_in_n_and_bounded_by_the_ceiling(l0_us: float, units: float, n: int, extra: int) -> None:
    l0 = l0_us * 1e-6
    service = l0 / units
    x1, x2 = ssd.concurrency_throughput(l0, service, n), ssd.concurrency_throughput(l0, service, n + extra)
    assert x1 <= x2 * (1 + 1e-12)
    assert x2 <= (1.0 / service) * (1 + 1e-12)
    # never above the QD-limited line N / L0 either (a request can't be served faster than unloaded)
    assert x1 <= n / l0 * (1 + 1e-12)


def test_concurrency_law_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="outstanding"):
        ssd.concurrency_throughput(80e-6, 1e-6, 0)
    with pytest.raises(ValueError, match="latency"):
        ssd.loaded_latency_s(0.0, 1e-6, 4)


def test_closed_loop_qd1_latency_is_the_datasheet_latency() -> None:
    bw, lat = ssd.closed_loop(SPEC_9200, 4 * KiB, 1, 1.0)
    assert lat == pytest.approx(SPEC_9200.read_latency_us * 1e-6, rel=1e-9)
    assert bw == pytest.approx(4 * KiB / lat, rel=1e-9)


def test_mixed_read_write_is_the_harmonic_mix_of_ceilings() -> None:
    """Media time adds: t_mix = r t_read + (1 - r) t_write per byte (both fit within one device-second)."""
    spec, b = SPEC_6550, 16 * KiB
    t_r, t_w = ssd.read_seconds_per_byte(spec, b), ssd.write_seconds_per_byte(spec, b, "rand", True, 1.0)
    for r in (0.0, 0.3, 0.7, 1.0):
        mixed = 1.0 / ssd.mixed_seconds_per_byte(spec, b, r, "rand", True, 1.0)
        assert mixed == pytest.approx(1.0 / (r * t_r + (1 - r) * t_w), rel=1e-9)
    # a 70/30 mix is slower than pure reads and faster than pure writes
    assert 1 / t_w < 1.0 / ssd.mixed_seconds_per_byte(spec, b, 0.7, "rand", True, 1.0) < 1 / t_r


# ---------------------------------------------------------------- fill state: greedy GC


def greedy_gc_simulation(utilisation: float, blocks: int = 256, pages: int = 64, seed: int = 3) -> float:
    """Uniform random overwrites, greedy victim (fewest valid pages); returns NAND writes / host writes."""
    rng = np.random.default_rng(seed)
    user = int(utilisation * blocks * pages)
    where = np.full(user, -1)
    valid = np.zeros(blocks, dtype=int)
    free = list(range(1, blocks))
    open_block, used = 0, 0
    host = nand_writes = 0

    def gc() -> None:
        """Erase the closed block with the fewest valid pages; its valid pages go to the write stream."""
        candidates = valid.copy()
        candidates[open_block] = pages + 1
        victim = int(np.argmin(candidates))
        movers = np.flatnonzero(where == victim)
        valid[victim] = 0
        where[movers] = -1
        free.append(victim)
        for m in movers:
            write(int(m))

    def write(lba: int) -> None:
        nonlocal open_block, used, nand_writes
        old = where[lba]
        if old >= 0:
            valid[old] -= 1
        while used == pages:  # the open block is full: take a free block, or make one
            if free:
                open_block, used = free.pop(0), 0
            else:
                gc()
        where[lba] = open_block
        valid[open_block] += 1
        used += 1
        nand_writes += 1

    for lba in range(user):  # sequential fill
        write(lba)
    warm = 4 * user
    for i, lba in enumerate(rng.integers(0, user, 8 * user)):
        if i == warm:
            host, nand_writes = 0, 0
        host += 1
        write(int(lba))
    return nand_writes / host


@pytest.mark.parametrize("utilisation", [0.6, 0.75, 0.85])
def test_lambert_w_wa_matches_a_greedy_gc_simulation(utilisation: float) -> None:
    simulated = greedy_gc_simulation(utilisation)
    formula = nand.greedy_write_amplification(utilisation)
    print(f"\nu={utilisation}: greedy simulation WA {simulated:.3f}, Lambert-W {formula:.3f}")
    assert simulated == pytest.approx(formula, rel=0.10)


def test_wa_formula_limits() -> None:
    """WA -> 1 as u -> 0; WA ~ 1 / (2 (1 - u)) as u -> 1 (Desnoyers 2012, first-order expansion)."""
    assert nand.greedy_write_amplification(1e-4) == pytest.approx(1.0, abs=1e-3)
    u = 0.995
    assert nand.greedy_write_amplification(u) == pytest.approx(1 / (2 * (1 - u)), rel=0.05)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=1.0001, max_value=200.0))
def test_lambert_w0_matches_scipy(a: float) -> None:
    """The pure-Python W0 against scipy.special.lambertw (an independent implementation), on the
    arguments the greedy-GC law uses: z = -a exp(-a) for a = 1/utilisation > 1."""
    from scipy.special import lambertw

    z = -a * math.exp(-a)
    assert nand.lambert_w0(z) == pytest.approx(float(lambertw(z, 0).real), rel=1e-12, abs=1e-300)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=0.2, max_value=0.999))  # below, WA - 1 < 1e-6 carries too few digits to invert
def test_greedy_utilisation_inverts_the_wa_law(utilisation: float) -> None:
    """Closed-form inverse: greedy_utilisation(greedy_write_amplification(u)) == u (the law's own fixed point
    x0 = exp(-a (1 - x0)) solved for a; oracle: the forward Lambert-W form)."""
    wa = nand.greedy_write_amplification(utilisation)
    assert nand.greedy_utilisation(wa) == pytest.approx(utilisation, rel=1e-9)


def test_fresh_out_of_box_vs_steady_state() -> None:
    """FOB random writes cost only the IU read-modify-write; steady state adds greedy GC."""
    spec = SPEC_P5336
    fob = ssd.write_amplification(spec, 4 * KiB, "rand", overwrite=False)
    assert fob == spec.indirection_unit_bytes / (4 * KiB)
    steady = ssd.write_amplification(spec, 4 * KiB, "rand", overwrite=True, fill=1.0)
    assert steady > fob
    # full drive at 4 KiB reproduces the datasheet random-write IOPS (the residual k is defined by it)
    assert 1 / ssd.write_seconds_per_byte(spec, 4 * KiB, "rand", True, 1.0) / (4 * KiB) == pytest.approx(
        spec.rand_write_iops, rel=1e-6
    )
    assert ssd.write_amplification(spec, 128 * KiB, "seq") == 1.0


def test_slc_cache_shrinks_as_the_drive_fills() -> None:
    cap, op = 1e12, 0.07
    sizes = [nand.slc_cache_bytes(cap, f, op, "qlc", 0.12) for f in np.linspace(0, 1, 21)]
    assert sizes[0] == pytest.approx(0.12 * cap)
    assert all(b <= a + 1e-6 for a, b in itertools.pairwise(sizes))
    assert sizes[-1] == pytest.approx(op * cap / 4)  # only the spare area is left, one bit per QLC cell


def test_write_cliff_when_the_slc_cache_runs_out() -> None:
    """A client QLC drive (Solidigm P41 Plus 1 TB class, W05: ~3 GB/s for ~12 % of capacity, then ~262 MB/s):
    a sequential fill takes cache / slc_rate + rest / native_rate."""
    spec = SSDSpec(
        name="client-qlc", nand="qlc", capacity_TB=1.0, link=LinkSpec(kind="pcie", generation=4, lanes=4),
        seq_read_MBps=4125, seq_write_MBps=262, rand_read_iops=400000, rand_write_iops=20000,
        idle_W=0.05, active_read_W=4.0, active_write_W=4.0, over_provisioning=0.07,
        slc_cache_max_fraction=0.12, slc_write_MBps=3000,
    )
    env = simpy.Environment()
    engine = FlowEngine(env)
    drive = SsdDrive(engine, "ssd0", spec, 0, 0.0)
    amount = 0.3e12
    access = Access("write", 128 * KiB, "seq", file="fill")
    drive.store(FileWrite("fill"), amount, access)
    flow = engine.start("fill", amount, drive.usage(access))
    run_until_idle(env, engine)
    cache = 0.12e12
    expected = cache / 3000e6 + (amount - cache) / (1.0 / ssd.write_seconds_per_byte(spec, 128 * KiB))
    assert flow.end_time == pytest.approx(expected, rel=1e-3)
    assert drive.state.slc_exhausted
    assert drive.fill == pytest.approx(0.3, rel=1e-9)


# ---------------------------------------------------------------- endurance


def test_endurance_against_hand_computation() -> None:
    cap = 61.44e12
    day = 86400.0
    out = nand.endurance(cap, host_bytes=cap, nand_bytes=2 * cap, seconds=day, dwpd=0.58, warranty_years=5)
    assert out["dwpd_at_rate"] == pytest.approx(1.0)
    assert out["nand_dwpd_at_rate"] == pytest.approx(2.0)
    budget = 0.58 * cap * 365 * 5
    assert out["years_to_rated_endurance"] == pytest.approx((budget - 2 * cap) / (2 * cap * 365))


# ---------------------------------------------------------------- power states


def test_power_of_16k_random_writes_on_the_full_6550_matches_its_held_out_point() -> None:
    """Oracle: a published point used in no fit.  StorageReview (S08) measured the 6550 ION at PS1 after a 2x fill at
    17.5 W during 16 KiB random writes (1.4 GB/s); the energy per command was derived from the two *read* points and
    the program energy per byte from the 128 KiB sequential write, so this point is a prediction: a steady-state run
    must draw 17.5 W within the project's 10 % for a single value.  The component model (models.ssd_power) predicts
    19.1 W (+9 %): at WA 7.1 the drive programs 8.2 GB/s, as in the sequential write, and garbage collection's copy
    reads come on top; the measurement says they cost less than the model's 0.3 of a host read.  (Throughput, 1.15
    GB/s predicted, is not asserted here.)"""
    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    scenario = {
        "seed": 1,
        "system": {"server": {"cpu": "amd-epyc-9654", "sockets": 1, "memory": "256 GB"}, "gpus": {"count": 0},
                   "storage": {"device": "micron-6550-ion", "count": 1, "power_state": "PS1", "fill": 1.0}},
        "workload": {"kind": "fio", "rw": "randwrite", "bs": "16k", "iodepth": 256, "numjobs": 8, "size": "1000G",
                     "direct": True, "overwrite": True, "runtime": "20 s", "time_based": True},
    }
    metrics = run_scenario(load(scenario))[0]["metrics"]
    assert metrics["ssd_mean_power_W_per_drive"] == pytest.approx(17.5, rel=0.10)


def test_transition_latency_is_exit_plus_entry() -> None:
    spec = SPEC_P5336
    assert ssd_states.transition_seconds(spec, 0, 1) == pytest.approx(0.12)
    assert ssd_states.transition_seconds(spec, 1, 1) == 0.0


def test_power_state_change_stalls_the_drive_for_the_transition() -> None:
    env = simpy.Environment()
    engine = FlowEngine(env)
    drive = SsdDrive(engine, "ssd0", SPEC_P5336, 0, 0.0)
    amount = 3.3e9
    flow = engine.start("w", amount, drive.usage(Access("write", 128 * KiB, "seq")))

    def switch():
        yield env.timeout(0.5)
        yield env.process(drive.change_power_state(2))

    env.process(switch())
    run_until_idle(env, engine)
    rate0 = 1.0 / ssd.write_seconds_per_byte(SPEC_P5336, 128 * KiB)
    model = ssd_power.power_model(SPEC_P5336)
    scale = ssd_power.cap_share(model, 10.0, ssd_power.write_J_per_host_byte(model, 128 * KiB, 1.0), rate0)
    expected = 0.5 + 0.12 + (amount - 0.5 * rate0) / (rate0 * scale)
    assert flow.end_time == pytest.approx(expected, rel=1e-6)
    assert drive.meter.peak_W <= 25.0 + 1e-9


def _run_capped(spec: SSDSpec, ps: int, read_share: float, block: float, fill: float) -> tuple[float, float, float, float]:
    env = simpy.Environment()
    engine = FlowEngine(env)
    drive = SsdDrive(engine, "ssd0", spec, ps, fill)
    usage = [(c, k * read_share) for c, k in drive.usage(Access("read", block, "seq"))]
    usage += [(c, k * (1 - read_share)) for c, k in drive.usage(Access("write", block, "rand", 1, overwrite=True))]
    usage = [(c, k) for c, k in usage if k > 0]
    flow = engine.start("job", 1e9, usage)
    run_until_idle(env, engine)
    return 1e9 / flow.end_time, drive.meter.peak_W, drive.meter.energy_J, drive.cap_W or math.inf


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(["micron-6550-ion", "solidigm-d5-p5336", "micron-7450-pro"]),
    read_share=st.floats(0.0, 1.0),
    block=st.sampled_from([4 * KiB, 16 * KiB, 128 * KiB, 1024 * KiB]),
    fill=st.floats(0.05, 1.0),
)
def test_higher_power_cap_never_slower_and_power_never_above_cap(name: str, read_share: float, block: int, fill: float) -> None:
    spec = catalog.drive_spec(name)
    rates = []
    for ps in range(len(spec.power_states)):
        rate, peak, energy, cap = _run_capped(spec, ps, read_share, block, fill)
        assert peak <= cap * (1 + 1e-9)
        assert energy >= 0.0
        assert peak >= spec.idle_W
        rates.append((cap, rate))
    rates.sort()
    for (_c0, r0), (_c1, r1) in itertools.pairwise(rates):
        assert r1 >= r0 * (1 - 1e-9)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(SSD_NAMES),
    block=st.sampled_from([4 * KiB, 16 * KiB, 64 * KiB, 128 * KiB, 1024 * KiB]),
    outstanding=st.integers(1, 512),
    read_share=st.floats(0.0, 1.0),
    lanes=st.sampled_from([1, 2, 4, 8]),
)
def test_more_lanes_never_slower(name: str, block: int, outstanding: int, read_share: float, lanes: int) -> None:
    spec = catalog.drive_spec(name)
    if spec.link.kind != "pcie":
        return
    narrow = spec.model_copy(update={"link": spec.link.model_copy(update={"lanes": lanes})})
    wide = spec.model_copy(update={"link": spec.link.model_copy(update={"lanes": lanes * 2})})
    assert ssd.closed_loop(wide, block, outstanding, read_share)[0] >= ssd.closed_loop(narrow, block, outstanding, read_share)[0] * (
        1 - 1e-12
    )


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(SSD_NAMES),
    block=st.sampled_from([4 * KiB, 16 * KiB, 128 * KiB]),
    fills=st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)),
)
def test_emptier_drive_never_slower(name: str, block: int, fills: tuple[float, float]) -> None:
    spec = catalog.drive_spec(name)
    emptier, fuller = sorted(fills)
    assert ssd.write_throughput_Bps(spec, block, "rand", True, emptier) >= ssd.write_throughput_Bps(spec, block, "rand", True, fuller) * (
        1 - 1e-12
    )
