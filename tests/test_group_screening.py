"""Screening in groups (scenarios.uncertainty._bifurcate: sequential bifurcation, Bettonvil & Kleijnen 1997) where a
validation row keeps one metric.

Oracle: the one-at-a-time screening of the same scenario (every input moved alone to its 5 % and 95 % quantiles,
which is what `propagate` does when the runs keep every metric).  Every input the groups left out must give back
the plain run's value of the row's metric, to the last bit, at both ends when moved alone; every input they kept
must have the same two runs; the row's interval must be the same numbers.
"""

from __future__ import annotations

import pytest
from iowatt.scenarios.loader import load
from iowatt.scenarios.uncertainty import Settings, propagate

ROWS = [
    ("amax/fio_5210", "metrics.iops"),                                  # 3 of 24 inputs reach it
    ("amax/fio_5210_raid5_nfs", "metrics.iops"),                        # server threads, the export's drives
    ("checkpoint_llama405b_8gpu", "metrics.save_checkpoint_duration_mean_seconds"),
]


@pytest.mark.parametrize(("name", "metric"), ROWS)
def test_groups_leave_out_only_inputs_the_metric_never_reads(name: str, metric: str) -> None:
    scenario = load(name, [])
    settings = Settings(method="oat")
    grouped = propagate([scenario], settings, paths=[(metric,)])
    alone = propagate([scenario], settings)  # every metric kept: each input screened by itself
    name_in_metrics = metric.removeprefix("metrics.")  # the runs that keep every metric key them by name
    base = alone.base_outputs[0][name_in_metrics]
    assert grouped.base_outputs[0][metric] == base
    for item in alone.inputs:
        low, high = alone.oat[item.key]
        if item.key in grouped.oat:
            assert [o[0][metric] for o in grouped.oat[item.key]] == [low[0][name_in_metrics], high[0][name_in_metrics]], item.key
        else:
            assert low[0][name_in_metrics] == base and high[0][name_in_metrics] == base, item.key
    def swing(key: str) -> float:  # the one-at-a-time screening's relative swing of the row's metric
        low, high = (o[0][name_in_metrics] for o in alone.oat[key])
        return abs(high - low) / max(abs(base), abs(low), abs(high))

    assert [i.key for i in grouped.kept] == [i.key for i in alone.inputs if swing(i.key) > settings.screen]
    assert grouped.screening_runs < 2 * len(alone.inputs)  # the point of grouping: fewer runs where few inputs are read
