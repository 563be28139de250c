"""NVMe power policies: APST, resting between checkpoints, ASPM; the first I/O after a rest pays the exit latency.

Oracles: the drive's published state table worked through by hand for a two-checkpoint timeline (each idle period's
energy = the power of each state x the time the policy keeps the drive in it, the entry and exit latencies of the
NVMe table, and the Linux APST rule 50 x (ENLAT + EXLAT)); energy conservation against the same run with the drive
held in its operational state (the busy part of both runs is the same flows, shifted by the wake latency).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from iowatt.models import catalog
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.scenarios.run import run_scenario

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "power_states" / "checkpoint_980pro_apst.yaml"
INTERVAL = 60.0
IDLE_W = 0.5                   # the 980 PRO's operational idle (catalog)
PS3_W, PS4_W = 0.040, 0.005    # AnandTech: PS3 40 mW (entry 2.0 ms, exit 1.2 ms), PS4 5 mW (entry 0.5 ms, exit 9.5 ms)


def _run(*sets: str) -> dict:
    return run_scenario(load(SCENARIO, list(sets)))[0]


def _apst_period_J(seconds: float) -> float:
    """One idle period of `seconds` under Linux's APST table, by hand: 160 ms idle in PS0 (50 x 3.2 ms), the 2.0 ms
    entry to PS3 at PS0's power, 500 ms in PS3 (50 x 10 ms), the 1.7 ms move to PS4 (PS3's exit 1.2 + PS4's entry 0.5)
    at PS3's power, the rest in PS4."""
    t0, e3, t3, e4 = 0.160, 0.002, 0.500, 0.0017
    return IDLE_W * (t0 + e3) + PS3_W * (t3 + e4) + PS4_W * (seconds - t0 - e3 - t3 - e4)


def test_apst_lowers_energy_between_checkpoints_and_the_next_checkpoint_pays_the_exit_latency():
    fixed = _run("storage.power_policy.kind=fixed")
    apst = _run()
    wake = 9.5e-3  # PS4's exit latency + PS0's entry latency (0)
    # every checkpoint starts after an idle period, so each waits for the drive to leave PS4
    for a, f in zip(apst["checkpoint"]["durations_seconds"], fixed["checkpoint"]["durations_seconds"], strict=True):
        assert a == pytest.approx(f + wake, rel=1e-12, abs=1e-9)
    assert apst["metrics"]["simulated_seconds"] == pytest.approx(fixed["metrics"]["simulated_seconds"] + 2 * wake, abs=1e-9)
    # two idle periods of 60 s (before each checkpoint; the run ends with the second): each replaces 0.5 W x 60 s by
    # the table's states; each wake is 9.5 ms more at the operational idle power
    periods = 2
    saved = periods * (IDLE_W * INTERVAL - _apst_period_J(INTERVAL))
    expected = fixed["metrics"]["ssd_energy_J"] - saved + 2 * wake * IDLE_W
    assert apst["metrics"]["ssd_energy_J"] == pytest.approx(expected, rel=1e-9)
    assert apst["metrics"]["ssd_energy_J"] < fixed["metrics"]["ssd_energy_J"]
    states = apst["energy"]["drives"]["ssd0"]
    assert states["wake_count"] == 2 and states["wake_latency_seconds_total"] == pytest.approx(2 * wake)
    seconds = states["power_state_seconds"]
    assert sum(seconds.values()) == pytest.approx(apst["metrics"]["simulated_seconds"])
    assert seconds["PS3"] == pytest.approx(periods * 0.5)
    assert seconds["PS4"] == pytest.approx(periods * (INTERVAL - 0.160 - 0.002 - 0.5 - 0.0017))


def test_resting_in_ps4_between_checkpoints_by_hand():
    """between_phases: once the save is on the drive it moves to PS4 at once (PS4's entry, 0.5 ms, at PS0's power);
    only the period after a checkpoint rests (the first 60 s precede any checkpoint)."""
    fixed = _run("storage.power_policy.kind=fixed")
    rest = _run("storage.power_policy.kind=between_phases", "storage.power_policy.rest_state=PS4")
    wake, entry = 9.5e-3, 0.5e-3
    rests = 1  # after checkpoint 1 (the run ends with checkpoint 2)
    saved = rests * (IDLE_W * INTERVAL - (IDLE_W * entry + PS4_W * (INTERVAL - entry)))
    expected = fixed["metrics"]["ssd_energy_J"] - saved + rests * wake * IDLE_W
    assert rest["metrics"]["ssd_energy_J"] == pytest.approx(expected, rel=1e-9)
    assert rest["checkpoint"]["durations_seconds"][1] == pytest.approx(fixed["checkpoint"]["durations_seconds"][1] + wake)
    assert rest["checkpoint"]["durations_seconds"][0] == pytest.approx(fixed["checkpoint"]["durations_seconds"][0])


