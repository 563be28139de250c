"""The flow engine against its definition: conservation, feasibility, max-min fairness, exact energy."""

from __future__ import annotations

import itertools
import math

import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.simulator.flows import Constraint, EngineError, Flow, FlowEngine, run_until_idle
from iowatt.simulator.maxmin import max_min_fair
from iowatt.simulator.per_request.networks import FlowCase, NetworkCase, run_fluid, run_per_io

# ---------------------------------------------------------------- random networks


@st.composite
def networks(draw):
    n_c = draw(st.integers(1, 5))
    caps = [draw(st.floats(0.5, 100.0)) for _ in range(n_c)]
    n_f = draw(st.integers(1, 8))
    flows = []
    for i in range(n_f):
        crossed = draw(st.lists(st.integers(0, n_c - 1), min_size=1, max_size=n_c, unique=True))
        coeffs = {c: draw(st.floats(0.1, 3.0)) for c in crossed}
        amount = draw(st.floats(1.0, 500.0))
        start = draw(st.floats(0.0, 20.0))
        weight = draw(st.sampled_from([1.0, 1.0, 2.0, 0.5]))
        max_rate = draw(st.one_of(st.none(), st.floats(0.5, 50.0)))
        flows.append((f"f{i}", amount, coeffs, start, weight, max_rate))
    return caps, flows


def _allocation_instance(caps, flows):
    constraints = [Constraint(f"c{i}", cap, index=i) for i, cap in enumerate(caps)]
    objs = []
    env = simpy.Environment()
    for index, (name, amount, coeffs, _start, weight, max_rate) in enumerate(flows):
        f = Flow(name, amount, {constraints[c]: k for c, k in coeffs.items()}, weight, max_rate, env.event(), 0.0, index)
        for c, k in f.usage.items():
            c.flows[f] = k
        objs.append(f)
    return constraints, objs


@given(networks())
@settings(max_examples=200, deadline=None)
def test_allocation_is_feasible_and_max_min_fair(net):
    """Oracle: the definition of weighted max-min fairness.

    Feasible: no constraint load exceeds capacity, no flow exceeds max_rate.
    Fair: every flow has a bottleneck: either it sits at its max_rate, or it
    crosses a saturated constraint on which its normalised rate (rate/weight)
    is the largest, so it cannot be raised without lowering a flow whose
    normalised rate is equal or smaller.
    """
    caps, flows = net
    constraints, objs = _allocation_instance(caps, flows)
    rates = max_min_fair(objs, constraints).rates
    tol = 1e-7
    for c in constraints:
        load = sum(k * rates[objs.index(f)] for f, k in c.flows.items())
        assert load <= c.capacity * (1 + tol) + tol
    for f, r in zip(objs, rates, strict=True):
        assert r > 0
        if f.max_rate is not None:
            assert r <= f.max_rate * (1 + tol)
    for f, r in zip(objs, rates, strict=True):
        if f.max_rate is not None and r >= f.max_rate * (1 - 1e-6):
            continue
        bottlenecked = False
        for c in f.usage:
            load = sum(k * rates[objs.index(g)] for g, k in c.flows.items())
            if load >= c.capacity * (1 - 1e-6):
                top = max(rates[objs.index(g)] / g.weight for g in c.flows)
                if r / f.weight >= top * (1 - 1e-6):
                    bottlenecked = True
                    break
        assert bottlenecked, f"{f.name} could be raised"


def _run_network(caps, flows, record=False):
    env = simpy.Environment()
    engine = FlowEngine(env, record=record)
    cons = [engine.constraint(f"c{i}", cap) for i, cap in enumerate(caps)]
    meter = engine.meter("m", 3.0, [(c, 0.5 + i) for i, c in enumerate(cons)])
    done: dict[str, Flow] = {}

    def proc(name, amount, coeffs, start, weight, max_rate):
        yield env.timeout(start)
        flow = engine.start(name, amount, {cons[c]: k for c, k in coeffs.items()}, weight=weight, max_rate=max_rate)
        yield flow.done
        done[name] = flow

    for spec in flows:
        env.process(proc(*spec))
    run_until_idle(env, engine)
    return env, engine, cons, meter, done


@given(networks())
@settings(max_examples=100, deadline=None)
def test_every_flow_delivers_exactly_its_amount(net):
    """Conservation: the integral of each flow's rate equals its amount (trace oracle)."""
    caps, flows = net
    _env, engine, _cons, _meter, done = _run_network(caps, flows, record=True)
    assert set(done) == {f[0] for f in flows}
    for name, amount, *_ in flows:
        steps = [(t, r) for t, n, r in engine.rate_trace if n == name]
        delivered = sum(r0 * (t1 - t0) for (t0, r0), (t1, _r1) in itertools.pairwise(steps))
        assert delivered == pytest.approx(amount, rel=1e-6)
        assert done[name].remaining == 0.0
        assert done[name].end_time >= done[name].start_time


@given(networks())
@settings(max_examples=100, deadline=None)
def test_energy_equals_integral_of_power_from_the_rate_trace(net):
    """Oracle: power rebuilt from the recorded flow rates with the meter's own law,
    idle + sum_c k_c * sum_f a_fc * r_f, integrated step by step; no meter code involved."""
    caps, flows = net
    env, engine, _cons, meter, _done = _run_network(caps, flows, record=True)
    coeff = {name: coeffs for name, _a, coeffs, *_ in flows}
    k = {i: 0.5 + i for i in range(len(caps))}
    rates: dict[str, float] = {}
    times = sorted({t for t, _n, _r in engine.rate_trace} | {0.0, env.now})
    energy = 0.0
    events = sorted(engine.rate_trace, key=lambda e: e[0])
    j = 0
    for t0, t1 in itertools.pairwise(times):
        while j < len(events) and events[j][0] <= t0:
            rates[events[j][1]] = events[j][2]
            j += 1
        power = 3.0 + sum(k[c] * a * rates.get(n, 0.0) for n, cs in coeff.items() for c, a in cs.items())
        energy += power * (t1 - t0)
    assert meter.energy_J == pytest.approx(energy, rel=1e-9, abs=1e-9)
    assert meter.energy_J >= 3.0 * env.now * (1 - 1e-12)


