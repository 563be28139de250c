"""Arrays as closed queueing networks (models.closed_network, simulator.storage.member_law).

Oracles: the exact MVA recursion for fixed-rate stations (Reiser & Lavenberg 1980), and per-request
SimPy runs of N requests over n drives placed at random (tests/queueing_oracle.per_request_array):
SSD-like drives of c flash units each behind an NCQ queue limit, and disk-like drives that fix each
command's service when it starts from the commands they hold (models.hdd's reordering).
"""

from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest
import simpy
from hypothesis import example, given, settings
from hypothesis import strategies as st
from iowatt.models import hdd
from iowatt.models.closed_network import Delay, Station, solve, throughput_curve
from iowatt.models.fork_join import expected_max
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.per_request.latency import read_sigma
from iowatt.simulator.storage import Access, ConcurrencyLaw, Drive, Usage
from iowatt.simulator.storage.member_law import MemberLoad, volume_loop
from iowatt.simulator.system import SystemConfig, SystemRuntime
from queueing_oracle import per_request_array, per_request_fork_join

B = 131072.0


def exact_mva(demands: list[float], think_s: float, n: int) -> float:
    """Reiser & Lavenberg's recursion for single-server stations and a delay."""
    queue = [0.0] * len(demands)
    x = 0.0
    for m in range(1, n + 1):
        residence = [d * (1.0 + q) for d, q in zip(demands, queue, strict=True)]
        x = m / (think_s + sum(residence))
        queue = [x * r for r in residence]
    return x


@settings(max_examples=20, deadline=None)
@given(demands=st.lists(st.floats(1e-4, 1e-1), min_size=1, max_size=4), think=st.floats(0.0, 0.2), n=st.integers(1, 300))
def test_convolution_matches_the_mva_recursion(demands: list[float], think: float, n: int):
    """Oracle: exact MVA.  The log-domain convolution must agree to round-off at any population."""
    stations = tuple(Station(f"s{i}", (1.0 / d,)) for i, d in enumerate(demands))
    delays = (Delay("z", think),) if think > 0 else ()
    x = solve(stations, delays, n).throughput
    assert x == pytest.approx(exact_mva(demands, think, n), rel=1e-9)
    curve = throughput_curve(stations, delays, n)
    assert curve[-1] == pytest.approx(x, rel=1e-9)


def test_balanced_flash_units_give_the_ssd_law_over_the_array():
    """Oracle: n drives of c balanced units, random placement, are n x c balanced units: MVA gives
    R(N) = L0 + (N - 1) S / n exactly (models.ssd's law with n times the units)."""
    l0, s, n = 381e-6, 243e-6, 16
    rates = tuple(k / (l0 + (k - 1) * s) for k in range(1, 129))
    for clients in (1, 2, 32, 128):
        x = solve((Station("d", rates, 1 / n, n),), (), clients).throughput
        assert x == pytest.approx(clients / (l0 + (clients - 1) * s / n), rel=1e-9)


class _LawDrive(Drive):
    """A drive given by its law alone: c units of L0 (SSD-like), or one actuator whose service at depth k
    is service_s[k - 1] (disk-like), behind an optional queue limit."""

    def __init__(self, engine: FlowEngine, name: str, l0: float, units: int, limit: int | None, service_s: list[float] | None) -> None:
        self.name, self.spec = name, None  # type: ignore[assignment]
        self.l0, self.units_, self.limit, self.service_s = l0, units, limit, service_s
        self.arm = engine.constraint(f"{name}.arm", 1.0)

    def usage(self, access: Access, share: float = 1.0) -> Usage:
        if self.service_s is None:
            return []
        k = min(int(access.queue_depth), len(self.service_s))
        return [(self.arm, share * self.service_s[k - 1] / access.block_bytes)]

    def qd1_latency_s(self, access: Access) -> float:
        return self.l0 if self.service_s is None else self.service_s[0]

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        if self.service_s is None:
            return ConcurrencyLaw(self.l0, self.l0 / self.units_, self.limit, units=True)
        return ConcurrencyLaw(self.service_s[0], 0.0, self.limit)

    @property
    def queue_limit(self) -> int | None:
        return self.limit

    @property
    def fill(self) -> float:
        return 0.0


def _array_law(n: int, clients: int, **drive: object) -> tuple[float, float]:
    engine = FlowEngine(simpy.Environment())
    spec = object()
    drives = []
    for i in range(n):
        d = _LawDrive(engine, f"d{i}", **drive)  # type: ignore[arg-type]
        d.spec = spec  # type: ignore[assignment]
        drives.append(d)
    access = Access("read", B, "rand", clients)
    load = MemberLoad(1.0, 1.0, tuple([1.0 / n] * n), ((access.with_(queue_depth=1.0), 1.0),))
    loop = volume_loop(drives, load, access, drives[0].qd1_latency_s(access))
    x = loop.law.requests_per_second(clients)
    return x, clients / x