def test_an_enterprise_drive_resting_in_an_operational_state_saves_nothing_and_pays_the_transition():
    """The D5-P5336's table has three operational states (S03): PS2 lowers the cap, not the idle power, so resting in it
    between checkpoints costs the same idle energy and the next checkpoint waits PS2's exit + PS0's entry (120 ms)."""
    sets = ["storage.device=solidigm-d5-p5336", "workload.size=33 GB"]
    fixed = _run(*sets, "storage.power_policy.kind=fixed")
    rest = _run(*sets, "storage.power_policy.kind=between_phases", "storage.power_policy.rest_state=PS2")
    idle = catalog.spec_from("ssd", "solidigm-d5-p5336").idle_W
    wake = 0.120
    assert rest["checkpoint"]["durations_seconds"][1] == pytest.approx(fixed["checkpoint"]["durations_seconds"][1] + wake)
    assert rest["metrics"]["ssd_energy_J"] == pytest.approx(fixed["metrics"]["ssd_energy_J"] + wake * idle, rel=1e-9)


def test_aspm_l1_saves_the_link_power_while_idle_and_costs_its_exit_latency():
    """ASPM L1 on the 980 PRO's Gen4 x4 link: 4 x 0.07 W saved once no command has been outstanding for the L1 entry
    time (32 us), and the first command of each burst waits the 64 us the drive reports (lspci: Exit Latency L1 <64us).
    Two idle periods (before each checkpoint) and two bursts."""
    fixed = _run("storage.power_policy.kind=fixed")
    l1 = _run("storage.power_policy.kind=fixed", "storage.power_policy.aspm=l1")
    wake, saving, entry = 64e-6, 4 * 0.07, 32e-6
    busy = sum(fixed["checkpoint"]["durations_seconds"])
    idle = fixed["metrics"]["simulated_seconds"] - busy - 2 * entry
    assert l1["metrics"]["simulated_seconds"] == pytest.approx(fixed["metrics"]["simulated_seconds"] + 2 * wake, abs=1e-9)
    expected = fixed["metrics"]["ssd_energy_J"] - saving * idle + 2 * wake * IDLE_W
    assert l1["metrics"]["ssd_energy_J"] == pytest.approx(expected, rel=1e-9)
    assert l1["energy"]["drives"]["ssd0"]["link_state_seconds"]["L1"] == pytest.approx(idle)


@pytest.mark.parametrize(("sets", "field"), [
    (["storage.device=solidigm-d5-p5336"], "power_policy.kind"),                     # no non-operational state: no APST
    (["storage.power_policy.aspm=l1.2"], "power_policy.aspm"),                        # the 980 PRO reports L1 only
    (["storage.power_policy.kind=between_phases"], "power_policy.rest_state"),        # where to rest is missing
    (["storage.device=kioxia-cm7-r", "storage.power_policy.kind=fixed", "storage.power_policy.aspm=l1"], "power_policy.aspm"),
    (["storage.power_policy.idle_seconds=[1.0]"], "power_policy.idle_seconds"),       # two usable states, one time
])
def test_a_policy_the_drive_cannot_follow_is_refused_naming_the_field(sets, field):
    with pytest.raises(ScenarioError, match=field.replace(".", r"\.")):
        load(SCENARIO, sets)


def test_power_over_time_bins_keep_the_energy():
    """Oracle: the binned power x the bin width adds up to the meter's energy (energy conservation of the resampling)."""
    doc = _run()
    drive = doc["energy"]["drives"]["ssd0"]
    total = sum(drive["power_W_bins"]) * drive["power_bin_seconds"]
    assert total == pytest.approx(doc["energy"]["components"]["ssd0"]["energy_J"], rel=1e-9)
    assert sum(drive["energy_J_by_part"].values()) == pytest.approx(doc["energy"]["components"]["ssd0"]["energy_J"], rel=1e-9)
