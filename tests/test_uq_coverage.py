"""What the intervals rest on, made honest: calibrated values with their fit's standard error and correlations, the
points of assumed fields, the ranges of assumed prices, and what an uncovered row says.

Oracles: Gauss-Newton on a linear model (exact: the standard error of a fitted log value is the noise over the
slope); the Gaussian copula (normal scores z L^T have correlation L L^T); the pooled-variance formula on hand-made
repeats; the provenance records themselves (a default field's record is the constant's it stands for).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import ssd_power
from iowatt.models.catalog.defaults import DEFAULT_PROVENANCE
from iowatt.models.provenance import Provenance
from iowatt.models.uncertainty import Range, assumed_field, field_range
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.scenarios.published_fits import ROW_NOISE, log_stderr
from iowatt.scenarios.uncertain_inputs import UncertainInput, correlate, subject_of
from iowatt.scenarios.uncertainty import latin_hypercube
from iowatt.scenarios.validation import Measurement
from iowatt.scenarios.validation_intervals import MISSING_MECHANISM, miss_note
from scipy.special import ndtri


class _LinearRows:
    """Rows whose log errors are linear in log(value) (slope a_i, offset c_i): a fit context for log_stderr."""

    def __init__(self, slopes: list[float], offsets: list[float]) -> None:
        self.slopes, self.offsets = slopes, offsets

    def log_errors(self, rows: object, settings_: list[tuple[object, float]]) -> list[float]:
        x = math.log(settings_[0][1])
        return [a * x + c for a, c in zip(self.slopes, self.offsets, strict=True)]


class _Target:
    label = "a value"


@given(st.floats(0.2, 5.0), st.floats(-1.0, 1.0))
@settings(max_examples=25, deadline=None)
def test_a_one_row_fit_inherits_the_rows_noise_over_its_slope(slope: float, offset: float):
    """Exactly determined: var(log value) = noise^2 / slope^2 (Gauss-Newton on a linear model is exact)."""
    ctx = _LinearRows([slope], [offset])
    got = log_stderr(ctx, _Target(), [], 1.7)  # type: ignore[arg-type]
    assert got == pytest.approx(ROW_NOISE / slope, rel=1e-6)


def test_rows_that_scatter_more_than_their_noise_widen_the_fit():
    """Two rows 20 % apart about the fit: s^2 = sum(e^2) / (n - 1) exceeds the rows' noise and is used."""
    ctx = _LinearRows([1.0, 1.0], [0.1, -0.1])
    got = log_stderr(ctx, _Target(), [None, None], 1.0)  # type: ignore[arg-type]
    assert got == pytest.approx(math.sqrt((0.01 + 0.01) / 1 / 2), rel=1e-6)


@given(st.floats(-0.9, 0.9))
@settings(max_examples=15, deadline=None)
def test_correlated_draws_carry_the_fits_correlation(rho: float):
    """The Gaussian copula: normal scores of the drawn quantiles correlate as the fit's log values did; an input
    without correlations keeps its column."""
    ranges = Range(1.0, 2.0, "log-normal")
    items = [UncertainInput("a", "a", ranges, "catalog", correlated=(("b", rho),)),
             UncertainInput("b", "b", ranges, "catalog", correlated=(("a", rho),)),
             UncertainInput("c", "c", ranges, "catalog")]
    plain = latin_hypercube(4096, 3, 7)
    drawn = correlate(items, plain)
    scores = ndtri(drawn)
    assert np.corrcoef(scores[:, 0], scores[:, 1])[0, 1] == pytest.approx(rho, abs=0.05)
    assert np.allclose(drawn[:, 2], plain[:, 2])
    assert np.allclose(drawn[:, 0], plain[:, 0])  # the first of a Cholesky pair is its own column


def test_uncorrelated_inputs_are_drawn_as_designed():
    items = [UncertainInput("a", "a", Range(1.0, 2.0), "catalog")]
    plain = latin_hypercube(16, 1, 3)
    assert correlate(items, plain) is plain


def test_calibrated_inputs_are_drawn_from_their_fit():
    """A stated input with a calibrated record and its fit's range is uncertain; a discrete calibrated choice
    (the HDD's layout) is not; a calibrated default field (DLIO's tensor generation rate) is drawn where unset."""
    _, inputs = subject_of(load("amax/epoch_hdd"), "x", set())
    found = {i.path: i for i in inputs}
    decode = found["workload.cpu_seconds_per_sample"]
    assert decode.range.shape == "log-normal" and decode.range.low < decode.nominal < decode.range.high
    assert "system.storage.layout_clusters" not in found
    _, inputs = subject_of(load("storagereview/ckpt_p5336"), "x", set())
    generate = {i.path: i for i in inputs}["workload.generate_GBps_per_rank"]
    assert generate.range.low < 0.362 < generate.range.high