@settings(max_examples=4, deadline=None)
@given(n=st.integers(1, 24), clients=st.integers(1, 128), units=st.integers(1, 4), sata=st.booleans())
@example(n=17, clients=52, units=4, sata=False)  # read +5.2 % while the oracle counted its drain (queueing_oracle.closed_loop)
def test_ssd_array_law_matches_per_request_simulation(n: int, clients: int, units: int, sata: bool):
    """Oracle: per-request SimPy, random placement over n drives of `units` flash units behind 32 NCQ
    slots (or none).  Throughput and mean latency within 5 % (the oracle's own spread: 1.3 % sd at
    52 clients over 17 drives of 4 units, 12000 requests)."""
    l0 = 1e-3
    limit = 32 if sata else None
    x, r = _array_law(n, clients, l0=l0, units=units, limit=limit, service_s=None)
    sim_x, sim_r = per_request_array(clients, n, l0, units=units, queue_limit=limit, requests=max(12000, 200 * clients), seed=n + clients)
    assert x == pytest.approx(sim_x, rel=0.05)
    assert r == pytest.approx(sim_r, rel=0.05)


@settings(max_examples=4, deadline=None)
@given(n=st.integers(1, 24), clients=st.integers(1, 128), gain=st.floats(0.2, 0.7))
def test_disk_array_law_matches_per_request_simulation(n: int, clients: int, gain: float):
    """Oracle: per-request SimPy of n one-actuator drives whose command's service is fixed when it starts
    by the number the drive then holds (reordering gain `gain` at depth -> infinity)."""
    service = [10e-3 * ((1 - gain) + gain / math.sqrt(k)) for k in range(1, 129)]
    x, r = _array_law(n, clients, l0=service[0], units=1, limit=None, service_s=service)
    sim_x, sim_r = per_request_array(clients, n, 1.0, service_at_depth=service, requests=max(12000, 200 * clients), seed=3 * n + clients)
    assert x == pytest.approx(sim_x, rel=0.05)
    assert r == pytest.approx(sim_r, rel=0.05)


def test_hdd_raid5_random_reads_match_per_request_simulation():
    """Oracle: per-request SimPy of 16 disks with models.hdd's own service time at each depth (the same
    disk and file span as the AMAX array scenario), fio's randread 128 KiB at QD 32.  A command's time is a
    gamma with the disk's own spread (models.hdd.positioning_variance_seconds2: seek + rotation, squared
    coefficient of variation ~0.1-0.3, not an exponential's 1): 2712/s, the law 2807/s (+3.5 %, Marie's
    decomposition; with exponential commands the oracle gave 2432/s)."""
    engine = FlowEngine(simpy.Environment())
    system = SystemRuntime(engine, SystemConfig.model_validate(
        {"storage": {"kind": "raid", "level": 5, "count": 16, "device": "hdd-7200rpm-sas-8tb"}}))
    volume = system.volume
    volume.occupy(1000 * 2**30 / volume.capacity_bytes)
    access = Access("read", B, "rand", 32)
    x = volume.concurrency(access).requests_per_second(32)
    drive = volume.drives[0]
    service = [float(hdd.random_service_seconds(drive.spec, B, k, drive.span_fraction)) for k in range(1, 33)]  # type: ignore[arg-type,attr-defined]
    scv = [hdd.positioning_variance_seconds2(drive.spec, k, drive.span_fraction) / s**2 for k, s in enumerate(service, 1)]  # type: ignore[arg-type,attr-defined]
    sim_x, sim_r = per_request_array(32, 16, 1.0, service_at_depth=service, requests=40000, seed=5, service_scv=scv)
    assert x == pytest.approx(sim_x, rel=0.05)
    assert 32 / x == pytest.approx(sim_r, rel=0.05)


def test_members_hold_the_balls_in_bins_share_not_n_over_drives():
    """Oracle: with drives that never queue (many units), the pieces at a drive are Binomial(N, 1/n):
    the mean held when busy is N/n / (1 - (1 - 1/n)^N)."""
    n, clients = 16, 32
    rates = tuple(k / 1e-3 for k in range(1, clients + 1))
    sol = solve((Station("drives", rates, 1 / n, n),), (), clients)
    busy = 1 - (1 - 1 / n) ** clients
    assert sol.occupied["drives"] == pytest.approx(busy, rel=1e-9)
    assert sol.busy_queue["drives"] == pytest.approx(clients / n / busy, rel=1e-9)


def test_raid5_small_write_holds_two_phases_at_queue_depth_one():
    """Oracle: md's read-modify-write reads old data and parity, then writes both: at QD 1 the request
    takes the read's latency plus the write's (two phases), each the slower of two pieces whose times are
    lognormal of mean one and log-spread sigma: E[max of two] = 2 Phi(sigma / sqrt 2) (order statistics of
    the lognormal); and the law starts there."""
    engine = FlowEngine(simpy.Environment())
    system = SystemRuntime(engine, SystemConfig.model_validate(
        {"storage": {"kind": "raid", "level": 5, "count": 8, "device": "micron-7450-pro"}}))
    volume = system.volume
    w = Access("write", 4096, "rand", 1)
    drive = volume.drives[0]
    sigma = read_sigma(drive.spec)[0]
    slower_of_two = 2.0 * NormalDist().cdf(sigma / math.sqrt(2.0))
    expected = (drive.qd1_latency_s(w) + drive.qd1_latency_s(w.with_(op="read"))) * slower_of_two
    assert volume.qd1_latency_s(w) == pytest.approx(expected)
    law = volume.concurrency(w)
    assert law.requests_per_second(1) == pytest.approx(1 / expected)
    load = volume.member_load(w)
    assert load.pieces == 4 and load.width == 2


