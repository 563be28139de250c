"""fio job plans: `quick` (under a minute), `standard` (under 15 minutes) or a YAML/JSON file.

A plan file holds either a job list or a grid (every combination), plus the
per-job timing::

    name: my-plan
    runtime_s: 2          # measured seconds per job
    ramp_s: 0.5           # unmeasured warm-up per job
    size: 256M            # test file size
    grid: {rw: [randread, write], bs: [4k, 1M], iodepth: [1, 32], numjobs: [1]}
    jobs: [{rw: randrw, bs: 16k, iodepth: 8, numjobs: 1, rwmixread: 70}]
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from iowatt.calibration.fioparse import FioParseError, size_bytes
from iowatt.models import strict_yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

RW = Literal["randread", "randwrite", "read", "write", "randrw"]


class PlanError(ValueError):
    pass


def bs_label(bs: int) -> str:
    if bs % (1 << 20) == 0:
        return f"{bs >> 20}m"
    if bs % 1024 == 0:
        return f"{bs >> 10}k"
    return str(bs)


def _size_bytes(cls: type, value: Any) -> int:
    """fio-style sizes ('128k', '1m', 4096) for a pydantic field; errors name what was found."""
    try:
        return size_bytes(value)
    except FioParseError as error:
        raise ValueError(str(error)) from None


class FioJob(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    rw: RW
    bs: int = Field(ge=512, le=64 << 20, description="block size, bytes (4k..1M in the built-in plans)")
    iodepth: int = Field(default=1, ge=1, le=1024)
    numjobs: int = Field(default=1, ge=1, le=256)
    rwmixread: int = Field(default=70, ge=0, le=100, description="percent reads, randrw only")

    _bs_bytes = field_validator("bs", mode="before")(_size_bytes)

    @property
    def id(self) -> str:
        mix = f"-m{self.rwmixread}" if self.rw == "randrw" else ""
        return f"{self.rw}{mix}-{bs_label(self.bs)}-qd{self.iodepth}-j{self.numjobs}"

    @property
    def read_fraction(self) -> float:
        if self.rw == "randrw":
            return self.rwmixread / 100.0
        return 1.0 if self.rw in ("randread", "read") else 0.0


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    runtime_s: float = Field(default=2.0, gt=0, le=600)
    ramp_s: float = Field(default=0.5, ge=0, le=60)
    size: int = Field(default=256 << 20, ge=1 << 20)
    ioengine: str = "libaio"
    jobs: list[FioJob]

    _plan_size_bytes = field_validator("size", mode="before")(_size_bytes)

    def estimated_seconds(self, repeat: int = 1) -> float:
        return repeat * len(self.jobs) * (self.runtime_s + self.ramp_s + 0.4)


def _grid(rw: list[str], bs: list[str], iodepth: list[int], numjobs: list[int], rwmixread: int = 70) -> list[FioJob]:
    return [FioJob(rw=r, bs=b, iodepth=q, numjobs=n, rwmixread=rwmixread) for r, b, q, n in itertools.product(rw, bs, iodepth, numjobs)]  # type: ignore[arg-type]


def quick() -> Plan:
    """27 jobs of 0.5 s (about 25 s a repeat): every direction, 4 KiB..1 MiB, queue depth 1..64, one and two jobs.

    Built so that a half holdout (drawn per rw kind and per QD1 / queued regime,
    see calibration.fit.split_holdout) still leaves the fit a QD1 and a queued
    job of every kind: QD1 jobs pin the latency, queued ones the ceilings."""
    jobs = [
        *_grid(["randread"], ["4k", "16k"], [1], [1]),
        *_grid(["randread"], ["4k"], [4, 16, 64], [1]),
        FioJob(rw="randread", bs=4096, iodepth=8, numjobs=2),
        FioJob(rw="randread", bs=65536, iodepth=8, numjobs=1),
        FioJob(rw="randread", bs=262144, iodepth=2, numjobs=1),
        *_grid(["read"], ["128k", "1m"], [1], [1]),
        FioJob(rw="read", bs=131072, iodepth=8, numjobs=1),
        FioJob(rw="read", bs=1 << 20, iodepth=4, numjobs=1),
        *_grid(["randwrite"], ["4k", "16k"], [1], [1]),
        *_grid(["randwrite"], ["4k"], [4, 16, 64], [1]),
        FioJob(rw="randwrite", bs=4096, iodepth=4, numjobs=2),
        FioJob(rw="randwrite", bs=65536, iodepth=8, numjobs=1),
        *_grid(["write"], ["128k", "1m"], [1], [1]),
        FioJob(rw="write", bs=262144, iodepth=2, numjobs=1),
        FioJob(rw="write", bs=1 << 20, iodepth=4, numjobs=1),
        *_grid(["randrw"], ["16k", "64k"], [1], [1]),
        FioJob(rw="randrw", bs=16384, iodepth=8, numjobs=1),
        FioJob(rw="randrw", bs=4096, iodepth=16, numjobs=1),
    ]
    return Plan(name="quick", runtime_s=0.5, ramp_s=0.1, size=128 << 20, jobs=jobs)


def standard() -> Plan:
    """Block size 4K..1M x randread/randwrite/read/write/randrw x iodepth 1..128, plus numjobs 4: 150 jobs of 4 s."""
    sizes = ["4k", "16k", "64k", "256k", "1m"]
    rws = ["randread", "randwrite", "read", "write", "randrw"]
    jobs = _grid(rws, sizes, [1, 4, 16, 64, 128], [1]) + _grid(rws, sizes, [16], [4])
    return Plan(name="standard", runtime_s=4.0, ramp_s=0.5, size=1 << 30, jobs=jobs)


# fio job-file options a plan keeps (the rest of a job file written by `iowatt advise` is what the runner passes anyway)
_FIO_JOB_KEYS = ("rw", "bs", "iodepth", "numjobs", "rwmixread")
_FIO_GLOBAL_KEYS = {"runtime": "runtime_s", "ramp_time": "ramp_s", "size": "size", "ioengine": "ioengine"}
_FIO_PASSED = ("direct", "time_based", "stonewall", "group_reporting", "randrepeat", "norandommap", "filename")


def _seconds(text: str, where: str) -> float:
    """fio times: a bare number is seconds; s, ms and us suffixes as fio reads them."""
    value = text.strip().lower()
    for suffix, scale in (("ms", 1e-3), ("us", 1e-6), ("s", 1.0), ("m", 60.0)):
        if value.endswith(suffix):
            value, unit = value[: -len(suffix)], scale
            break
    else:
        unit = 1.0
    try:
        return float(value) * unit
    except ValueError:
        raise PlanError(f"{where}: expected a time such as 2, 2s or 500ms, found {text!r}") from None


def fio_file_plan(path: Path) -> dict[str, Any]:
    """A fio job file (one [section] per job, [global] for runtime, ramp_time, size, ioengine) as a plan mapping;
    the job files `iowatt advise -o jobs.fio` writes read back through here."""
    import configparser

    parser = configparser.ConfigParser(allow_no_value=True, interpolation=None, strict=True)
    try:
        parser.read_string(path.read_text(), source=str(path))
    except (configparser.Error, UnicodeDecodeError) as error:
        raise PlanError(f"--plan {path}: not a fio job file ({' '.join(str(error).split())})") from None
    plan: dict[str, Any] = {"name": path.stem, "jobs": []}
    for name in parser.sections():
        options = dict(parser.items(name))
        where = f"--plan {path} [{name}]"
        known = (*_FIO_GLOBAL_KEYS, *_FIO_PASSED) if name == "global" else (*_FIO_JOB_KEYS, *_FIO_PASSED)
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise PlanError(f"{where}: expected only {', '.join(known)}, found {', '.join(unknown)}")
        if name == "global":
            for key, field in _FIO_GLOBAL_KEYS.items():
                if options.get(key) is not None:
                    plan[field] = _seconds(options[key], f"{where} {key}") if field.endswith("_s") else options[key]
        else:
            plan["jobs"].append({k: options[k] for k in _FIO_JOB_KEYS if options.get(k) is not None})
    return plan


def load_plan(spec: str) -> Plan:
    if spec == "quick":
        return quick()
    if spec == "standard":
        return standard()
    path = Path(spec)
    if not path.is_file():
        raise PlanError(f"--plan: expected quick, standard or a plan file, found {spec!r} (no such file)")
    if path.suffix.lower() == ".fio":
        return _validated(path, fio_file_plan(path))
    try:
        raw = strict_yaml.load(path.read_text()) if path.suffix.lower() in (".yaml", ".yml") else json.loads(path.read_text())
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        raise PlanError(f"--plan {path}: cannot parse ({error})") from None
    if not isinstance(raw, dict):
        raise PlanError(f"--plan {path}: expected a mapping with `jobs` and/or `grid`")
    return _validated(path, dict(raw))


def _validated(path: Path, raw: dict[str, Any]) -> Plan:
    """The plan of a file's mapping (a grid and/or jobs, timing), checked: one message naming what is wrong."""
    grid = raw.pop("grid", None)
    jobs = list(raw.pop("jobs", None) or [])
    try:
        if grid:
            jobs = [
                j.model_dump()
                for j in _grid(
                    grid.get("rw", ["randread"]), grid.get("bs", ["4k"]), grid.get("iodepth", [1]), grid.get("numjobs", [1]), grid.get("rwmixread", 70)
                )
            ] + jobs
        if not jobs:
            raise PlanError(f"--plan {path}: the plan has no jobs")
        plan = Plan.model_validate({"name": raw.pop("name", path.stem), **raw, "jobs": jobs})
    except ValidationError as error:
        first = error.errors()[0]
        raise PlanError(f"--plan {path}: {'.'.join(str(x) for x in first['loc'])}: {first['msg']}") from None
    ids = [j.id for j in plan.jobs]
    if len(set(ids)) != len(ids):
        raise PlanError(f"--plan {path}: a job appears twice ({sorted({i for i in ids if ids.count(i) > 1})[0]})")
    return plan


def fio_job_file(plan: Plan, header: str = "") -> str:
    """The plan as a fio job file (`iowatt collect fio --plan FILE` reads it back; fio runs it one job after another
    with --filename=FILE added).  `header`: comment lines, e.g. why each job is there."""
    lines = [f"# {line}" for line in header.splitlines()]
    lines += ["[global]", f"ioengine={plan.ioengine}", "direct=1", "time_based", "stonewall", "group_reporting",
              f"runtime={round(plan.runtime_s * 1000)}ms", f"ramp_time={round(plan.ramp_s * 1000)}ms", f"size={plan.size}", ""]
    for job in plan.jobs:
        lines += [f"[{job.id}]", f"rw={job.rw}", f"bs={job.bs}", f"iodepth={job.iodepth}", f"numjobs={job.numjobs}"]
        lines += [f"rwmixread={job.rwmixread}"] if job.rw == "randrw" else []
        lines.append("")
    return "\n".join(lines)
