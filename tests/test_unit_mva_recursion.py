"""models.unit_mva's recursion (its loop-invariant products hoisted for speed, issue 28's sampling cost) against the
mean value analysis equations as its docstring writes them (Reiser & Lavenberg 1980), transcribed term by term.

Oracle: the MVA equations R(n) = d + c S + S q + (c - floor(c)) S p, X = n / R, q' = X S (1 + q),
p' = X (c - floor(c)) S (1 + p); the same arithmetic in the same order, so the two agree bit for bit; and the closed
form R(n) = L0 + (n - 1) S for a whole number of units and no delay.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import unit_mva


def _textbook(delay_s: float, units: float, service_s: float, n: int) -> float:
    whole = math.floor(units)
    part = units - whole
    q = p = 0.0
    r = delay_s + units * service_s
    for k in range(1, n + 1):
        r = delay_s + units * service_s + whole * service_s * q + part * service_s * p
        x = k / r
        q = x * service_s * (1.0 + q)
        p = x * part * service_s * (1.0 + p)
    return r


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.just(0.0), st.floats(1e-7, 1e-2)), st.floats(0.01, 500.0), st.floats(1e-8, 1e-2), st.integers(1, 700))
def test_the_recursion_is_the_mva_equations_bit_for_bit(delay_s: float, units: float, service_s: float, n: int) -> None:
    got, expected = unit_mva._recursion.__wrapped__(delay_s, units, service_s, n), _textbook(delay_s, units, service_s, n)
    assert got == expected or (math.isnan(got) and math.isnan(expected))  # both overflow alike far outside use


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 64), st.floats(1e-6, 1e-3), st.integers(1, 600))
def test_whole_units_without_delay_follow_the_closed_form(units: int, service_s: float, n: int) -> None:
    got = unit_mva._recursion.__wrapped__(0.0, float(units), service_s, n)
    # by symmetry R(n) = L0 + (n - 1) S, L0 = c S, for every n with c whole and d = 0 (module docstring)
    assert math.isclose(got, units * service_s + (n - 1) * service_s, rel_tol=1e-9)