def test_more_requests_in_flight_never_slower_and_never_above_the_members():
    """Monotone in N (closed networks with non-decreasing rates are, Lazowska ch. 8) and bounded by n
    drives at their ceiling."""
    engine = FlowEngine(simpy.Environment())
    system = SystemRuntime(engine, SystemConfig.model_validate(
        {"storage": {"kind": "raid", "level": 5, "count": 16, "device": "micron-5210-ion"}}))
    volume = system.volume
    rates = [volume.concurrency(Access("read", B, "rand", q)).requests_per_second(q) for q in (1, 2, 4, 8, 16, 32, 64, 128)]
    assert all(b >= a * (1 - 1e-9) for a, b in itertools.pairwise(rates))
    drive = volume.drives[0]
    one = drive.concurrency(Access("read", B, "rand", 32)).requests_per_second(32)
    assert rates[-1] <= 16 * 1.0 / drive.concurrency(Access("read", B, "rand")).queue_seconds + 1e-6
    assert rates[5] < 16 * one  # QD 32 over 16 drives is not 16 drives at QD 32
    assert np.isfinite(rates).all()


def _fork_join_law(n: int, units: int, width: int, phases: int, clients: int, sigma: float) -> tuple[float, float]:
    engine = FlowEngine(simpy.Environment())
    spec = object()
    drives = []
    for i in range(n):
        d = _LawDrive(engine, f"d{i}", l0=1e-3, units=units, limit=None, service_s=None)
        d.spec = spec  # type: ignore[assignment]
        drives.append(d)
    access = Access("read", B, "rand", clients)
    load = MemberLoad(float(width * phases), float(width), tuple([1.0 / n] * n), ((access.with_(queue_depth=1.0), 1.0),))
    qd1 = phases * 1e-3 * expected_max(width, 0.0, sigma)
    x = volume_loop(drives, load, access, qd1, spread=sigma).law.requests_per_second(clients)
    return x, clients / x


@settings(max_examples=6, deadline=None)
@given(n=st.integers(4, 24), units=st.integers(1, 8), width=st.integers(2, 4), phases=st.integers(1, 2),
       clients=st.integers(32, 64))
@example(n=4, units=1, width=4, phases=1, clients=32)  # the heaviest pieces per unit of the measured sweep
def test_array_requests_wait_for_their_slowest_member(n: int, units: int, width: int, phases: int, clients: int):
    """Oracle: per-request SimPy of n drives of `units` processor-sharing flash units (the per-request mode's
    units), each request's `width` pieces on consecutive drives, done when the last is (a RAID 5 small write:
    two pieces, two phases).  The members' fork-join loop (member_law.fork_join_loop) is an approximation,
    pessimistic at light load with several pieces (its M/M/1-PS variance counts arrivals during a piece's stay
    as an open stream would); from 32 requests in flight it is within 8 % in throughput and mean latency
    (measured 2026-11-28 over n 4..16, units 1..8, width 2..4, phases 1..2: 16 requests -7.3..+1.0 % in
    throughput, +7.8 % at most in latency; 32 and 64 within 5 %).  Lighter loads: the known miss below."""
    width = min(width, n)
    x, r = _fork_join_law(n, units, width, phases, clients, 0.25)
    sim_x, sim_r = per_request_fork_join(clients, n, units, 1e-3, width, phases, 0.25, requests=max(12000, 200 * clients),
                                         seed=n + clients)
    assert x == pytest.approx(sim_x, rel=0.08)
    assert r == pytest.approx(sim_r, rel=0.08)


@pytest.mark.xfail(strict=False, reason=(
    "known miss: at light load (2-8 requests in flight, one or two units a drive, three or four pieces a request) the "
    "members' fork-join law (member_law.fork_join_loop, the open M/M/1-PS delay) is pessimistic by up to 22 % in "
    "throughput and 28 % in mean latency against the per-request oracle (324 cases measured 2026-11-28); the closed "
    "loop's occupation law that striped SSD volumes use (models.ps_occupation) is not applied to RAID members"))
@pytest.mark.parametrize(("n", "units", "width", "clients"), [(5, 1, 3, 2), (4, 1, 4, 2), (8, 2, 4, 4)])
def test_array_fork_join_at_light_load(n: int, units: int, width: int, clients: int):
    """Oracle: the same per-request SimPy as above, at the light loads where the law is known to miss."""
    x, r = _fork_join_law(n, units, width, 1, clients, 0.25)
    sim_x, sim_r = per_request_fork_join(clients, n, units, 1e-3, width, 1, 0.25, requests=12000, seed=n + clients)
    assert x == pytest.approx(sim_x, rel=0.08)
    assert r == pytest.approx(sim_r, rel=0.08)
