"""Goodput, interval, energy and cost of a checkpoint save design (a run with `workload.save`) under a failure model.

A design run reports its stall, when each checkpoint is restorable (durable on system.storage; staged
on the hosts for a tiered save), the shortest period its background work sustains, the restores
from each tier, the training power and each checkpoint's energy beyond it.  Here they meet the
failure model (models.goodput): the interval is Daly's for the stall but never shorter than the
design's background period; failures recover from the local copies (a tiered save, for the share
`failure.local_recovery_share`) or from the durable tier, losing the work since the last checkpoint
restorable there; energy per useful hour charges every checkpoint's energy beyond training power.
The last checkpoint of the run stands for the steady state (the first async checkpoint never waits).
"""

from __future__ import annotations

from typing import Any

from iowatt.models import goodput as gp

DESIGN_METRIC = "checkpoint_stall_last_seconds"  # present in every run of a save design


def is_design(metrics: dict[str, Any]) -> bool:
    return metrics.get(DESIGN_METRIC) is not None


def _save(resolved: dict[str, Any]) -> dict[str, Any]:
    return dict((resolved.get("workload") or {}).get("save") or {})


def recoveries(metrics: dict[str, Any], resolved: dict[str, Any], failure: gp.FailureModel) -> list[gp.Recovery]:
    """The recovery paths of the design: the durable tier for every failure, or the local copies of a tiered
    save for `local_recovery_share` of them (restart + that tier's simulated restore; ready when staged)."""
    stall = float(metrics[DESIGN_METRIC])
    durable = gp.Recovery(1.0, failure.restart_seconds + float(metrics.get("restore_durable_seconds") or 0.0),
                          float(metrics["checkpoint_durable_after_last_seconds"]))
    share = failure.local_recovery_share
    if _save(resolved).get("mode") != "tiered" or share <= 0.0:
        return [durable]
    staged = metrics.get("checkpoint_staged_after_last_seconds")
    local = gp.Recovery(share, failure.restart_seconds + float(metrics.get("restore_local_seconds") or 0.0),
                        float(staged) if staged is not None else stall)  # a memory stage is ready when the copy ends
    return [local, gp.Recovery(1.0 - share, durable.restart_seconds, durable.ready_after_seconds)]


def design_interval(metrics: dict[str, Any], resolved: dict[str, Any], failure: gp.FailureModel | None,
                    interval: float | str | None) -> tuple[float | None, dict[str, Any]]:
    """The compute interval between checkpoints (a number, or the Young / Daly / simulated optimum for the stall,
    at least the design's background period) and the interval metrics."""
    stall = float(metrics[DESIGN_METRIC])
    floor = float(metrics.get("checkpoint_period_min_seconds") or stall) - stall
    out: dict[str, Any] = {"checkpoint_background_floor_seconds": max(0.0, floor)}
    if failure is None:
        return (float(interval) if isinstance(interval, int | float) else None), out
    mtbf = failure.mtbf_seconds
    out.update(mtbf_seconds=mtbf, young_interval_seconds=max(gp.young_interval(stall, mtbf), floor),
               daly_interval_seconds=gp.design_interval(stall, float(metrics.get("checkpoint_period_min_seconds") or stall), mtbf))
    if isinstance(interval, int | float):
        return float(interval), out
    if interval == "young":
        return out["young_interval_seconds"], out
    if interval == "simulated":
        tau, _ = gp.monte_carlo_optimum(stall, mtbf, failure.restart_seconds, seed=int(resolved.get("seed", 0) or 0))
        out["simulated_interval_seconds"] = max(tau, floor)
        return out["simulated_interval_seconds"], out
    return out["daly_interval_seconds"], out


def design_metrics(metrics: dict[str, Any], resolved: dict[str, Any], failure: gp.FailureModel | None,
                   interval: float | str | None) -> dict[str, Any]:
    """Interval, goodput, training time lost per hour and energy per useful hour of a design run."""
    tau, out = design_interval(metrics, resolved, failure, interval)
    if tau is None or not tau > 0.0:
        return out
    stall = float(metrics[DESIGN_METRIC])
    out["checkpoint_interval_seconds"] = tau
    out["checkpoints_per_day"] = gp.checkpoints_per_day(tau, stall)
    if failure is None:
        return out
    paths = recoveries(metrics, resolved, failure)
    g = gp.design_goodput(tau, stall, failure.mtbf_seconds, paths)
    out["goodput"] = g
    out["training_time_lost_per_hour_seconds"] = (1.0 - g) * gp.SECONDS_PER_HOUR
    out["restart_seconds"] = paths[-1].restart_seconds
    run_W, per_checkpoint_J = metrics.get("training_power_W"), metrics.get("checkpoint_energy_J")
    if run_W is not None and per_checkpoint_J is not None:
        per_hour = gp.energy_per_useful_hour_at_J(g, tau, stall, float(run_W), float(per_checkpoint_J))
        out["system_energy_per_useful_hour_kWh"] = per_hour / 3.6e6
        out["system_energy_per_training_day_kWh"] = per_hour * 24.0 / 3.6e6
    return out


def stage_drives(resolved: dict[str, Any]) -> tuple[Any, int] | None:
    """(device, drives bought) of a tiered save's stage on every host, None when it has none."""
    from iowatt.simulator.storage import registry

    save = _save(resolved)
    stage = save.get("stage")
    if save.get("mode") != "tiered" or not isinstance(stage, dict):
        return None
    kind = registry.get(registry.kind_tag(stage))
    device, per_host = kind.drives_bought(kind.config.model_validate(stage))
    storage = resolved["system"]["storage"]
    target = registry.get(registry.kind_tag(storage))
    hosts = target.client_nodes(target.config.model_validate(storage))
    return device, per_host * hosts
