"""Which of a DLIO workload's ranged fields the sampler draws: the loop the configuration runs, and no loader spread
beside a fitted loop spread that already holds it.

Oracles: the configuration the engine receives (DlioParams.resolved: a field left out of the draw must not change
it, else the sampler would hide a real unknown); the fits' own definitions (_dlio_timing: the TensorFlow and unet3d
loops are fitted on all of a step's time outside compute, hand-over and loader stalls included, so handover_seconds
or loader_cost_cv drawn beside them counts that time twice); check-machine's scenarios state their own loop, where the loader spread is
the only one and stays drawn.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.scenarios.loader import load
from iowatt.scenarios.uncertain_inputs import subject_of
from iowatt.simulator.workloads.dlio import DlioParams

LIBRARY = Path(__file__).parents[1] / "scenarios" / "library"
LOOP_FIELDS = ("step_overhead", "tf_step_overhead", "tf_step_overhead_sd", "unet3d_step_overhead", "unet3d_step_overhead_sd")


def _drawn(scenario: str) -> set[str]:
    _, inputs = subject_of(load(scenario), "x", set())
    return {i.path.removeprefix("workload.") for i in inputs if i.path.startswith("workload.")}


@pytest.mark.parametrize(("scenario", "loop"), [
    ("mlperf_storage_v1/unet3d_h100_6500ion", ("unet3d_step_overhead", "unet3d_step_overhead_sd")),
    ("mlperf_storage_v1/cosmoflow_a100_6500ion", ("tf_step_overhead", "tf_step_overhead_sd")),
    ("mlperf_storage_v1/resnet50_h100_6500ion", ("tf_step_overhead", "tf_step_overhead_sd")),
])
def test_library_scenarios_draw_their_own_loop_and_no_loader_spread_beside_it(scenario: str, loop: tuple[str, ...]) -> None:
    """A preset whose loop is fitted draws that loop's two fields and neither the other loops nor the hand-over and
    loader_cost_cv (the fit holds them); step_overhead, which would replace the fitted loop once set, is not drawn."""
    drawn = _drawn(scenario)
    assert set(loop) <= drawn
    assert not (set(LOOP_FIELDS) - set(loop)) & drawn
    assert not {"loader_cost_cv", "handover_seconds"} & drawn


def test_a_stated_loop_keeps_the_loader_spread() -> None:
    """check-machine's runs state their measured loop (step_overhead): no fitted spread applies, so the loader's is
    the one spread left and is drawn; the fitted loops are not read and not drawn."""
    params = DlioParams(model="unet3d", step_overhead=0.4e-3)
    assert not {"loader_cost_cv", "handover_seconds"} & params.fields_not_drawn()
    assert {"unet3d_step_overhead_sd", "tf_step_overhead_sd"} <= params.fields_not_drawn()


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(["unet3d", "resnet50", "cosmoflow"]),
       framework=st.sampled_from([None, "pytorch", "tensorflow"]),
       stated_loop=st.booleans(),
       factor=st.floats(min_value=0.25, max_value=4.0))
def test_an_undrawn_loop_field_does_not_reach_the_engine(model: str, framework: str | None, stated_loop: bool,
                                                         factor: float) -> None:
    """Every loop field the sampler leaves out leaves the engine's configuration unchanged however it is set (the
    sampler must never hide an unknown the run reads); loader_cost_cv, left out for the double count, does reach it."""
    base = {"model": model, "accelerator": "h100"} | ({"framework": framework} if framework else {})
    if stated_loop:
        base["step_overhead"] = 0.4e-3
    params = DlioParams(**base)
    plain = params.resolved(64e9)
    for name in params.fields_not_drawn() & set(LOOP_FIELDS):
        moved = DlioParams(**base | {name: getattr(params, name) * factor + 1e-4})
        if name == "step_overhead" and plain.step_overhead_sd > 0 and plain.framework != "tensorflow":
            # a value set for step_overhead is a stated loop, which replaces the fitted unet3d one: a draw of it would
            # switch the loop off, not vary it
            assert moved.resolved(64e9).step_overhead_sd == 0.0
            continue
        assert moved.resolved(64e9) == plain, name
    if "loader_cost_cv" in params.fields_not_drawn():
        assert DlioParams(**base | {"loader_cost_cv": 0.5}).resolved(64e9).loader_cost_cv == 0.5
