"""Calibrated device profiles: a YAML file that is also a valid catalog file (kind + entries).

    format: iowatt-profile
    version: 1
    kind: ssd
    entries:
      NAME: {...every SSDSpec field, wrapped with provenance...}
    calibration: {base, bundle, holdout, uncertainty, residuals, ...}

Fitted values carry `p: calibrated`, `src: <bundle path> (manifest <id>)` and `fitted_on: [<bundle path>]`;
values the bundle does not inform keep the base device's value and provenance,
with a note saying so.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from statistics import NormalDist
from typing import Any

import yaml
from iowatt.calibration.fit import FitResult
from iowatt.models import strict_yaml
from iowatt.models.provenance import unwrap

FORMAT = "iowatt-profile"
# fitted fields whose log values correlate less than this are written as independent: below it, a sampler's joint draw
# moves no interval by more than the 8-32 base points it draws resolve (a correlation of 0.05 changes the variance of a
# sum of two equal terms by 5 %, half of that in its width)
CORRELATION_KEPT = 0.05
VERSION = 1


class ProfileError(ValueError):
    pass


def _number(value: float) -> float:
    return float(f"{value:.6g}") if math.isfinite(value) else value


def inventory_measurements(bundle_path: Path) -> dict[str, tuple[float, str]]:
    """Fields the bundle's inventory measured directly: the block device's capacity (sectors x 512 from /sys/block)."""
    import json

    try:
        info = json.loads((bundle_path / "inventory.json").read_text())
    except (OSError, ValueError):
        return {}
    device = info.get("block_device") or {}
    size = device.get("size_bytes")
    if not isinstance(size, int | float) or size <= 0:
        return {}
    return {"capacity_TB": (size / 1e12, f"{bundle_path}/inventory.json: /sys/block/{device.get('name')}/size x 512 B")}


def fitted_range(value: float, rel_stderr: float) -> dict[str, Any]:
    """A fitted value's uncertainty as provenance keys: the standard error (`stderr`, first order: value x the relative
    one), and the range the fit supports.  The fit is in log space (calibration.leastsq), so its error is normal in
    log(value): the 5 % and 95 % quantiles are value x e^(-+1.645 rel_stderr), shape log-normal, which
    models.uncertainty.range_of reads before `stderr` (a normal value +- 1.645 stderr would go below zero for a
    poorly informed value).  Nothing where the fit gave no standard error, nor where its interval overflows a float
    (a column the Jacobian barely sees gives a log-space error of hundreds: the bundle does not pin that value, and
    e^(1.645 x 500) is no range; noisy bundles on a loaded machine produced it)."""
    if not (math.isfinite(rel_stderr) and rel_stderr >= 0 and math.isfinite(value) and value > 0):
        return {}
    z = NormalDist().inv_cdf(0.95)
    if math.log(value) + z * rel_stderr >= math.log(sys.float_info.max):
        return {}
    return {"stderr": _number(value * rel_stderr), "low": _number(value * math.exp(-z * rel_stderr)),
            "high": _number(value * math.exp(z * rel_stderr)), "shape": "log-normal",
            "range_note": f"the fit's 90 % interval: relative standard error {rel_stderr:.2%} in log space (Jacobian, s^2 (J^T J)^-1)"}


def profile_name(output: Path) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", output.stem.lower()).strip("-")
    return name or "calibrated"


def _fitted_values(values: dict[str, Any], result: FitResult) -> tuple[dict[str, Any], set[str]]:
    """The fit's values, with active powers from the fitted energy per byte where the bundle had power; and
    the set of fields the bundle calibrated."""
    fitted = dict(result.values)
    power = result.power or {}
    if "read_J_per_byte" in power and "seq_read_MBps" in result.informed:
        fitted["active_read_W"] = values["idle_W"] + max(power["read_J_per_byte"], 0.0) * fitted["seq_read_MBps"] * 1e6
    if "write_J_per_byte" in power and "seq_write_MBps" in result.informed:
        fitted["active_write_W"] = values["idle_W"] + max(power["write_J_per_byte"], 0.0) * fitted["seq_write_MBps"] * 1e6
    calibrated = set(result.informed) | set(result.bounded) | {k for k in ("active_read_W", "active_write_W") if k in fitted}
    return fitted, calibrated


def _entry_fields(base: Any, base_name: str, bundle_path: str, manifest: Any, result: FitResult, training: list[str],
                  fitted: dict[str, Any], calibrated: set[str], measured: dict[str, tuple[float, str]], more: list[str]) -> dict[str, Any]:
    """Every SSDSpec field with its provenance: measured on the machine, calibrated by the fit, or the base drive's."""
    src = "; ".join([f"{bundle_path} (manifest {manifest.id})", *more])
    power = result.power or {}
    fields: dict[str, Any] = {}
    for key, value in base.spec.model_dump(mode="json").items():
        if key == "name":
            continue
        if key in measured:
            fields[key] = {"v": _number(measured[key][0]), "p": "measured", "src": measured[key][1]}
            continue
        if key in calibrated:
            note = f"fitted by iowatt calibrate on {len(training)} jobs (base {base_name})"
            if key in result.rel_stderr:
                note += f"; relative standard error {result.rel_stderr[key]:.2%}"
            if key in result.bounded:
                note += f"; {result.bounded[key]}"
            if key.startswith("active_"):
                note += f"; incremental power from {power.get('column')} over idle_W of the base"
            fields[key] = {"v": _number(fitted[key]), "p": "calibrated", "src": src, "note": note, "fitted_on": [bundle_path, *more]}
            fields[key] |= fitted_range(fitted[key], result.rel_stderr.get(key, math.nan))
            together = {other: _number(rho) for other, rho in sorted(result.correlation.get(key, {}).items())
                        if "stderr" in fields[key] and other in calibrated and abs(rho) >= CORRELATION_KEPT}
            if together:
                fields[key]["correlation"] = together
            continue
        prov = base.provenance.get(key)
        if prov is None:
            if key == "model":  # the measured device, not the base drive
                device = manifest.target.get("model") or manifest.target.get("device") or "unknown device"
                value = f"{device} (calibrated from {bundle_path}; unmeasured fields from {base_name})"
            fields[key] = value
            continue
        wrapped: dict[str, Any] = {"v": value, "p": prov.p}
        if prov.src:
            wrapped["src"] = prov.src
        why = result.not_informed.get(key, "not a parameter of the fio fit")
        wrapped["note"] = "; ".join(x for x in (prov.note, f"base {base_name} value, not informed by {bundle_path}: {why}") if x)
        if prov.low is not None:  # the base's range stays with its value (an assumed value must carry one to load)
            wrapped.update(low=prov.low, high=prov.high, shape=prov.shape, range_note=prov.range_note)
        fields[key] = wrapped
    fields["writes_queue"] = {
        "v": bool(result.writes_queue),
        "p": "calibrated",
        "src": bundle_path,
        "fitted_on": [bundle_path],
        "note": "the fit compared writes acknowledged from a buffer with writes that queue on the units, and kept the better",
    }
    return fields


