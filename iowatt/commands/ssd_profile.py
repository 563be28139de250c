"""`iowatt calibrate --kind ssd`'s fit (a bundle's fio jobs -> a calibrated drive profile) and the calibration errors
that become exit 2; shared by `iowatt calibrate` and `iowatt check-machine` (which calibrates on its own bundle)."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar

from iowatt.errors import UserError


def calibration_errors() -> tuple[type[Exception], ...]:
    from iowatt.calibration.bundle import BundleError
    from iowatt.calibration.dlio import DlioError
    from iowatt.calibration.fioparse import FioParseError
    from iowatt.calibration.fit import FitError
    from iowatt.calibration.pass_test import PassTestError
    from iowatt.calibration.plan import PlanError
    from iowatt.calibration.profile import ProfileError
    from iowatt.calibration.runner import CollectError

    return (BundleError, DlioError, FioParseError, FitError, PlanError, ProfileError, CollectError, PassTestError)


P = ParamSpec("P")
R = TypeVar("R")


def as_user_error(func: Callable[P, R]) -> Callable[P, R]:
    """The calibration package's own errors become a UserError (exit 2 under `user_errors`)."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except calibration_errors() as error:
            raise UserError(str(error)) from None

    return wrapper


def fit_ssd(bundle_path: Path, output: Path, base: str | None, more: list[str] | None, holdout: float, seed: int,
            name: str | None) -> None:
    """Fit an SSD profile to BUNDLE (and `more` bundles of the same drive) over the catalog SSD `base`, write it to `output`."""
    from dataclasses import replace

    from iowatt.calibration import bundle, fit, latency, profile
    from iowatt.calibration.dataset import load_jobs
    from iowatt.calibration.target import virtual_device_warning
    from iowatt.models import catalog
    from iowatt.output import write_text

    if base is None:
        raise UserError("--base: --kind ssd needs the catalog SSD whose values the bundle does not inform, found none")
    base_entry = catalog.lookup("ssd", base)
    manifest = bundle.load(bundle_path)
    warning = virtual_device_warning(manifest.target)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    jobs = load_jobs(bundle_path, manifest)
    training, held = fit.split_holdout(jobs, holdout, seed)
    more_paths = [Path(p) for p in more or []]
    for extra in more_paths:  # every job of a further bundle trains: the holdout is drawn from BUNDLE alone
        if "=" in extra.name:
            raise UserError(f"--more {extra}: --kind ssd takes a bundle path (BUNDLE=CLIENTS is for --kind cluster)")
        training += [replace(j, id=f"{extra.name}/{j.id}") for j in load_jobs(extra, bundle.load(extra))]
    result = fit.fit(training, base_entry.spec)  # type: ignore[arg-type]
    power_columns = sorted({k for j in training if j.power for k in j.power if k.endswith("_W") and not k.startswith("nvme_ps")})
    if power_columns:
        preferred = next((c for c in ("ipmi_system_W",) if c in power_columns), power_columns[0])
        result.power = fit.fit_power(training, preferred) or {}
    document = profile.build(name or profile.profile_name(output), base_entry.name, str(bundle_path), manifest, result,
                             [j.id for j in held], [j.id for j in training], seed, holdout, profile.inventory_measurements(bundle_path),
                             more=[str(p) for p in more_paths])
    spreads = latency.fit_spreads(training, latency.measured(bundle_path, manifest))  # the per-request mode's latency spreads
    latency.record(document, spreads, str(bundle_path), manifest.id)
    write_text(profile.dump(document), output)
    print(f"profile {output}: {len(training)} jobs fitted, {len(held)} held back; writes {'queue' if result.writes_queue else 'buffered'} "
          f"(weighted cost {', '.join(f'{k} {v:.3g}' for k, v in result.costs.items())})", file=sys.stderr)
    for key in result.informed:
        print(f"  {key:18s} {result.values[key]:14.6g}  +/- {result.rel_stderr[key]:.1%}", file=sys.stderr)
    for key, why in result.bounded.items():
        print(f"  {key:18s} {result.values[key]:14.6g}  ({why})", file=sys.stderr)
    for key, why in result.not_informed.items():
        print(f"  {key:18s} base value ({why})", file=sys.stderr)
    for key, (sigma, _note) in spreads.items():
        print(f"  {key:18s} {sigma:14.6g}  (fio clat percentiles of the QD1 jobs)", file=sys.stderr)
    errors = sorted(abs(r["error_pct"]) for r in result.residuals)
    print(f"  training residuals: median |error| {errors[len(errors) // 2]:.1f} %, max {errors[-1]:.1f} %", file=sys.stderr)


