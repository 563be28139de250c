"""A fit's standard error becomes a range for every value and error a fit can give, overflow included."""
import math

from hypothesis import given
from hypothesis import strategies as st
from iowatt.calibration.profile import fitted_range


@given(value=st.floats(min_value=1e-30, max_value=1e30), rel_stderr=st.floats(min_value=0.0, max_value=1e6))
def test_a_fitted_value_gets_a_range_that_holds_it_or_none(value, rel_stderr):
    """Oracle: the log-normal's 5 % and 95 % quantiles are symmetric about the value in log space (low x high =
    value^2) and bracket it; a standard error whose interval overflows a float (the bundle does not pin the value:
    seen as an OverflowError from `calibrate` on noisy bundles) gives no range instead of an exception."""
    found = fitted_range(value, rel_stderr)
    if not found:
        assert math.log(value) + 1.6448536269514722 * rel_stderr >= 709.0
        return
    # written with 6 significant digits (calibration.profile._number): a relative rounding of up to 5e-6 either way
    assert found["low"] <= value * (1 + 1e-5) and found["high"] >= value * (1 - 1e-5)
    if found["low"] > 0:  # below ~1e-308 the low quantile underflows to 0
        assert math.isclose(math.log(found["low"]) + math.log(found["high"]), 2 * math.log(value), rel_tol=1e-9, abs_tol=2e-5)


def test_an_unpinned_value_overflowing_the_interval_is_not_an_error():
    """The case a loaded machine's noisy bundle produced: relative error 1000 in log space."""
    assert fitted_range(2.0, 1000.0) == {}
