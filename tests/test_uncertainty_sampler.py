"""The sampler (scenarios.uncertainty), user ranges (scenarios.ranges) and interval scoring (scenarios.interval_stats).

Oracles: the Ishigami function's analytic Sobol' total effects (Ishigami & Homma 1990; Saltelli et al. 2010) run
through the design and the estimator; a bandwidth-bound checkpoint's time is proportional to its size (a transfer at
a fixed rate) and quantiles are equivariant under monotone maps, so its interval is the size range's quantiles times
one rate; a quantity divided by itself is 1 in every sample (common random numbers); Gneiting & Raftery's interval
score worked by hand; the distributions' definitions for parsed ranges.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import catalog
from iowatt.models.uncertainty import Range
from iowatt.scenarios.interval_stats import covered, interval, interval_score, jansen_total_effects
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.scenarios.ranges import parse_range_text
from iowatt.scenarios.uncertain_inputs import UncertainInput
from iowatt.scenarios.uncertainty import Propagation, Settings, UncertaintyError, propagate, saltelli_design, summarise
from typer.testing import CliRunner

from iowatt.cli import app

CHECKPOINT = "checkpoint_llama405b_8gpu"


def _ishigami(x: list[float], a: float = 7.0, b: float = 0.1) -> float:
    return math.sin(x[0]) + a * math.sin(x[1]) ** 2 + b * x[2] ** 4 * math.sin(x[0])


def test_jansen_total_effects_match_ishigami_analytic() -> None:
    a, b = 7.0, 0.1
    variance = a**2 / 8 + b * math.pi**4 / 5 + b**2 * math.pi**8 / 18 + 0.5
    v1 = 0.5 * (1 + b * math.pi**4 / 5) ** 2
    v13 = b**2 * math.pi**8 * (1 / 18 - 1 / 50)
    analytic = [(v1 + v13) / variance, a**2 / 8 / variance, v13 / variance]  # 0.558, 0.442, 0.244
    m = 4096
    rows = saltelli_design(3, m, seed=3)
    f = [_ishigami([-math.pi + 2 * math.pi * u for u in row]) for row in rows]
    totals = jansen_total_effects(f[:m], f[m:2 * m], [f[(2 + i) * m:(3 + i) * m] for i in range(3)])
    assert totals == pytest.approx(analytic, abs=0.03)


def test_additive_function_total_effects_are_its_variance_shares() -> None:
    """y = 1 x1 + 2 x2 + 3 x3 on uniform inputs: S_Ti = a_i^2 / sum a^2 (no interactions)."""
    m = 1024
    rows = saltelli_design(3, m, seed=1)
    f = [u[0] + 2 * u[1] + 3 * u[2] for u in rows]
    totals = jansen_total_effects(f[:m], f[m:2 * m], [f[(2 + i) * m:(3 + i) * m] for i in range(3)])
    assert totals == pytest.approx([1 / 14, 4 / 14, 9 / 14], abs=0.02)


def test_interval_score_and_coverage_by_hand() -> None:
    # inside: the width alone, relative to the measurement
    assert interval_score(9.0, 11.0, 10.0, 0.9) == pytest.approx(0.2)
    # 1 below the low end: width 2 + 2/0.1 x 1 = 22, over |x| = 8
    assert interval_score(9.0, 11.0, 8.0, 0.9) == pytest.approx(22 / 8)
    # 2 above: 2 + 20 x 2 = 42, over 13
    assert interval_score(9.0, 11.0, 13.0, 0.9) == pytest.approx(42 / 13)
    assert covered(9.0, 11.0, 9.0) and covered(9.0, 11.0, 11.0) and not covered(9.0, 11.0, 11.0001)
    # Hazen positions: the 25 % quantile of 5 values sits at 0.25 x 5 - 0.5 = 0.75 of the way from the 1st to the 2nd
    assert interval([1, 2, 3, 4, 5], 0.5).as_dict() == {"low": 1.75, "median": 3.0, "high": 4.25}
    assert interval([7.0], 0.9).as_dict() == {"low": 7.0, "median": 7.0, "high": 7.0}


@settings(max_examples=50, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(0, 1e6), st.sampled_from(["", " log", " normal", " uniform"]))
def test_range_text_parses_both_ends(low: float, width: float, shape: str) -> None:
    text = f"{low!r}..{low + width!r}{shape}"
    parsed = parse_range_text(text)
    assert parsed is not None
    assert float(parsed[0]) == low and float(parsed[1]) == low + width
    assert parsed[2] == {"": "uniform", " log": "log-uniform", " normal": "normal", " uniform": "uniform"}[shape]


@pytest.mark.parametrize("text", ["micron-6550-ion", "profile:../x.yaml", "PS0..PS1", "12", "a..b", "../raid5.yaml"])
def test_text_that_is_not_a_range(text: str) -> None:
    assert parse_range_text(text) is None


def test_ranges_resolve_at_their_median_with_units() -> None:
    scenario = load(CHECKPOINT, ["storage.fill=0.6..0.9", "workload.size=400 GB..450 GB", "workload.ranks=2..32 log"])
    assert scenario.system.storage.fill == pytest.approx(0.75)
    assert scenario.workload.size == pytest.approx(425e9)  # type: ignore[attr-defined]
    assert scenario.workload.ranks == 8  # type: ignore[attr-defined]  # geometric mean of 2 and 32
    by_path = {r.path: r for r in scenario.user_ranges}
    assert by_path["workload.size"].range == Range(400e9, 450e9, "uniform", "given as '400 GB..450 GB'")
    assert by_path["workload.ranks"].integer and by_path["workload.ranks"].range.shape == "log-uniform"


@pytest.mark.parametrize(("assignment", "expected"), [
    ("storage.fill=0.9..0.6", "system.storage.fill: expected a range LOW..HIGH with LOW <= HIGH"),
    ("storage.fill=0.5..1.5", "system.storage.fill: expected less than or equal to 1"),
    ("name=1..2", "name: a range needs a field that holds a number"),
    ("workload.size=400 GB..450 parsecs", "workload.size"),
])
def test_bad_ranges_name_the_field(assignment: str, expected: str) -> None:
    with pytest.raises(ScenarioError, match=expected.replace(".", r"\.").replace("(", r"\(")):
        load(CHECKPOINT, [assignment])


def test_bad_ranges_exit_2_on_the_command_line() -> None:
    result = CliRunner().invoke(app, ["run", CHECKPOINT, "--set", "storage.fill=0.9..0.6", "-f", "json"])
    assert result.exit_code == 2 and "system.storage.fill" in result.output and "Traceback" not in result.output
    for option, value in (("--samples", "1"), ("--level", "1.2")):
        result = CliRunner().invoke(app, ["run", CHECKPOINT, "--uncertainty", option, value, "-f", "json"])
        assert result.exit_code == 2 and option in result.output


def test_without_uncertainty_a_range_runs_at_its_median_and_says_so() -> None:
    result = CliRunner().invoke(app, ["run", CHECKPOINT, "--set", "storage.fill=0.6..0.9", "-f", "json"])
    assert result.exit_code == 0
    assert "system.storage.fill=0.6..0.9: given as a range; this run uses each range's median" in result.stderr


def test_a_bandwidth_bound_read_interval_is_the_size_quantiles_over_its_rate() -> None:
    """A sequential read of a given size at the drive's fixed rate takes size / rate: only the size is uncertain (the
    drive is an inline spec, which carries no catalog ranges), so the time's interval is the size's quantiles / rate."""
    scenario = load("amax/fio_9200", ["workload.rw=read", "workload.time_based=false", "workload.bs=1 MiB",
                                      "workload.size=8 GiB..32 GiB"])
    scenario.system.storage.device = catalog.drive_spec(scenario.system.storage.device).model_dump()
    result = propagate([scenario], Settings(samples=64))
    time = summarise(result).metrics["job_runtime_seconds"]
    rate = result.baseline[0]["metrics"]["bw_bytes"]
    size = Range(8 * 2**30, 32 * 2**30)
    stratum = 1 / 64  # the design puts one point in each 1/64 of the size's quantiles: its quantiles are known to one stratum
    for got, q in ((time.low, 0.05), (time.median, 0.5), (time.high, 0.95)):
        assert size.value_at(q - stratum) / rate <= got <= size.value_at(q + stratum) / rate
    assert [p for p, m, _ in summarise(result).sensitivity if m == "job_runtime_seconds"] == ["workload.size"]


def test_a_ratio_of_a_run_to_itself_has_no_width() -> None:
    """Common random numbers: the two runs of a ratio draw shared inputs once, so run / same run = 1 in every sample."""
    scenario = load(CHECKPOINT, ["storage.fill=0.6..0.9"])
    metric = "metrics.save_checkpoint_duration_mean_seconds"
    paths = [(metric,)] * 2
    result = propagate([scenario, scenario], Settings(samples=8), paths=paths)
    ratio = result.interval(lambda out: out[0][metric] / out[1][metric], 1.0)
    assert result.samples > 0 and ratio.low == pytest.approx(1.0) and ratio.high == pytest.approx(1.0)
    alone = result.interval(lambda out: out[0][metric], 0.0)
    assert alone.relative_half_width() > 0.05  # the fill does move each run


def test_failed_runs_are_counted_against_the_stated_share() -> None:
    result = Propagation(Settings(), [], [], {}, [], rows=[None, None, [{}], [{}], [{}]], screening_runs=5)
    assert result.failed == 2 and result.too_many_failed
    assert not Propagation(Settings(max_failed_share=0.5), [], [], {}, [], rows=[None, [{}]], screening_runs=8).too_many_failed


def test_settings_are_checked() -> None:
    with pytest.raises(UncertaintyError, match="--samples"):
        Settings(samples=1).check()
    with pytest.raises(UncertaintyError, match="--level"):
        Settings(level=1.0).check()


def test_unset_assumed_fields_and_read_constants_are_the_uncertain_inputs() -> None:
    """The contract's rule: an assumed field the scenario leaves unset is uncertain, one it sets is known; a constant is
    an input only where the run read it."""
    from iowatt.models.uncertainty import assumed_constant, assumed_field
    from iowatt.scenarios.uncertain_inputs import _assumed_fields, subject_of
    from pydantic import BaseModel, Field

    class Server(BaseModel):
        threads: int = assumed_field(8, low=8, high=128, shape="log-uniform", point="documented default", note="OS default", range_note="guides")

    class Storage(BaseModel):
        left: Server = Field(default_factory=Server)
        stated: Server

    found = list(_assumed_fields(Storage(stated=Server(threads=16))))  # type: ignore[arg-type]
    assert found == [(("left", "threads"), Range(8, 128, "log-uniform", "guides"), True, 8.0)]
    assumed_constant("tests.sampler.k", 2.0, low=1.0, high=4.0, note="test", range_note="test")
    _, inputs = subject_of(load(CHECKPOINT), "x", {"tests.sampler.k"})
    constants = [i for i in inputs if i.kind == "constant"]
    assert [(i.path, i.nominal, i.nominal_quantile()) for i in constants] == [("constant:tests.sampler.k", 2.0, pytest.approx(1 / 3))]
    _, unread = subject_of(load(CHECKPOINT), "x", set())
    assert not [i for i in unread if i.kind == "constant"]


def test_a_catalog_draw_becomes_a_spec_override_the_loader_accepts() -> None:
    """A draw of a catalog number replaces it in `{base: NAME, FIELD: value}`; a factor on a list scales its measured
    numbers (the contract: low/high of a list are factors on every number in it), counts stay."""
    from iowatt.scenarios.loader import validate
    from iowatt.scenarios.uncertain_inputs import Applier

    scenario = load(CHECKPOINT)
    data = scenario.model_dump(mode="json", exclude_unset=True)
    spec = catalog.lookup("ssd", "micron-6550-ion").spec.model_dump()
    at = ("system", "storage", "device")
    Applier("a", at, field=("seq_write_MBps",), base="micron-6550-ion", original=spec["seq_write_MBps"]).apply(data, 7000.0)
    Applier("b", at, field=("power_states",), base="micron-6550-ion", original=spec["power_states"], factor=True).apply(data, 1.1)
    drawn = catalog.drive_spec(validate(data, "test").system.storage.device).model_dump()
    assert drawn["seq_write_MBps"] == 7000.0 and drawn["name"] == "micron-6550-ion"
    assert [s["max_W"] for s in drawn["power_states"]] == pytest.approx([s["max_W"] * 1.1 for s in spec["power_states"]])
    assert drawn["link"] == spec["link"] and drawn["rand_read_iops"] == spec["rand_read_iops"]


def test_two_devices_of_one_question_are_named_apart_and_unaffected_runs_are_reused() -> None:
    """A drive's value moves only the run that uses that drive: the other run of the pair is its plain run, reused
    (identical outputs, not a re-run); the same field of two drives is reported with each drive's name."""
    from iowatt.scenarios.uncertainty import _labels

    pair = [load("amax/fio_9200"), load("amax/fio_5210")]
    paths = [("metrics.read_iops",)] * 2
    result = propagate(pair, Settings(method="oat"), paths=paths)
    key = "catalog:sata_ssd:micron-5210-ion:seq_read_MBps"
    low, high = result.oat[key]
    assert low[0] == result.base_outputs[0] and high[0] == result.base_outputs[0]  # the 9200's run, untouched
    assert low[1] != result.base_outputs[1]
    a = next(i for i in result.inputs if i.key == key)
    b = dataclasses.replace(a, key="catalog:ssd:micron-9200-pro:seq_read_MBps", source="micron-9200-pro")
    assert _labels([a, b]) == ["system.storage.device.seq_read_MBps (micron-5210-ion)",
                               "system.storage.device.seq_read_MBps (micron-9200-pro)"]
    assert _labels([a]) == ["system.storage.device.seq_read_MBps"]


