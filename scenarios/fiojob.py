"""Read a real fio job file into a `workload: {kind: fio, ...}` mapping.

Format (fio(1), "JOB FILE FORMAT"): INI-style sections, `[global]` options
apply to every job, each other section is one job; `key=value` or a bare
`key` for boolean flags; `#` and `;` start comments.  One job section is
modelled (use numjobs= for parallel copies of a job); several sections are
refused by name.

Sizes follow fio's default `kb_base=1024` compatibility mode: k/K/KB, m/M/MB,
g/G/GB, t/T/TB are powers of two and the IEC spellings KiB/MiB/GiB/TiB are
powers of ten (fio's documented inversion; `kb_base=1000` swaps them back).
Times are seconds unless suffixed (us, ms, s, m = minutes, h, d).

Options that change what the device does but are not modelled are refused
with exit status 2, naming the option; options that only change fio's
reporting or bookkeeping are accepted and have no effect (IGNORED).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from iowatt.models.units import UnitError, fio_size_bytes
from iowatt.scenarios.loader import ScenarioError

# fio option -> FioParams field, for options taken as they are
DIRECT = {
    "rw": "rw", "readwrite": "rw", "iodepth": "iodepth", "numjobs": "numjobs", "ioengine": "ioengine",
    "rwmixread": "rwmixread", "filename": "filename", "directory": "filename", "name": "name",
}
FLAGS = {"direct": "direct", "time_based": "time_based", "overwrite": "overwrite", "norandommap": "norandommap"}
SIZES = {"bs": "bs", "blocksize": "bs", "size": "size", "io_size": "io_size", "io_limit": "io_size"}
TIMES = {"runtime": "runtime"}
# accepted, no effect on the model: reporting, bookkeeping, and buffer contents that a drive without
# compression or deduplication cannot see
IGNORED = {
    "group_reporting", "thread", "randrepeat", "invalidate", "stonewall", "description", "lat_percentiles",
    "clat_percentiles", "refill_buffers", "allrandrepeat", "random_generator", "disable_lat", "disable_clat",
    "disable_slat", "gtod_reduce", "unified_rw_reporting", "kb_base", "fallocate", "end_fsync", "create_on_open",
}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([A-Za-z%]*)\s*$")
_TIME = {"": 1.0, "s": 1.0, "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def parse_fio_size(text: str, option: str, where: str, kb_base: int = 1024) -> float:
    """A size option of the job file (models.units.fio_size_bytes: fio's kb_base convention)."""
    if text.strip().endswith("%"):
        raise ScenarioError(f"{where}: {option}: percentages of the device are not supported, found {text!r}; give a size")
    try:
        return fio_size_bytes(text, kb_base)
    except UnitError as error:
        raise ScenarioError(f"{where}: {option}: {error}") from None


def parse_fio_time(text: str, option: str, where: str) -> float:
    match = _NUMBER.match(text)
    if match is None or match.group(2).lower() not in _TIME:
        raise ScenarioError(f"{where}: {option}: expected a time such as 60, 60s, 5m, found {text!r}")
    return float(match.group(1)) * _TIME[match.group(2).lower()]


def _flag(value: str | None, option: str, where: str) -> bool:
    if value is None:
        return True
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise ScenarioError(f"{where}: {option}: expected 0 or 1, found {value!r}")


def read_sections(text: str, where: str) -> list[tuple[str, list[tuple[str, str | None, int]]]]:
    """[(section, [(key, value or None, line number)])] in file order."""
    sections: list[tuple[str, list[tuple[str, str | None, int]]]] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise ScenarioError(f"{where}:{number}: expected a section header such as [job1], found {raw!r}")
            sections.append((line[1:-1].strip(), []))
            continue
        if not sections:
            raise ScenarioError(f"{where}:{number}: option before any [section], found {raw!r}")
        key, sep, value = line.partition("=")
        key = key.strip()
        if "$" in line:
            raise ScenarioError(f"{where}:{number}: {key}: environment variables (${{...}}) are not expanded; give the value")
        sections[-1][1].append((key, value.strip() if sep else None, number))
    return sections


def parse_job_file(path: str | Path) -> dict[str, Any]:
    """The fio job file as a `workload` mapping (kind fio); ScenarioError (exit 2) names what is wrong."""
    p = Path(path)
    where = str(p)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise ScenarioError(f"--fio {where}: no such job file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as error:
        raise ScenarioError(f"--fio {where}: cannot read the job file ({error.__class__.__name__})") from None
    sections = read_sections(text, where)
    jobs = [s for s in sections if s[0] != "global"]
    if not jobs:
        raise ScenarioError(f"{where}: expected one job section (e.g. [randread]), found only [global]" if sections else f"{where}: empty job file")
    if len(jobs) > 1:
        names = ", ".join(f"[{n}]" for n, _ in jobs)
        raise ScenarioError(f"{where}: expected one job section, found {len(jobs)} ({names}); run them one at a time or use numjobs=")
    options = [o for name, opts in sections if name == "global" for o in opts] + jobs[0][1]
    kb_base = 1024
    for key, value, _ in options:
        if key == "kb_base" and value is not None:
            kb_base = 1000 if value.strip() == "1000" else 1024
    workload: dict[str, Any] = {"kind": "fio", "name": jobs[0][0]}
    for key, value, number in options:
        at = f"{where}:{number}"
        if key in IGNORED:
            continue
        if key in FLAGS:
            workload[FLAGS[key]] = _flag(value, key, at)
        elif value is None:
            raise ScenarioError(f"{at}: {key}: expected {key}=VALUE, found no value")
        elif key in DIRECT:
            workload[DIRECT[key]] = value
        elif key in SIZES:
            if "," in value or ":" in value or "-" in value:
                raise ScenarioError(f"{at}: {key}: separate read/write sizes and ranges are not supported, found {value!r}")
            workload[SIZES[key]] = parse_fio_size(value, key, at, kb_base)
        elif key in TIMES:
            workload[TIMES[key]] = parse_fio_time(value, key, at)
        elif key == "rwmixwrite":
            workload["rwmixread"] = 100.0 - float(value)
        elif key == "percentile_list":
            workload["percentile_list"] = [float(x) for x in value.split(":") if x]
        else:
            raise ScenarioError(
                f"{at}: unsupported fio option {key!r}; iowatt models: "
                f"{', '.join(sorted({*DIRECT, *FLAGS, *SIZES, *TIMES, 'rwmixwrite', 'percentile_list'}))} "
                f"(and ignores {', '.join(sorted(IGNORED))})"
            )
    rw = workload.get("rw")
    if isinstance(rw, str) and ":" in rw:
        raise ScenarioError(f"{where}: rw: sequential offsets such as {rw!r} are not supported; give rw without ':N'")
    return workload