def test_assumed_stated_inputs_are_drawn_over_their_range():
    """A value a scenario states only because a run needs one (its provenance record says `assumed`, with a range) is
    uncertain like an unset assumed field: the gdsio threads of a study that names no gdsio options.  Oracle: the
    scenario's own provenance record (1..16 threads, log-uniform, a whole number)."""
    _, inputs = subject_of(load("gds/solidigm_gh200_p5520"), "x", set())
    threads = {i.path: i for i in inputs}["workload.threads"]
    assert (threads.range.low, threads.range.high, threads.range.shape) == (1.0, 16.0, "log-uniform")
    assert threads.integer and threads.nominal == 4.0


def _gds_with_threads_record(tmp_path: Path, record: str, threads: int = 4) -> str:
    data = yaml.safe_load((Path(__file__).parents[1] / "scenarios/library/gds/solidigm_gh200_p5520.yaml").read_text())
    data["provenance"] = {"workload.threads": yaml.safe_load(record)}
    data["workload"]["threads"] = threads
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_scenarios_assumed_record_needs_a_range(tmp_path: Path):
    """The catalog's rule holds in a scenario's provenance section too: an assumed number without a range is refused
    naming the field (oracle: the rule as docs/uncertainty.md states it)."""
    with pytest.raises(ScenarioError, match=r"workload\.threads: an assumed value needs its plausible range"):
        load(_gds_with_threads_record(tmp_path, "{p: assumed, note: n}"))


def test_a_value_outside_its_records_range_is_known(tmp_path: Path):
    """A value the record's range does not hold (a user's --set over the file's) is not drawn from that range."""
    record = "{p: assumed, note: n, low: 1, high: 8, shape: log-uniform, range_note: r}"
    _, inputs = subject_of(load(_gds_with_threads_record(tmp_path, record, threads=12)), "x", set())
    assert "workload.threads" not in {i.path for i in inputs}


def test_an_assumed_fields_default_is_its_median_or_says_what_it_is():
    with pytest.raises(ValueError, match="not its range's median"):
        assumed_field(1, low=1, high=6, shape="log-uniform", note="n", range_note="r")
    field = assumed_field(1, low=1, high=6, shape="log-uniform", point="documented default", note="n", range_note="r")
    schema: dict[str, object] = {"description": "cores"}
    field.json_schema_extra(schema)
    assert "documented default 1" in str(schema["description"]) and "median is 2.45" in str(schema["description"])
    assert field_range(field.json_schema_extra) == Range(1.0, 6.0, "log-uniform", "r")


def test_frontend_cores_says_its_point_is_the_documented_default():
    from iowatt.simulator.storage.kinds.cluster import ClusterClient

    extra = ClusterClient.model_fields["frontend_cores"].json_schema_extra
    assert extra.point == "documented default" and extra.default == 1.0
    assert "documented default 1" in ClusterClient.model_json_schema()["properties"]["frontend_cores"]["description"]


def test_the_default_command_energy_is_the_constants_record():
    """One law in one place: an unset energy_per_io_uJ stands for COMMAND_J, so its record is COMMAND_J's in uJ."""
    record, constant = DEFAULT_PROVENANCE["ssd"]["energy_per_io_uJ"], ssd_power.PROVENANCE["COMMAND_J"]
    assert (record.low, record.high) == pytest.approx((constant.low * 1e6, constant.high * 1e6))
    assert record.shape == constant.shape and record.range_note == constant.range_note


def test_assumed_prices_carry_their_ranges(tmp_path: Path):
    from iowatt.scenarios.plan_costs import load_prices

    for name, entry in load_prices().items():
        prov = entry["provenance"]
        if prov.p == "assumed":
            assert prov.low <= entry["usd_per_TB"] <= prov.high, name
    path = tmp_path / "prices.yml"
    path.write_text(yaml.safe_dump({"currency": "USD", "entries": {"x": {"usd_per_TB": {"v": 100, "p": "assumed", "note": "a guess"}}}}))
    load_prices.cache_clear()
    try:
        with pytest.raises(ScenarioError, match=r"entry 'x'.*usd_per_TB.*plausible range"):
            load_prices(path)
    finally:
        load_prices.cache_clear()


