"""The engine's collector setting (flow_network.GC_YOUNG_THRESHOLD) is a speed setting only (issue 33).

Oracle: invariance.  The cyclic collector frees only unreachable objects, so when it runs cannot change what a
run computes; the same run under CPython's default threshold and under the engine's gives identical results, and
the process's own setting is back afterwards.
"""

from __future__ import annotations

import gc

import iowatt.simulator.flow_network as flow_network
import simpy
from iowatt.simulator.flows import FlowEngine, run_until_idle


def _run() -> list[tuple[str, float | None]]:
    env = simpy.Environment()
    engine = FlowEngine(env)
    hub = engine.constraint("hub", 10.0)
    flows = []

    def rank(i: int):
        yield env.timeout(0.01 * i)
        own = engine.constraint(f"own{i}", 1.0 + i % 3)
        flows.append(engine.start(f"f{i}", 5.0 + i, [(own, 1.0), (hub, 1.0)]))

    for i in range(120):  # above CLASS_MIN_FLOWS: the classed path
        env.process(rank(i))
    run_until_idle(env, engine)
    return [(f.name, f.end_time) for f in flows]


def test_results_do_not_depend_on_the_collector_threshold_and_it_is_restored(monkeypatch):
    before = gc.get_threshold()
    default = _run()
    assert gc.get_threshold() == before
    monkeypatch.setattr(flow_network, "GC_YOUNG_THRESHOLD", before[0])  # the engine leaves CPython's setting alone
    assert _run() == default
    gc.disable()
    try:
        assert _run() == default  # a caller that switched the collector off keeps it off
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_run_freezes_what_was_alive_before_it_and_thaws_it_after():
    """gc.freeze moves objects out of the collector's scans and unfreeze puts them back: results are the same, and
    the freeze count is back to what it was (0), or left alone where a caller froze objects itself."""
    baseline = _run()
    seen: list[int] = []
    with flow_network.fewer_young_collections():
        seen.append(gc.get_freeze_count())
    assert seen[0] > 0 and gc.get_freeze_count() == 0
    assert _run() == baseline and gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert _run() == baseline
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
