"""The HDD positioning integral is cached by what it reads (seek curve, revolution), not by the whole spec (issue 28).

Oracles: with one candidate the cheapest-of-n integral is a seek plus an independent uniform rotation, so its value
is the mean seek plus half a revolution (computed by the model's separate mean-seek path); a spec that differs only in
fields the integral never reads (power, command overhead) gets the very same value, one with a slower seek curve
or spindle a larger one.
"""

from __future__ import annotations

from iowatt.models import hdd
from iowatt.models.catalog import spec_from


def _spec(**changes: float) -> hdd.HDDSpec:
    base = spec_from("hdd", "hdd-7200rpm-sas-8tb")
    assert isinstance(base, hdd.HDDSpec)
    return base.model_copy(update=changes)


def test_power_and_capacity_do_not_change_the_positioning_and_the_seek_curve_does():
    base = _spec()
    first = hdd.positioning_seconds(base, queue_depth=8, scheduling="satf")
    for other in (_spec(idle_W=base.idle_W * 1.5), _spec(random_W=base.random_W * 0.7), _spec(command_overhead_ms=0.3)):
        assert hdd.positioning_seconds(other, queue_depth=8, scheduling="satf") == first
    slower = _spec(avg_seek_read_ms=base.avg_seek_read_ms * 1.2)
    assert hdd.positioning_seconds(slower, queue_depth=8, scheduling="satf") > first
    faster_spin = _spec(rpm=base.rpm * 2)
    assert hdd.positioning_seconds(faster_spin, queue_depth=8, scheduling="satf") < first


def test_one_candidate_is_the_mean_seek_plus_half_a_revolution_through_the_cache():
    spec = _spec(track_to_track_seek_ms=0.61234)  # numbers no other test uses: a miss, computed here
    first = hdd._satf_positioning(spec, 0.8, 1, False)
    expected = hdd._beta_mean_seek(spec, 0.8, 1, False) + hdd.rotational_latency_seconds(spec)
    assert abs(first - expected) <= 2e-3 * expected
    assert hdd._satf_positioning(_spec(track_to_track_seek_ms=0.61234, idle_W=1.0), 0.8, 1, False) == first  # a hit
