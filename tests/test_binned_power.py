"""Meter.binned_power_W: a power history cut into equal bins.

Oracles: conservation of energy (the bins' energy adds up to the integral of the piecewise-constant history), and an
independent cut that looks up every piece's bin from scratch (the way the method worked before it walked a segment's
bins in order), which must agree bit for bit.
"""

from __future__ import annotations

import itertools
import math

from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.simulator.flow_network import Meter


def _cut_bin_by_bin(history: list[tuple[float, float]], power_W: float, end: float, bins: int) -> list[float]:
    width = end / bins
    out = [0.0] * bins
    for (t0, w), (t1, _) in itertools.pairwise([*history, (end, power_W)]):
        t0, t1 = max(t0, 0.0), min(t1, end)
        while t1 > t0:
            i = min(int(t0 / width), bins - 1)
            if i < bins - 1 and (i + 1) * width <= t0:
                i += 1
            edge = t1 if i == bins - 1 else min(t1, (i + 1) * width)
            out[i] += w * (edge - t0)
            t0 = edge
    return [joules / width for joules in out]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[tuple[float, float]], float, float, int]:
    gaps = draw(st.lists(st.floats(0.0, 50.0), min_size=0, max_size=30))
    powers = draw(st.lists(st.floats(0.0, 500.0), min_size=len(gaps) + 1, max_size=len(gaps) + 1))
    times = list(itertools.accumulate([0.0, *gaps]))
    end = times[-1] + draw(st.floats(1e-3, 50.0))
    return list(zip(times, powers, strict=True)), powers[-1], end, draw(st.integers(1, 300))


@settings(max_examples=300, deadline=None)
@given(histories())
def test_bins_conserve_energy_and_match_a_bin_by_bin_cut(case: tuple[list[tuple[float, float]], float, float, int]) -> None:
    history, power_W, end, bins = case
    meter = Meter(name="m", idle_W=0.0, terms=[], power_W=power_W, history=list(history))
    got = meter.binned_power_W(end, bins)
    assert got == _cut_bin_by_bin(history, power_W, end, bins)
    points = [*history, (end, power_W)]
    energy_J = sum(w * (min(t1, end) - t0) for (t0, w), (t1, _) in itertools.pairwise(points) if t1 > t0)
    assert math.isclose(sum(got) * end / bins, energy_J, rel_tol=1e-9, abs_tol=1e-9)
