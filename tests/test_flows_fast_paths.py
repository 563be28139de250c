"""The flow engine's fast paths against its reference paths (issue 8 performance work).

simulator/maxmin.py allocates large components with numpy (`_progressive_filling_vector`)
and simulator/flows.py keeps the latest large component up to date across starts and ends
(`component_cache.LargeComponent`) instead of searching the graph again.  Oracle: the
scalar path in the same module (`_progressive_filling_scalar`, and a fresh
breadth-first search) on the same inputs.  Both paths are forced on small
random networks by lowering VECTOR_MIN_FLOWS to 1, so every component takes
them.
"""

from __future__ import annotations

import iowatt.simulator.maxmin as maxmin
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.simulator.flows import Constraint, Flow, FlowEngine, run_until_idle


@st.composite
def networks(draw):
    n_c = draw(st.integers(1, 6))
    caps = [draw(st.floats(0.5, 100.0)) for _ in range(n_c)]
    n_f = draw(st.integers(1, 12))
    specs = []
    for i in range(n_f):
        crossed = draw(st.lists(st.integers(0, n_c - 1), min_size=1, max_size=n_c, unique=True))
        coeffs = {c: draw(st.floats(0.1, 3.0)) for c in crossed}
        amount = draw(st.floats(1.0, 500.0))
        start = draw(st.sampled_from([0.0, 0.0, 1.0, 5.0])) + draw(st.floats(0.0, 10.0))
        weight = draw(st.sampled_from([1.0, 1.0, 2.0, 0.5]))
        max_rate = draw(st.one_of(st.none(), st.floats(0.5, 50.0)))
        specs.append((f"f{i}", amount, coeffs, start, weight, max_rate))
    unlimited = draw(st.booleans())
    return caps, specs, unlimited


@given(networks())
@settings(max_examples=40, deadline=None)
def test_vector_allocation_equals_the_reference(net):
    caps, specs, unlimited = net
    caps = [0.0 if i == 1 and cap < 5.0 else cap for i, cap in enumerate(caps)]  # now and then a stalled constraint
    constraints = [Constraint(f"c{i}", cap, index=i) for i, cap in enumerate(caps)]
    if unlimited:  # a metering-only constraint, as an SSD's byte counters
        constraints.append(Constraint("meter", float("inf"), index=len(caps)))
    env = simpy.Environment()
    objs = []
    for index, (name, amount, coeffs, _start, weight, max_rate) in enumerate(specs):
        usage = {constraints[c]: k for c, k in coeffs.items()}
        if unlimited:
            usage[constraints[-1]] = 1.0
        f = Flow(name, amount, usage, weight, max_rate, env.event(), 0.0, index)
        for c, k in f.usage.items():
            c.flows[f] = k
        objs.append(f)
    expected = maxmin._progressive_filling_scalar(objs, constraints)
    out = maxmin._progressive_filling_vector(objs, constraints)
    assert out is not None
    rates, loads = out
    for r, e in zip(rates, expected, strict=True):
        assert abs(r - e) <= 1e-9 * max(abs(e), 1e-12)
    for c, load in zip(constraints, loads, strict=True):
        direct = sum(k * rates[objs.index(f)] for f, k in c.flows.items())
        assert abs(load - direct) <= 1e-9 * max(abs(direct), 1e-12)


def test_vector_path_refuses_an_unbounded_flow_like_the_reference():
    import pytest
    from iowatt.simulator.flows import EngineError

    env = simpy.Environment()
    counter = Constraint("bytes", float("inf"), index=0)
    f = Flow("free", 1.0, {counter: 1.0}, 1.0, None, env.event(), 0.0, 0)
    counter.flows[f] = 1.0
    for allocate in (maxmin._progressive_filling_scalar, lambda fl, cs: maxmin._progressive_filling_vector(fl, cs)):
        with pytest.raises(EngineError, match="'free' is unbounded"):
            allocate([f], [counter])


def test_vector_path_declines_constraints_it_cannot_index():
    # Constraint() defaults every index to 0: not a component the engine built, so the reference path must run
    env = simpy.Environment()
    a, b = Constraint("a", 1.0), Constraint("b", 2.0)
    f = Flow("f", 1.0, {a: 1.0, b: 1.0}, 1.0, None, env.event(), 0.0, 0)
    a.flows[f] = 1.0
    b.flows[f] = 1.0
    assert maxmin._progressive_filling_vector([f], [a, b]) is None


