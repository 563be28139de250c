"""What a storage configuration costs: its drives and their price, and the goodput, energy and
endurance of a simulated checkpoint configuration under a failure model (models.goodput)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from iowatt.models import goodput as gp
from iowatt.models import strict_yaml
from iowatt.scenarios import plan_designs
from iowatt.scenarios.loader import ScenarioError

PRICES_FILE = Path(__file__).resolve().parent.parent / "models" / "catalog" / "prices.yml"


@functools.cache
def load_prices(path: Path = PRICES_FILE) -> dict[str, dict[str, Any]]:
    """{device name: {usd_per_TB, date, provenance}} from models/catalog/prices.yml."""
    from iowatt.models.provenance import unwrap

    if not path.exists():
        return {}
    raw = strict_yaml.load(path.read_text()) or {}
    out: dict[str, dict[str, Any]] = {}
    for name, fields in (raw.get("entries") or {}).items():
        try:
            plain, record = unwrap(dict(fields), ranged=True)  # an assumed price carries its range
            price = float(plain["usd_per_TB"])
        except (KeyError, TypeError, ValueError) as error:
            raise ScenarioError(f"{path.name}: entry {name!r}: expected usd_per_TB: {{v, p, src|note}} and date; {error}") from None
        if not price > 0:
            raise ScenarioError(f"{path.name}: entry {name!r}: usd_per_TB: expected > 0, found {price}")
        out[str(name)] = {"usd_per_TB": price, "date": str(plain.get("date", "")), "provenance": record.get("usd_per_TB")}
    return out


def price_usd_per_TB(spec: Any) -> float | None:
    """The price list's price for this device name, else the catalog entry's own price field, else None."""
    entry = load_prices().get(str(getattr(spec, "name", "")))
    if entry is not None:
        return float(entry["usd_per_TB"])
    return getattr(spec, "price_usd_per_TB", None)


def device_spec(value: Any) -> Any:
    """An SSD or HDD spec from a catalog name or inline spec (SSDs first, as the scenario schema does)."""
    from iowatt.models import catalog

    return catalog.drive_spec(value)


def storage_drives(storage: dict[str, Any]) -> tuple[Any, int, float]:
    """(device, drives bought, share of their capacity that holds user data) for every storage kind:
    each kind's own planning facts (simulator.storage.registry)."""
    from iowatt.simulator.storage import registry

    return registry.planning_facts(registry.get(registry.kind_tag(storage)).config.model_validate(storage))


def _drive_write_amplification(metrics: dict[str, Any]) -> float | None:
    value = metrics.get("nand_write_amplification")
    return float(value) if isinstance(value, int | float) and value >= 1.0 else None


def derived_metrics(
    metrics: dict[str, Any],
    resolved: dict[str, Any],
    *,
    failure: gp.FailureModel | None = None,
    interval: float | str | None = None,
    write_amplification: float | None = None,
) -> dict[str, Any]:
    """Cost, goodput, energy and endurance of one simulated checkpoint configuration.

    Endurance uses the NAND write amplification the simulation measured
    (`nand_write_amplification`: NAND bytes / host bytes over the drives at the
    simulated fill), unless the plan forces one (`write_amplification`); 1 when
    neither is known.
    """
    device, count, usable = storage_drives(resolved["system"]["storage"])
    spec = device_spec(device)
    capacity_TB = float(spec.capacity_TB)
    out: dict[str, Any] = {"device_count": count, "capacity_TB_total": count * capacity_TB, "usable_capacity_TB": count * capacity_TB * usable}
    price = price_usd_per_TB(spec)
    out["price_usd_per_TB"] = price
    out["cost_usd"] = count * capacity_TB * price if price is not None else None
    if plan_designs.is_design(metrics):
        return _design(out, metrics, resolved, failure, interval, write_amplification, spec, count)
    delta = metrics.get("save_checkpoint_duration_mean_seconds")
    if delta is None:
        return out
    delta = float(delta)
    tau = _interval_seconds(out, delta, resolved, failure, interval)
    if tau is None or not tau > 0:
        return out
    out["checkpoint_interval_seconds"] = tau
    # With `workload.restore: true` the run also reads the checkpoint back: that read is part of every
    # restart, and its energy is not part of a save.  The save's share of the energy is taken as its
    # share of the simulated time (the system draws about the same power reading as writing).
    checkpoints = float(metrics.get("checkpoint_count") or 1.0)
    simulated = float(metrics.get("simulated_seconds") or 0.0)
    loads = metrics.get("load_checkpoint_duration_mean_seconds") is not None
    save_share = min(1.0, delta * checkpoints / simulated) if loads and simulated > 0 else 1.0
    per_day = _goodput_and_energy(out, metrics, resolved, failure, tau, delta, save_share)
    _endurance(out, metrics, spec, count, per_day, delta, write_amplification, save_share)
    return out


def _design(out: dict[str, Any], metrics: dict[str, Any], resolved: dict[str, Any], failure: gp.FailureModel | None,
            interval: float | str | None, write_amplification: float | None, spec: Any, count: int) -> dict[str, Any]:
    """A save design's run (scenarios.plan_designs): its stage drives' cost, goodput and energy, and the durable
    tier's endurance and SSD energy per day from the drives' own byte counters."""
    stage = plan_designs.stage_drives(resolved)
    if stage is not None:
        stage_spec = device_spec(stage[0])
        stage_price = price_usd_per_TB(stage_spec)
        out["stage_device_count"] = stage[1]
        out["stage_cost_usd"] = stage[1] * float(stage_spec.capacity_TB) * stage_price if stage_price is not None else None
        out["cost_usd"] = out["cost_usd"] + out["stage_cost_usd"] if None not in (out["cost_usd"], out["stage_cost_usd"]) else None
    out.update(plan_designs.design_metrics(metrics, resolved, failure, interval))
    per_day = out.get("checkpoints_per_day")
    if per_day is None:
        return out
    # every drive of system.storage (a lumped cluster's too) from the run's own counters, per checkpoint
    durable = {**metrics, "drive_bytes_written_total_GB": metrics.get("tier_durable_drive_bytes_written_total_GB")}
    stall = float(metrics[plan_designs.DESIGN_METRIC])
    _endurance(out, durable, spec, count, per_day, stall, write_amplification, 1.0)
    above_idle = float(metrics.get("tier_durable_energy_per_checkpoint_J") or 0.0)
    out["ssd_energy_per_day_Wh"] = (above_idle * per_day + count * spec.idle_W * gp.SECONDS_PER_DAY) / 3600.0
    return out


