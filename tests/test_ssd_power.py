"""The component SSD power model (models.ssd_power) and the engine's busy floor.

Oracles: each drive's own published points (its sequential read and write powers are the points the model passes
through; the vendors measure their 4 KiB random-read IOPS at PS0, so those IOPS must fit under the PS0 cap); NVMe
semantics of a power state (the average power while throttled is the state's maximum power); the union of flow
lifetimes measured from the flows' own start and end times (the busy floor's energy), independent of the meter.
"""

from __future__ import annotations

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import catalog, ssd, ssd_power
from iowatt.models.ssd import SSDSpec
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario
from iowatt.simulator.flows import FlowEngine, run_until_idle

KiB = 1024
SSDS = [e for e in catalog.entries() if catalog.SPEC_TYPES[e.kind] is SSDSpec]  # every SSD family


@pytest.mark.parametrize("entry", SSDS, ids=lambda e: e.name)
def test_every_drive_passes_through_its_own_sequential_points(entry):
    """The read and write energies are what the drive's sequential-read and -write powers leave after idle, floor and
    commands: at those rates (128 KiB, WA 1) the model draws exactly those powers."""
    spec = entry.spec
    model = ssd_power.power_model(spec)
    assert ssd_power.busy_power_W(model, spec.seq_read_MBps * 1e6, 0.0, 128 * KiB) == pytest.approx(spec.active_read_W)
    assert ssd_power.busy_power_W(model, 0.0, spec.seq_write_MBps * 1e6, 128 * KiB) == pytest.approx(spec.active_write_W)
    assert model.floor_W >= 0 and model.read_J_per_byte > 0 and model.program_J_per_byte > 0


@pytest.mark.parametrize("entry", [e for e in SSDS if e.spec.power_states], ids=lambda e: e.name)
def test_datasheet_4k_random_read_iops_fit_under_the_ps0_cap(entry):
    """Vendors measure their 4 KiB random-read IOPS at PS0: the component model must let the drive reach them there
    (issue 17: the fitted energy per I/O of the CM7-R and the PM1743 held them at 2.06 M and 1.69 M)."""
    spec = entry.spec
    model = ssd_power.power_model(spec)
    power = ssd_power.busy_power_W(model, spec.rand_read_iops * 4096, 0.0, 4096)
    assert power < spec.power_states[0].max_W, f"{spec.name}: {power:.1f} W at {spec.rand_read_iops:,.0f} IOPS"


def _fio(device: str, power_state: str, rw: str) -> dict[str, float]:
    scenario = {
        "seed": 1,
        "system": {"server": {"cpu": "amd-epyc-9654", "sockets": 1, "memory": "256 GB"}, "gpus": {"count": 0},
                   "storage": {"device": device, "count": 1, "power_state": power_state}},
        "workload": {"kind": "fio", "rw": rw, "bs": "128k", "iodepth": 256, "size": "200G", "runtime": "5 s", "time_based": True},
    }
    return run_scenario(load(scenario))[0]["metrics"]


@pytest.mark.parametrize(("device", "states"), [
    ("solidigm-d5-p5336", ("PS0", "PS1", "PS2")),
    ("micron-6550-ion", ("PS1", "PS2", "PS3", "PS4", "PS5", "PS6", "PS7")),
])
def test_power_state_examples_hold_their_caps(device, states):
    """NVMe semantics (W01): a state's maximum power bounds the average power; a state below the drive's 128 KiB
    sequential-write power throttles it to run at that maximum.  No public review measured the P5336 at PS0..PS2 or the
    6550 ION below PS1, so no measured power is asserted for them here; the 6550's measured PS1 point left out of the
    model's derivation (16 KiB random writes, S08) is tests/test_ssd_laws.py's held-out check."""
    spec = catalog.drive_spec(device)
    for state in states:
        cap = spec.power_states[int(state[2:])].max_W
        power = _fio(device, state, "write")["ssd_mean_power_W_per_drive"]
        assert power <= cap * (1 + 1e-9)
        if cap < spec.active_write_W:
            assert power == pytest.approx(cap, rel=1e-6), state


def test_the_6550_at_ps1_reads_at_full_speed_under_its_cap_as_measured():
    """S08: at PS1 (20 W) the 6550 ION read 128 KiB sequentially at 12.7 GB/s drawing 17.5 W, below its cap: the cap
    must not bind at PS1 (the 17.5 W itself is the point the read energy is derived from, so it is no oracle)."""
    metrics = _fio("micron-6550-ion", "PS1", "read")
    spec = catalog.spec_from("ssd", "micron-6550-ion")
    free, _latency = ssd.closed_loop(spec, 128 * KiB, 256, 1.0)
    assert metrics["read_bw_bytes"] == pytest.approx(free, rel=1e-6)
    assert metrics["ssd_mean_power_W_per_drive"] < 20.0


@st.composite
def bursts(draw):
    return [(draw(st.floats(0.0, 20.0)), draw(st.floats(0.5, 50.0))) for _ in range(draw(st.integers(1, 6)))]


@given(bursts(), st.floats(0.1, 10.0))
@settings(max_examples=60, deadline=None)
def test_busy_floor_is_drawn_exactly_while_work_is_in_flight(jobs, floor):
    """Oracle: the union of the flows' lifetimes, from their own start and end times.  The in-flight counter's
    coefficient keeps its load >= 1 while any flow runs, so the floor is drawn over exactly that union; the meter's
    parts add up to its energy."""
    env = simpy.Environment()
    engine = FlowEngine(env)
    link = engine.constraint("link", 1.0)
    in_flight = engine.constraint("in_flight", float("inf"))
    meter = engine.meter("m", 2.0, [(link, 0.5)], busy_terms=[(in_flight, floor)], labels=("idle", "extra", "bytes", "floor"))
    flows = []

    def job(start: float, amount: float):
        yield env.timeout(start)
        f = engine.start(f"f{len(flows)}", amount, [(link, 1.0), (in_flight, 1e6)])
        flows.append(f)
        yield f.done

    for start, amount in jobs:
        env.process(job(start, amount))
    run_until_idle(env, engine)
    spans = sorted((f.start_time, f.end_time) for f in flows)
    union, end = 0.0, -1.0
    for a, b in spans:
        union += max(0.0, b - max(a, end))
        end = max(end, b)
    parts = meter.energy_by_part()
    assert parts["floor"] == pytest.approx(floor * union, rel=1e-9, abs=1e-9)
    assert parts["bytes"] == pytest.approx(0.5 * sum(amount for _s, amount in jobs), rel=1e-9)
    assert sum(parts.values()) == pytest.approx(meter.energy_J, rel=1e-12)
    assert meter.energy_J == pytest.approx(2.0 * env.now + 0.5 * sum(a for _s, a in jobs) + floor * union, rel=1e-9)