def test_a_design_that_mixes_some_columns_is_the_full_design_without_the_others() -> None:
    """Oracle: Saltelli et al. 2010's full design; mixing only the ranked columns must select its rows, not change them."""
    k, m = 4, 16
    full = saltelli_design(k, m, seed=5)
    some = saltelli_design(k, m, seed=5, mixed=[1, 3])
    assert some[:2 * m] == full[:2 * m]
    assert some[2 * m:3 * m] == full[3 * m:4 * m] and some[3 * m:] == full[5 * m:6 * m]


def test_only_ranked_inputs_get_a_matrix_and_the_sample_count_says_so() -> None:
    """The runs the design makes are m x (ranked + 2), reported as `samples`; every input named in the sensitivity has
    its own matrix, and every kept input left out of the ranking moves each output by under RANK_SWING of the largest
    swing (its variance share under 1 %, the report's cut)."""
    from iowatt.scenarios.uncertainty import RANK_SWING

    m = 4
    result = propagate([load(CHECKPOINT, [])], Settings(samples=m))
    assert set(i.key for i in result.ranked) <= set(i.key for i in result.kept)
    assert len(result.rows) == m * (len(result.ranked) + 2) == summarise(result).samples
    named = {p for p, _, _ in summarise(result).sensitivity}
    assert named <= {i.path for i in result.ranked}
    assert len(result.ranked) < len(result.kept)  # the checkpoint has kept inputs too small to rank
    base = result.base_outputs[0]
    for item in result.kept:
        if item in result.ranked:
            continue
        low, high = result.oat[item.key]
        for name, value in base.items():
            largest = max(abs(result.oat[j.key][1][0][name] - result.oat[j.key][0][0][name]) for j in result.kept)
            assert abs(high[0][name] - low[0][name]) <= RANK_SWING * largest + 1e-12 * max(1.0, abs(value))