def test_changes_at_one_instant_are_batched_into_one_recompute():
    env = simpy.Environment()
    engine = FlowEngine(env)
    c = engine.constraint("disk", 10.0)
    for i in range(50):
        engine.start(f"f{i}", 100.0, {c: 1.0})
    run_until_idle(env, engine)
    # one batch at t=0 for 50 starts, one event when all 50 finish together, one batch to settle
    assert engine.stats.recomputes == 2
    assert engine.stats.events == 1
    assert env.now == pytest.approx(500.0)


def test_only_the_changed_component_is_recomputed():
    env = simpy.Environment()
    engine = FlowEngine(env, record=True)
    a = engine.constraint("a", 1.0)
    b = engine.constraint("b", 1.0)
    engine.start("long_on_a", 100.0, {a: 1.0})

    def later():
        for i in range(10):
            yield env.timeout(1.0)
            yield engine.start(f"short_on_b{i}", 0.5, {b: 1.0}).done

    env.process(later())
    run_until_idle(env, engine)
    # the flow on `a` kept one rate for its whole life: never touched by b's changes
    assert [r for t, n, r in engine.rate_trace if n == "long_on_a"] == [1.0, 0.0]
    assert env.now == pytest.approx(100.0)


class _Cache:
    """A write cache: fast until `size` units are absorbed, then slow (an SLC-cliff-like law)."""

    def __init__(self, size: float, slow: float) -> None:
        self.left = size
        self.slow = slow

    def advance(self, elapsed_seconds: float, load: float) -> None:
        self.left = max(0.0, self.left - load * elapsed_seconds)

    def seconds_to_breakpoint(self, load: float) -> float:
        if self.left <= 0.0 or load <= 0.0:
            return math.inf
        return self.left / load

    def on_breakpoint(self, engine: FlowEngine, constraint: Constraint) -> None:
        self.left = 0.0
        engine.set_capacity(constraint, self.slow)


def test_state_breakpoint_changes_capacity_at_the_right_instant():
    """Oracle: 300 units at 10/s for the first 100, then 2/s: 10 + 200/2 = 110 s."""
    env = simpy.Environment()
    engine = FlowEngine(env)
    c = engine.constraint("ssd.write", 10.0, dynamics=_Cache(100.0, 2.0))
    flow = engine.start("w", 300.0, {c: 1.0})
    run_until_idle(env, engine)
    assert flow.end_time == pytest.approx(110.0)
    assert engine.stats.breakpoints == 1


def test_power_cap_scales_throughput_to_fit():
    """A 10 W budget at 2 J/unit allows 5 units/s although the device could do 8."""
    env = simpy.Environment()
    engine = FlowEngine(env)
    dev = engine.constraint("dev", 8.0)
    power = engine.constraint("power", 10.0)
    meter = engine.meter("dev", 5.0, [(power, 1.0)])
    flow = engine.start("w", 100.0, {dev: 1.0, power: 2.0})
    run_until_idle(env, engine)
    assert flow.end_time == pytest.approx(20.0)
    assert meter.energy_J == pytest.approx(20.0 * 15.0)
    assert meter.peak_W == pytest.approx(15.0)


def test_bad_flows_are_refused():
    env = simpy.Environment()
    engine = FlowEngine(env)
    c = engine.constraint("c", 1.0)
    with pytest.raises(EngineError, match="amount"):
        engine.start("neg", -1.0, {c: 1.0})
    with pytest.raises(EngineError, match="infinite"):
        engine.start("free", 1.0, {})
    with pytest.raises(EngineError, match="capacity"):
        engine.constraint("bad", -1.0)


def test_zero_amount_completes_at_once():
    env = simpy.Environment()
    engine = FlowEngine(env)
    c = engine.constraint("c", 1.0)
    flow = engine.start("nothing", 0.0, {c: 1.0})
    assert flow.done.triggered and flow.end_time == 0.0


# ---------------------------------------------------------------- per-I/O cross-check


@st.composite
def shared_device_cases(draw):
    """Several streams, each behind its own link, sharing one device: the shape of
    GPUs or ranks writing to one SSD.  Amounts are >= 2,000 requests so the
    pipeline start (one request's trip through a link) and request granularity
    stay well inside the 2 % budget, as they do for real checkpoints of
    millions of requests."""
    device = draw(st.floats(5.0, 50.0))
    n = draw(st.integers(1, 4))
    caps = {"device": device}
    flows = []
    for i in range(n):
        caps[f"link{i}"] = draw(st.floats(1.0, 60.0))
        amount = draw(st.integers(2000, 4000))
        start = draw(st.sampled_from([0.0, 0.0, 5.0, 20.0]))
        flows.append(FlowCase(f"s{i}", float(amount), {f"link{i}": 1.0, "device": 1.0}, start, 1.0, 16))
    return NetworkCase(caps, flows)


@given(shared_device_cases())
@settings(max_examples=25, deadline=None)
def test_per_io_mode_agrees_with_the_fluid_model(case):
    fluid = run_fluid(case)
    per_io = run_per_io(case)
    for name, t in fluid.finish_seconds.items():
        assert per_io.finish_seconds[name] == pytest.approx(t, rel=0.02), name
