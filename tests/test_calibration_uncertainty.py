"""What a calibration knows, as ranges: a fitted value's log-normal range from its standard error, the log-normal
shape of models.uncertainty, `calibrate --more` for a drive, and the synthetic coverage check of issue 28.

Oracles: scipy.stats.lognorm (an independent implementation of the log-normal quantiles); the definition of the fit's
90 % interval (value x e^(-+1.645 relative standard error)); parameters the synthetic bundles were made with (the law
itself, calibration.model.predict, with fio noise measured on this VM: tests/calibration_coverage.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from iowatt.calibration.cluster_fit import Measured
from iowatt.models import catalog
from iowatt.models.provenance import Provenance
from iowatt.models.uncertainty import Range, range_of
from scipy import stats
from typer.testing import CliRunner

from iowatt.cli import app
from tests.calibration_coverage import coverage
from tests.test_calibration_fit import TRUTH, synthetic
from tests.test_calibration_profile import _write
from tests.test_cluster_calibration import write_bundle

Z95 = stats.norm.ppf(0.95)


@given(st.floats(1e-3, 1e6), st.floats(0.0, 1.5), st.floats(0.0, 1.0))
def test_log_normal_quantiles_match_scipy(median: float, sigma: float, u: float):
    r = Range(median * math.exp(-Z95 * sigma), median * math.exp(Z95 * sigma), "log-normal")
    expected = stats.lognorm(s=sigma, scale=median).ppf(min(max(u, 1e-9), 1 - 1e-9)) if sigma > 0 else median
    assert r.value_at(u) == pytest.approx(expected, rel=1e-6)
    assert r.median == pytest.approx(median, rel=1e-9)


def test_a_log_normal_range_needs_positive_ends():
    with pytest.raises(ValueError, match="log-normal range needs low > 0"):
        Provenance(p="assumed", note="x", low=0.0, high=2.0, shape="log-normal", range_note="y")


def test_fitted_values_carry_the_fits_90_percent_interval(tmp_path: Path):
    """The profile's fitted fields (relative standard error 5 %, test_calibration_profile._result) read back as
    log-normal ranges with 5 % / 95 % quantiles value x e^(-+1.645 x 0.05), and the stderr beside them."""
    (entry,) = catalog._parse_file(_write(tmp_path))
    for name in ("seq_read_MBps", "rand_read_iops", "read_latency_us", "seq_write_MBps", "write_latency_us"):
        value, prov = getattr(entry.spec, name), entry.provenance[name]
        assert prov.p == "calibrated" and prov.stderr == pytest.approx(0.05 * value, rel=1e-5)
        spread = range_of(prov, value)
        assert spread is not None and spread.shape == "log-normal"
        assert (spread.low, spread.high) == pytest.approx((value * math.exp(-Z95 * 0.05), value * math.exp(Z95 * 0.05)), rel=1e-5)
    base = catalog.lookup("ssd", "micron-7450-pro")  # a value the bundle did not inform keeps the base's range
    for name in ("rand_write_iops", "idle_W", "capacity_TB"):
        assert range_of(entry.provenance[name], getattr(entry.spec, name)) == range_of(base.provenance[name], getattr(base.spec, name))


def test_calibrate_more_fits_a_further_bundle_of_the_same_drive(tmp_path: Path):
    """Reads in one bundle, writes in another (noise-free, made by the law): alone the first leaves the write fields at
    the base; with --more the profile recovers all five fields and names both bundles."""
    data = synthetic(TRUTH, 0.0, 0)
    reads = write_bundle(tmp_path / "reads", [Measured(j, 1) for j in data if j.read_fraction == 1.0])
    writes = write_bundle(tmp_path / "writes", [Measured(j, 1) for j in data if j.read_fraction == 0.0])
    out = tmp_path / "both.yaml"
    result = CliRunner().invoke(app, ["calibrate", str(reads), "--more", str(writes), "--base", "micron-7450-pro", "-o", str(out)])
    assert result.exit_code == 0, result.output
    document = yaml.safe_load(out.read_text())
    fields = document["entries"]["both"]
    for name, value in TRUTH.items():
        assert fields[name]["v"] == pytest.approx(value, rel=0.03), name
        assert fields[name]["p"] == "calibrated" and fields[name]["fitted_on"] == [str(reads), str(writes)]
    assert document["calibration"]["bundle"]["more"] == [str(writes)]
    bad = CliRunner().invoke(app, ["calibrate", str(reads), "--more", f"{writes}=2", "--base", "micron-7450-pro", "-o", str(tmp_path / "x.yaml")])
    assert bad.exit_code == 2 and "BUNDLE=CLIENTS is for --kind cluster" in bad.stderr and not (tmp_path / "x.yaml").exists()


def test_fitted_intervals_cover_the_truth_about_90_percent():
    """A subset of the Done-when's 200 synthetic bundles (`python -m tests.calibration_coverage 200`, docs/calibration.md):
    the profiles' 90 % intervals must cover the truth they were made with in 80-97 % of 12 x 5 intervals (the
    binomial spread of 60 draws at 90 % is 3.9 %), and stay informative (median relative half-width under 25 %)."""
    share, per_field, width = coverage(range(1000, 1012))
    assert sum(t for _, t in per_field.values()) >= 55
    assert 0.80 <= share <= 0.97, per_field
    assert width < 0.25