def _many_small_inputs(k: int, step: float) -> tuple[list[UncertainInput], dict[str, tuple[list[dict[str, float]], list[dict[str, float]]]], float]:
    """k inputs uniform on [0, 1], y = 100 + step x sum(x): each one's 5 %-95 % swing is 0.9 step % of y, under the
    screening's 0.5 % for the steps used; their screening runs (the others at their nominal 0.5)."""
    items = [UncertainInput(key=f"constant:toy.x{i:02d}", path=f"toy.x{i:02d}", range=Range(0.0, 1.0), kind="constant", nominal=0.5)
             for i in range(k)]
    base = 100.0 + step * 0.5 * k
    ends = {item.key: ([{"y": base + step * (0.05 - 0.5)}], [{"y": base + step * (0.95 - 0.5)}]) for item in items}
    return items, ends, base


@pytest.mark.parametrize("method", ["oat", "sobol"])
def test_inputs_below_the_screen_still_widen_the_interval(method: str) -> None:
    """Oracle: a Monte-Carlo of the sum itself (numpy, independent uniform draws).  Twenty inputs that each move y by
    0.27 % (under SCREEN_SHARE, so none is sampled) move it together by about +-0.6 %: the interval must be the sum's
    5 % and 95 % quantiles, not the plain run's point (what dropping the screened-out inputs gave)."""
    import numpy as np
    from iowatt.scenarios.uncertainty import SCREEN_SHARE

    k, step = 20, 0.3
    items, ends, base = _many_small_inputs(k, step)
    assert all(0.9 * step / base < SCREEN_SHARE for _ in items)
    result = Propagation(Settings(method=method), items, [], {i.key: 0.9 * step / base for i in items}, [{}],
                         base_outputs=[{"y": base}], oat=ends, seed=3)
    got = result.interval(lambda row: row[0]["y"], base)
    sums = 100.0 + step * np.random.default_rng(11).random((200_000, k)).sum(axis=1)
    want_low, want_high = np.quantile(sums, [0.05, 0.95])
    width = want_high - want_low
    assert width > 0.01 * base  # about +-0.6 %: more than twice what any one input moves
    assert abs(got.low - want_low) < 0.02 * width and abs(got.high - want_high) < 0.02 * width