def build(
    name: str,
    base_name: str,
    bundle_path: str,
    manifest: Any,
    result: FitResult,
    holdout: list[str],
    training: list[str],
    seed: int,
    fraction: float,
    measured: dict[str, tuple[float, str]] | None = None,
    more: list[str] | None = None,
) -> dict[str, Any]:
    """The profile document.  `measured`: fields read off the machine (value, source), e.g. the capacity from the inventory;
    `more`: further bundles of the same drive whose jobs were fitted too (`iowatt calibrate --more`)."""
    from iowatt.models import catalog

    base = catalog.lookup("ssd", base_name)
    fitted, calibrated = _fitted_values(base.spec.model_dump(mode="json"), result)
    fields = _entry_fields(base, base_name, bundle_path, manifest, result, training, fitted, calibrated, measured or {}, more or [])
    uncertainty = {
        k: {"value": _number(result.values[k]), "rel_stderr": _number(result.rel_stderr[k]), "stderr": _number(result.values[k] * result.rel_stderr[k])}
        for k in result.informed
    }
    return {
        "format": FORMAT,
        "version": VERSION,
        "kind": "ssd",
        "entries": {name: fields},
        "calibration": {
            "name": name,
            "base": base_name,
            "bundle": {
                "path": bundle_path,
                "id": manifest.id,
                "created": manifest.created,
                "device": manifest.target.get("device"),
                "model": manifest.target.get("model"),
                "filesystem": manifest.target.get("filesystem"),
                "more": more or [],
            },
            "model": "models.ssd law: X = min(N / (L0 + (N - 1) S), ceiling); see calibration/model.py",
            # also in the entry (SSDSpec.writes_queue), so `iowatt run` uses the same law
            "writes_queue": result.writes_queue,
            "costs": {k: _number(v) for k, v in result.costs.items()},
            "calibrated": sorted(calibrated),
            "not_informed": dict(sorted(result.not_informed.items())),
            "bounded": dict(sorted(result.bounded.items())),
            "uncertainty": uncertainty,
            "power": result.power or None,
            "fit": {"training_jobs": len(training), "dof": result.dof, "cost": _number(result.cost), "s": _number(result.s)},
            "holdout": {"fraction": fraction, "seed": seed, "jobs": sorted(holdout)},
            "training": sorted(training),
            "residuals": [{k: (_number(v) if isinstance(v, float) else v) for k, v in row.items()} for row in result.residuals],
        },
    }


def dump(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, width=200)


def load(path: Path) -> tuple[dict[str, float], dict[str, Any], dict[str, Any]]:
    """(plain SSD values, the calibration section, the raw document) of a profile file."""
    if not path.is_file():
        raise ProfileError(f"--profile {path}: no such file")
    try:
        document = strict_yaml.load(path.read_text())
    except yaml.YAMLError as error:
        raise ProfileError(f"--profile {path}: not valid YAML ({error})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ProfileError(f"--profile {path}: expected format {FORMAT!r}, found {document.get('format') if isinstance(document, dict) else None!r}")
    if document.get("version") != VERSION:
        raise ProfileError(f"--profile {path}: expected profile version {VERSION}, found {document.get('version')!r}")
    entries = document.get("entries") or {}
    if document.get("kind") != "ssd" or len(entries) != 1:
        raise ProfileError(f"--profile {path}: expected kind ssd with one entry")
    ((name, fields),) = entries.items()
    plain, _ = unwrap(dict(fields))
    from iowatt.models.ssd import SSDSpec

    try:
        spec = SSDSpec.model_validate({"name": name, **plain})
    except ValueError as error:
        raise ProfileError(f"--profile {path}: entry {name!r} is invalid: {error}") from None
    return spec.model_dump(), document.get("calibration") or {}, document