def _run(specs, caps, fast: bool, monkeypatch) -> tuple[dict[str, float], FlowEngine]:
    monkeypatch.setattr(maxmin, "VECTOR_MIN_FLOWS", 1 if fast else 10**9)
    env = simpy.Environment()
    engine = FlowEngine(env)
    constraints = [engine.constraint(f"c{i}", cap) for i, cap in enumerate(caps)]
    engine.meter("m", 1.0, [(c, 0.5) for c in constraints])
    finish: dict[str, float] = {}

    def one(name, amount, coeffs, start, weight, max_rate):
        yield env.timeout(start)
        flow = engine.start(name, amount, {constraints[c]: k for c, k in coeffs.items()}, weight=weight, max_rate=max_rate)
        yield flow.done
        finish[name] = env.now

    if fast:
        original = engine._run_batch

        def checked(event):
            original(event)
            large = engine._large
            if large is not None:
                # the cached component must be exactly the component a fresh search finds
                seed_f = [large.flows[0]] if large.flows else []
                comp_f, comp_c = engine._component(seed_f, [] if seed_f else large.constraints[:1], set(), set())
                assert comp_f == large.flows and comp_c == large.constraints
                assert large.fset == set(comp_f) and large.cset == set(comp_c)

        engine._run_batch = checked  # type: ignore[method-assign]
    for spec in specs:
        env.process(one(*spec))
    run_until_idle(env, engine)
    return finish, engine


@given(networks())
@settings(max_examples=40, deadline=None)
def test_cached_components_and_vector_rates_reproduce_the_reference_engine(net):
    from _pytest.monkeypatch import MonkeyPatch

    caps, specs, _ = net
    with MonkeyPatch.context() as mp:
        slow, slow_engine = _run(specs, caps, False, mp)
    with MonkeyPatch.context() as mp:
        fast, fast_engine = _run(specs, caps, True, mp)
    assert slow.keys() == fast.keys()
    for name, t in slow.items():
        assert abs(fast[name] - t) <= 1e-9 * max(t, 1.0), name
    # the same components are recomputed at the same instants
    assert fast_engine.stats.recomputes == slow_engine.stats.recomputes
    assert fast_engine.stats.events == slow_engine.stats.events
    e_slow, e_fast = slow_engine.meters["m"].energy_J, fast_engine.meters["m"].energy_J
    assert abs(e_fast - e_slow) <= 1e-9 * max(e_slow, 1.0)


def test_a_thousand_flows_through_one_hub_are_fair_and_conserve_bytes():
    """Oracle: processor sharing.  n equal flows started together through one
    hub of capacity C (each also crossing a private link that never binds) all
    finish at n x amount / C; the engine takes the cached, vectorised path."""
    env = simpy.Environment()
    engine = FlowEngine(env)
    hub = engine.constraint("hub", 100.0)
    n, amount = 1000, 5.0
    done = [engine.start(f"f{i}", amount, {hub: 1.0, engine.constraint(f"link{i}", 1e6): 1.0}) for i in range(n)]
    run_until_idle(env, engine)
    assert abs(env.now - n * amount / hub.capacity) <= 1e-9 * env.now
    assert all(f.end_time == env.now for f in done)
    assert engine.stats.recomputes <= 2 + n  # one allocation, then one per emptied private link


def test_cluster_benchmark_gives_the_same_answer_on_both_paths(monkeypatch):
    """Oracle: the reference path.  The row-6 cluster (every start and end reallocates all flows)
    at 96 GPUs: same simulated time, same number of allocations, same events."""
    import sys
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    sys.modules.pop("cluster", None)
    from cluster import run_cluster

    fast = run_cluster(96)
    monkeypatch.setattr(maxmin, "VECTOR_MIN_FLOWS", 10**9)
    slow = run_cluster(96)
    assert abs(fast["simulated_s"] - slow["simulated_s"]) <= 1e-9 * slow["simulated_s"]
    assert (fast["recomputes"], fast["events"], fast["concurrent_flows"]) == (slow["recomputes"], slow["events"], slow["concurrent_flows"])


def test_sync_brings_a_state_forward_to_now():
    """Oracle: a state that integrates its load (d x/dt = load) read mid-flow: 4 units/s x 10 s = 40."""

    class Integral:
        def __init__(self) -> None:
            self.x = 0.0

        def advance(self, elapsed_seconds: float, load: float) -> None:
            self.x += elapsed_seconds * load

        def seconds_to_breakpoint(self, load: float) -> float:
            return float("inf")

        def on_breakpoint(self, engine: FlowEngine, constraint: Constraint) -> None:
            raise AssertionError("no breakpoint expected")

    env = simpy.Environment()
    engine = FlowEngine(env)
    state = Integral()
    c = engine.constraint("c", 4.0, dynamics=state)
    engine.start("f", 100.0, {c: 1.0})
    seen: list[float] = []

    def probe():
        yield env.timeout(10.0)
        engine.sync(c)
        seen.append(state.x)

    env.process(probe())
    run_until_idle(env, engine)
    assert seen == [40.0]
    assert state.x == 100.0  # and the engine carries on from there: 100 units delivered in all