def test_a_calibrated_value_may_carry_its_correlations_only():
    Provenance(p="calibrated", src="b", fitted_on=("b",), stderr=1.0, correlation={"x": 0.3})
    with pytest.raises(ValueError, match="correlation"):
        Provenance(p="assumed", note="n", low=1, high=2, range_note="r", correlation={"x": 0.3})
    with pytest.raises(ValueError, match="correlation"):
        Provenance(p="calibrated", src="b", fitted_on=("b",), correlation={"x": 1.5})


def test_an_uncovered_row_names_its_known_missing_mechanism():
    row = Measurement.model_validate({"id": "r", "scenario": "x.yaml", "metric": "m", "measured": 1.0,
                                      "note": "known miss: the passes are equal (no overwrite cost)"})
    assert miss_note(row) == f"{MISSING_MECHANISM}: the passes are equal (no overwrite cost)"
    plain = Measurement.model_validate({"id": "r", "scenario": "x.yaml", "metric": "m", "measured": 1.0})
    assert miss_note(plain) == MISSING_MECHANISM


def _profile_with(tmp_path: Path, residuals: list[dict[str, float]]) -> Path:
    """A profile written by calibration.profile from a synthetic fit, its residual rows replaced by hand-made ones."""
    from iowatt.calibration import fit, profile

    from tests.calibration_coverage import BASE, MANIFEST, draw_truth, measured_jobs, plan_jobs, quick

    rng = np.random.default_rng(5)
    jobs = plan_jobs(quick())
    result = fit.fit(measured_jobs(draw_truth(rng, jobs, True), jobs, rng, True), BASE.spec)
    document = profile.build("hand", BASE.name, "hand-bundle", MANIFEST, result, [], [j.id for j in jobs], 5, 0.0)
    document["calibration"]["residuals"] = residuals
    path = tmp_path / "hand.yaml"
    path.write_text(profile.dump(document))
    return path


def test_advise_takes_the_noise_its_profiles_bundle_measured(tmp_path: Path):
    """Pooled variance of the repeats (two jobs of 3 runs, 10 % and 20 %: sqrt((2 x 0.01 + 2 x 0.04) / 4) = 15.8 %), their
    repeats, and the law's misfit beyond the means' noise (errors +-30 %: mean log error^2 0.0980 less the means'
    variance 0.0083 leaves 29.9 %); a scenario on a catalog drive has none."""
    from iowatt.scenarios.advise import bundle_noise

    path = _profile_with(tmp_path, [{"runs": 3, "spread_pct": 10.0, "error_pct": 30.0},
                                    {"runs": 3, "spread_pct": 20.0, "error_pct": -30.0}])
    scenario = load({"name": "p", "seed": 1, "system": {"storage": {"kind": "local", "device": f"profile:{path}"}},
                     "workload": {"kind": "fio", "name": "j", "rw": "randread", "bs": "16k", "iodepth": 4, "size": "16M",
                                  "runtime": "2 s", "time_based": True}})
    noise = bundle_noise(scenario)
    assert noise is not None and noise.repeat == 3
    assert noise.per_run == pytest.approx(math.sqrt(0.025), rel=1e-9)
    expected_misfit = math.sqrt((math.log(1.3) ** 2 + math.log(0.7) ** 2) / 2 - (0.01 / 3 + 0.04 / 3) / 2)
    assert noise.misfit == pytest.approx(expected_misfit, rel=1e-9)
    assert bundle_noise(load("amax/fio_5210")) is None


def test_a_profiles_fitted_fields_reach_the_sampler_with_their_correlations(tmp_path: Path):
    """The fit's covariance (calibration.leastsq) -> the profile's `correlation` -> the sampler's inputs: every pair
    named from both sides with one coefficient (a correlation matrix is symmetric), each within [-1, 1]."""
    path = _profile_with(tmp_path, [{"runs": 3, "spread_pct": 10.0, "error_pct": 0.0}])
    scenario = load({"name": "p", "seed": 1, "system": {"storage": {"kind": "local", "device": f"profile:{path}"}},
                     "workload": {"kind": "fio", "name": "j", "rw": "randread", "bs": "16k", "iodepth": 4, "size": "16M",
                                  "runtime": "2 s", "time_based": True}})
    _, inputs = subject_of(scenario, "p", set())
    pairs = {(i.key, other): rho for i in inputs for other, rho in i.correlated}
    assert pairs, "no fitted field carried a correlation"
    for (a, b), rho in pairs.items():
        assert pairs[(b, a)] == rho and -1.0 <= rho <= 1.0