def _interval_seconds(out: dict[str, Any], delta: float, resolved: dict[str, Any], failure: gp.FailureModel | None,
                      interval: float | str | None) -> float | None:
    """The checkpoint interval: a given number, or the Young / Daly / simulated optimum for the failure model."""
    tau: float | None = None
    if failure is not None:
        mtbf = failure.mtbf_seconds
        out["mtbf_seconds"] = mtbf
        out["young_interval_seconds"] = gp.young_interval(delta, mtbf)
        out["daly_interval_seconds"] = gp.daly_interval(delta, mtbf)
    if interval == "daly" or (interval is None and failure is not None):
        tau = out.get("daly_interval_seconds")
    elif interval == "young":
        tau = out.get("young_interval_seconds")
    elif interval == "simulated" and failure is not None:
        # the exact optimum by simulation: seeded exponential failures over 200,000 failures' horizon
        tau, _ = gp.monte_carlo_optimum(delta, failure.mtbf_seconds, failure.restart_seconds, seed=int(resolved.get("seed", 0) or 0))
        out["simulated_interval_seconds"] = tau
    elif isinstance(interval, int | float):
        tau = float(interval)
    return tau


def _goodput_and_energy(out: dict[str, Any], metrics: dict[str, Any], resolved: dict[str, Any], failure: gp.FailureModel | None,
                        tau: float, delta: float, save_share: float) -> float:
    """Goodput, lost work and system energy per useful hour at interval `tau`; returns checkpoints per day."""
    checkpoints = float(metrics.get("checkpoint_count") or 1.0)
    load = metrics.get("load_checkpoint_duration_mean_seconds")
    if failure is not None:
        restart = failure.restart_seconds + float(load or 0.0)
        out["restart_seconds"] = restart
        out["goodput"] = gp.goodput(tau, delta, failure.mtbf_seconds, restart)
        out["expected_lost_work_seconds"] = gp.expected_lost_work(tau, delta, failure.mtbf_seconds)
        energy = metrics.get("system_energy_J")
        if energy is not None and delta > 0:
            per_save = float(energy) * save_share / checkpoints
            run_W = per_save / delta + _gpu_compute_extra_W(resolved)
            per_hour = gp.energy_per_useful_hour_J(tau, delta, failure.mtbf_seconds, restart, run_W, per_save)
            out["system_energy_per_useful_hour_kWh"] = per_hour / 3.6e6
            out["system_energy_per_training_day_kWh"] = per_hour * 24.0 / 3.6e6
    per_day = gp.checkpoints_per_day(tau, delta)
    out["checkpoints_per_day"] = per_day
    return per_day


def _endurance(out: dict[str, Any], metrics: dict[str, Any], spec: Any, count: int, per_day: float, delta: float,
               write_amplification: float | None, save_share: float) -> None:
    """Drive writes per day, endurance years and SSD energy per day at `per_day` checkpoints."""
    checkpoints = float(metrics.get("checkpoint_count") or 1.0)
    # bytes the drives receive per checkpoint: parity and mirror copies included when the run reports them
    written_GB = metrics.get("drive_bytes_written_total_GB") or metrics.get("bytes_written_total_GB") or 0.0
    checkpoint_bytes = float(written_GB) * 1e9 / checkpoints
    capacity_TB = float(spec.capacity_TB)
    wa = write_amplification if write_amplification is not None else (_drive_write_amplification(metrics) or 1.0)
    out["write_amplification"] = wa
    capacity_bytes = count * capacity_TB * 1e12
    out["drive_writes_per_day"] = gp.drive_writes_per_day(checkpoint_bytes, per_day, capacity_bytes)
    nand_dwpd = gp.drive_writes_per_day(checkpoint_bytes, per_day, capacity_bytes, wa)
    out["nand_drive_writes_per_day"] = nand_dwpd
    rated = getattr(spec, "endurance_dwpd", None)
    if rated:
        out["endurance_years"] = gp.endurance_years(rated, spec.warranty_years, nand_dwpd, getattr(spec, "endurance_rating_wa", 1.0))
    energy = metrics.get("ssd_energy_J")
    if energy is not None:
        busy = min(per_day * delta, gp.SECONDS_PER_DAY)
        idle = count * spec.idle_W * (gp.SECONDS_PER_DAY - busy)
        out["ssd_energy_per_day_Wh"] = (float(energy) * save_share / checkpoints * per_day + idle) / 3600.0


def _gpu_compute_extra_W(resolved: dict[str, Any]) -> float:
    """GPUs compute between checkpoints and wait during a blocking save: n x (active - idle) W more while training."""
    from iowatt.models import catalog

    gpus = resolved["system"].get("gpus") or {}
    count = int(gpus.get("count", 0) or 0)
    if count <= 0 or not gpus.get("model"):
        return 0.0
    gpu = catalog.spec_from("gpu", gpus["model"])
    return count * (gpu.active_W - gpu.idle_W)  # type: ignore[attr-defined]