def test_a_sampled_design_carries_the_inputs_it_does_not_sample() -> None:
    """Oracle: a Monte-Carlo of y = 100 + 2 x0 + 0.3 (x1 + ... + x20), all uniform on [0, 1].  The design samples x0
    (its rows computed from the Saltelli design's quantiles, as the engine would give them); the twenty small inputs
    are left to their screening runs and must still be in the interval: its ends within 3 % of the width of the
    referee's (the design's 2 x 512 rows resolve the quantiles to about that)."""
    import numpy as np

    k, step, m = 20, 0.3, 512
    small, ends, base = _many_small_inputs(k, step)
    big = UncertainInput(key="constant:toy.big", path="toy.big", range=Range(0.0, 1.0), kind="constant", nominal=0.5)
    base += 2.0 * 0.5
    ends = {key: ([{"y": lo[0]["y"] + 1.0}], [{"y": hi[0]["y"] + 1.0}]) for key, (lo, hi) in ends.items()}
    ends[big.key] = ([{"y": base + 2.0 * (0.05 - 0.5)}], [{"y": base + 2.0 * (0.95 - 0.5)}])
    result = Propagation(Settings(method="sobol", samples=m), [big, *small], [big], {}, [{}], base_outputs=[{"y": base}],
                         oat=ends, seed=3)
    design = saltelli_design(1, m, seed=3, mixed=[])
    result.rows = [[{"y": base + 2.0 * (u[0] - 0.5)}] for u in design]
    got = result.interval(lambda row: row[0]["y"], base)
    rng = np.random.default_rng(12)
    sums = 100.0 + 2.0 * rng.random(400_000) + step * rng.random((400_000, k)).sum(axis=1)
    want_low, want_high = np.quantile(sums, [0.05, 0.95])
    width = want_high - want_low
    assert abs(got.low - want_low) < 0.03 * width and abs(got.high - want_high) < 0.03 * width
    plain = np.quantile([base + 2.0 * (u[0] - 0.5) for u in design], [0.05, 0.95])
    assert (want_high - want_low) - (plain[1] - plain[0]) > 0.1 * width  # the small inputs are what the check can see
