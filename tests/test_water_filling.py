"""The one-group water-filling of simulator/flow_classes.py against the general row solver (issue 33).

Oracle: maxmin.progressive_filling_rows, the progressive filling that raises every unfrozen rate step by step
and freezes rows at saturated constraints or their own bounds (SimGrid's LMM definition); the water-filling is
its closed form where every row crosses the same constraints.  Equal to rounding: 1e-9 relative.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.simulator.class_entries import Entry, fill_one_group
from iowatt.simulator.maxmin import Row, RowGroup, progressive_filling_rows


@st.composite
def one_group(draw):
    columns = draw(st.lists(st.tuples(st.floats(0.0, 1e3), st.floats(0.05, 4.0)), min_size=1, max_size=4))
    rows = draw(st.lists(st.tuples(st.sampled_from([0.5, 1.0, 1.0, 2.0]), st.integers(1, 50),
                                   st.one_of(st.just(math.inf), st.floats(0.01, 100.0))), min_size=1, max_size=9))
    return columns, rows


@given(one_group())
@settings(max_examples=200, deadline=None)
def test_water_filling_equals_progressive_filling(case):
    columns, rows = case
    capacity = [cap for cap, _ in columns]
    usage = tuple((j, k) for j, (_, k) in enumerate(columns))
    expected = progressive_filling_rows([RowGroup(usage, [Row(f"r{i}", w, n, cap) for i, (w, n, cap) in enumerate(rows)])], capacity)[0]
    entries = []
    for w, n, cap in rows:
        e = Entry((w, cap, ()), 0.0, None)
        e.count = n
        entries.append(e)
    share = min(cap / k for cap, k in columns)
    got = fill_one_group(entries, share)
    assert got is not None
    for a, b in zip(got, expected, strict=True):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (got, expected)
    # conservation: the flows never move more than the tightest constraint allows
    assert sum(n * r for (_, n, _), r in zip(rows, got, strict=True)) <= share * (1 + 1e-9) + 1e-12
