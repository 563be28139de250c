"""The uncertainty contract (models.uncertainty, models.provenance ranges).

Oracles: the definitions of the distributions (a uniform's quantile is linear, a log-uniform's median is the geometric
mean of its ends, a normal range's ends are its 5 % and 95 % quantiles), checked against scipy.stats as an independent
implementation; and the provenance rules (a range needs both ends, low <= high, its evidence).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from iowatt.models.provenance import Provenance
from iowatt.models.uncertainty import (
    Range,
    assumed_constant,
    assumed_field,
    constant,
    field_range,
    overridden,
    range_of,
    recording_reads,
)
from scipy import stats

ends = st.tuples(st.floats(1e-3, 1e3), st.floats(1e-3, 1e3)).map(sorted).filter(lambda p: p[1] > p[0] * (1 + 1e-9))


@given(ends, st.floats(0, 1))
def test_quantiles_match_scipy(pair: list[float], u: float) -> None:
    low, high = pair
    assert Range(low, high).value_at(u) == pytest.approx(stats.uniform(low, high - low).ppf(u), rel=1e-9, abs=1e-12)
    assert Range(low, high, "log-uniform").value_at(u) == pytest.approx(stats.loguniform(low, high).ppf(u), rel=1e-9)


def test_log_uniform_median_is_the_geometric_mean() -> None:
    assert Range(8, 128, "log-uniform").median == pytest.approx(math.sqrt(8 * 128))


def test_normal_range_ends_are_its_5_and_95_percent_quantiles() -> None:
    r = Range(90.0, 110.0, "normal")
    dist = stats.norm(100.0, 10.0 / stats.norm.ppf(0.95))
    assert r.value_at(0.05) == pytest.approx(dist.ppf(0.05)) and r.value_at(0.95) == pytest.approx(110.0)


def test_provenance_ranges_are_checked() -> None:
    with pytest.raises(ValueError, match="both"):
        Provenance(p="assumed", note="x", low=1.0)
    with pytest.raises(ValueError, match="low <= high"):
        Provenance(p="assumed", note="x", low=2.0, high=1.0, range_note="y")
    with pytest.raises(ValueError, match="range_note"):
        Provenance(p="assumed", note="x", low=1.0, high=2.0)
    with pytest.raises(ValueError, match="stderr"):
        Provenance(p="assumed", note="x", stderr=1.0)
    ok = Provenance(p="assumed", note="x", low=1.0, high=2.0, shape="log-uniform", range_note="y")
    assert range_of(ok, 1.5) == Range(1.0, 2.0, "log-uniform", "y")


def test_source_spread_and_stderr() -> None:
    sheet = range_of(Provenance(p="datasheet", src="S1"), 1000.0)
    assert sheet is not None and sheet.low < 1000.0 <= sheet.high
    fitted = range_of(Provenance(p="calibrated", src="b", fitted_on="bundle", stderr=2.0), 10.0)
    assert fitted is not None and fitted.value_at(0.95) == pytest.approx(10 + 1.6448536 * 2.0)


def test_constants_are_overridden_only_inside_the_block() -> None:
    assumed_constant("tests.contract.k", 3.0, low=1.0, high=5.0, note="test", range_note="test")
    assert constant("tests.contract.k") == 3.0
    with overridden({"tests.contract.k": 4.5}):
        assert constant("tests.contract.k") == 4.5
    assert constant("tests.contract.k") == 3.0
    with recording_reads() as reads:
        constant("tests.contract.k")
    assert reads == {"tests.contract.k"}
    with pytest.raises(KeyError), overridden({"tests.contract.nosuch": 1.0}):
        pass
    with pytest.raises(ValueError, match="outside"):
        assumed_constant("tests.contract.bad", 9.0, low=1.0, high=5.0, note="test", range_note="test")


def test_assumed_field_carries_its_range() -> None:
    from pydantic import BaseModel

    class Server(BaseModel):
        threads: int = assumed_field(8, low=8, high=128, shape="log-uniform", point="documented default", note="OS default", range_note="guides")

    info = Server.model_fields["threads"]
    assert field_range(info.json_schema_extra) == Range(8, 128, "log-uniform", "guides")
    assert "threads" not in Server().model_fields_set and "threads" in Server(threads=16).model_fields_set
