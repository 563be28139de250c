"""Fitting the per-request mode's latency spreads from fio's clat percentiles (calibration/latency.py)."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.calibration import latency
from iowatt.calibration.model import Job
from iowatt.models.provenance import unwrap
from iowatt.models.ssd import SSDSpec
from iowatt.simulator.per_request.latency import lognormal_quantile


@settings(max_examples=20, deadline=None)
@given(read_sigma=st.floats(0.05, 1.5), write_sigma=st.floats(0.05, 1.5), mean_us=st.floats(10.0, 5000.0))
def test_spreads_are_recovered_from_lognormal_percentiles(read_sigma: float, write_sigma: float, mean_us: float) -> None:
    """Oracle: percentiles made by the lognormal quantile function (mean x exp(sigma z_q - sigma^2 / 2)) of a known sigma;
    jobs at QD > 1 (where queueing shapes the distribution) are left out of the fit."""
    jobs = [Job("r1", "randread", 4096.0, 1, 1, 1.0), Job("w1", "randwrite", 4096.0, 1, 1, 0.0), Job("r8", "randread", 4096.0, 8, 1, 1.0)]

    def row(sigma: float) -> dict[str, float]:
        return {"mean": mean_us, **{f"p{q:g}": mean_us * lognormal_quantile(sigma, q / 100.0) for q in (10.0, 50.0, 90.0, 99.0, 99.9)}}

    seen = {"r1": {"read": row(read_sigma)}, "w1": {"write": row(write_sigma)}, "r8": {"read": row(3.0)}}
    fits = latency.fit_spreads(jobs, seen)
    assert fits["read_latency_sigma"][0] == pytest.approx(read_sigma, abs=1e-4)
    assert fits["write_latency_sigma"][0] == pytest.approx(write_sigma, abs=1e-4)


def test_a_bundle_without_qd1_jobs_informs_no_spread_and_a_profile_carries_the_fit() -> None:
    assert latency.fit_spreads([Job("r8", "randread", 4096.0, 8, 1, 1.0)], {"r8": {"read": {"mean": 1.0, "p50": 1.0}}}) == {}
    document = {"entries": {"disk": {"read_latency_sigma": None}}, "calibration": {}}
    latency.record(document, {"read_latency_sigma": (0.4, "fitted")}, "bundle", "abc")
    fields = yaml.safe_load(yaml.safe_dump(document))["entries"]["disk"]
    assert fields["read_latency_sigma"]["p"] == "calibrated"
    plain, _ = unwrap(fields)
    assert plain["read_latency_sigma"] == 0.4 and document["calibration"]["latency_spreads"] == {"read_latency_sigma": 0.4}


def test_predicted_percentiles_come_from_the_per_request_mode() -> None:
    """Oracle: at QD1 a read's latency is L0 x F (the per-request mode): its p50 is L0 exp(-sigma^2 / 2)."""
    from iowatt.models import catalog

    spec: SSDSpec = catalog.spec_from("ssd", "micron-7450-pro").model_copy(update={"read_latency_sigma": 0.3})  # type: ignore[assignment]
    got = latency.predicted_percentiles(spec, Job("r1", "randread", 4096.0, 1, 1, 1.0))["read"]
    assert got["p50"] == pytest.approx(spec.read_latency_us * lognormal_quantile(0.3, 0.5), rel=0.03)
    assert got["p99"] == pytest.approx(spec.read_latency_us * lognormal_quantile(0.3, 0.99), rel=0.05)
