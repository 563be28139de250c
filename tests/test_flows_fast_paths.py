"""The flow engine's fast paths against its reference paths (issues 8 and 33).

simulator/maxmin.py allocates large components with numpy (`_progressive_filling_vector`),
and simulator/flows.py holds large components as classes of symmetric flows
(simulator/flow_classes.py) kept up to date across starts and ends instead of searching
the graph again.  Oracle: the per-flow engine (`_progressive_filling_scalar`, a fresh
breadth-first search at every change) on the same inputs.  The fast paths are forced on
small random networks by lowering VECTOR_MIN_FLOWS and the engine's class_min_flows to 1,
so every component takes them.
"""

from __future__ import annotations

import iowatt.simulator.flows as flows
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


def _run(specs, caps, fast: bool, monkeypatch, probes=(), metered: int | None = None) -> tuple[dict[str, float], FlowEngine]:
    """Run the flows; with `probes`, each flow's rate and remainder at those instants lands in finish[(name, t)].
    A meter reads the first `metered` constraints (all by default)."""
    monkeypatch.setattr(maxmin, "VECTOR_MIN_FLOWS", 1 if fast else 10**9)
    env = simpy.Environment()
    engine = FlowEngine(env)
    engine.class_min_flows = 1 if fast else float("inf")
    constraints = [engine.constraint(f"c{i}", cap) for i, cap in enumerate(caps)]
    engine.meter("m", 1.0, [(c, 0.5) for c in constraints[:metered]])
    finish: dict = {}
    flows: dict[str, Flow] = {}

    def one(name, amount, coeffs, start, weight, max_rate):
        yield env.timeout(start)
        usage = [(constraints[c] if isinstance(c, int) else engine.constraint(f"{name}.{c}", k[1]), k if isinstance(c, int) else k[0])
                 for c, k in coeffs.items()]
        flow = flows[name] = engine.start(name, amount, usage, weight=weight, max_rate=max_rate)
        yield flow.done
        finish[name] = env.now

    def probe(t):
        yield env.timeout(t)
        for name, f in flows.items():
            # a flow allocated alone keeps its remainder as of its last change; a classed one reads it as of now
            behind = f.rate * (env.now - f.last_time) if f.group is None else 0.0
            finish[(name, t)] = (f.rate, f.remaining - behind) if f.end_time is None else (0.0, 0.0)

    if fast:
        original = engine._run_batch

        def checked(event):
            original(event)
            # every classed component must be exactly the component a fresh search finds
            comps = {c.component for c in engine.constraints.values() if c.component is not None}
            for comp in comps:
                members = set(comp.flows())
                seed = next(iter(members))
                comp_f, comp_c = engine._component([seed], [], set(), set())
                assert set(comp_f) == members and set(comp_c) == set(comp.constraints)
                assert comp.count == len(members)

        engine._run_batch = checked  # type: ignore[method-assign]
    for spec in specs:
        env.process(one(*spec))
    for t in probes:
        env.process(probe(t))
    run_until_idle(env, engine)
    return finish, engine


def _same(slow: dict, fast: dict) -> None:
    assert slow.keys() == fast.keys()
    for name, t in slow.items():
        if isinstance(t, tuple):
            if any(abs(run[name[0]] - name[1]) <= 1e-9 * max(name[1], 1.0) for run in (slow, fast)):
                continue  # the flow ends at the probe's instant: which of the two runs first is a rounding's choice
            for a, b in zip(fast[name], t, strict=True):
                assert abs(a - b) <= 1e-9 * max(abs(b), 1.0), name
        else:
            assert abs(fast[name] - t) <= 1e-9 * max(t, 1.0), name


@given(networks())
@settings(max_examples=40, deadline=None)
def test_cached_components_and_vector_rates_reproduce_the_reference_engine(net):
    from _pytest.monkeypatch import MonkeyPatch

    caps, specs, _ = net
    with MonkeyPatch.context() as mp:
        slow, slow_engine = _run(specs, caps, False, mp, probes=(0.5, 3.0, 7.0))
    with MonkeyPatch.context() as mp:
        fast, fast_engine = _run(specs, caps, True, mp, probes=(0.5, 3.0, 7.0))
    _same(slow, fast)
    e_slow, e_fast = slow_engine.meters["m"].energy_J, fast_engine.meters["m"].energy_J
    assert abs(e_fast - e_slow) <= 1e-9 * max(e_slow, 1.0)


@st.composite
def clusters(draw):
    """Nodes of GPUs, each GPU's flow through its own link and its node's NIC to shared stores: the symmetric
    networks classes fold (own links as bounds, a NIC only one class crosses as a bound on its flows)."""
    n_store = draw(st.integers(1, 3))
    nodes = draw(st.integers(1, 4))
    caps = [draw(st.floats(5.0, 200.0)) for _ in range(n_store)] + [draw(st.sampled_from([10.0, 30.0, 1e3])) for _ in range(nodes)]
    specs = []
    for n in range(nodes):
        link_cap = draw(st.sampled_from([2.0, 8.0, 1e3]))
        weight = draw(st.sampled_from([1.0, 1.0, 2.0]))
        for g in range(draw(st.integers(1, 5))):
            coeffs: dict = {s: draw(st.sampled_from([0.25, 0.25, 1.0])) for s in range(n_store)}
            coeffs[n_store + n] = 1.0                # the node's NIC
            coeffs["link"] = (1.0, link_cap)         # the GPU's own link, made by _run
            amount = draw(st.sampled_from([10.0, 40.0])) * draw(st.sampled_from([1.0, 1.0, 1.7]))
            start = draw(st.sampled_from([0.0, 0.0, 1.0])) + draw(st.sampled_from([0.0, 0.0, draw(st.floats(0.0, 5.0))]))
            specs.append((f"n{n}g{g}", amount, coeffs, start, weight, draw(st.sampled_from([None, None, 3.0]))))
    return caps, specs, n_store


@given(clusters())
@settings(max_examples=60, deadline=None)
def test_flow_classes_reproduce_the_per_flow_engine_on_symmetric_networks(net):
    """Oracle: the per-flow engine (flows allocated one by one).  Rates and remainders at three instants,
    completion times and the stores' meter's energy agree to 1e-9 on cluster-like networks where classes form
    (the NICs carry no meter, so a NIC only one class crosses is folded into that class's bound)."""
    from _pytest.monkeypatch import MonkeyPatch

    caps, specs, n_store = net
    with MonkeyPatch.context() as mp:
        slow, slow_engine = _run(specs, caps, False, mp, probes=(0.3, 1.5, 6.0), metered=n_store)
    with MonkeyPatch.context() as mp:
        fast, fast_engine = _run(specs, caps, True, mp, probes=(0.3, 1.5, 6.0), metered=n_store)
    _same(slow, fast)
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
    monkeypatch.setattr(flows, "CLASS_MIN_FLOWS", float("inf"))
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
