"""Benchmarks of the simulator itself (issue 8): speed, scale and memory, as ratios measured in one run.

    python benchmarks/run.py            # the full table (what `make bench` runs)
    python benchmarks/run.py --quick    # one repetition, small sizes, < 20 s: the smoke test runs this

Prints one line per target (value, target, PASS/MISS; INFO where the issue
sets no target) and writes benchmarks/results.json.  Every figure is the
median of repetitions; every comparison is measured in this process run, so
machine noise largely cancels in the ratios.  Targets are goals to report
against, not assertions: the script exits 0 whether they pass or not.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(HERE), str(ROOT)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import reference  # noqa: E402
import simpy  # noqa: E402
import uncertainty  # noqa: E402
from checks import check  # noqa: E402
from row_scale import row_scale  # noqa: E402
from sweep import row_sweep  # noqa: E402

SINGLE = "checkpoint_llama405b_8gpu"            # 8 H100s, one Micron 6550 ION (PCIe Gen5 x4) at PS1
FILL_STUDY = "storagereview/ckpt_p5336"         # 3 passes x 33 checkpoints of 1,636 GB on a 61.44 TB QLC drive
CHECKPOINT_GB = 1636                            # Llama 3.1 405B, StorageReview / DLIO
REQUEST_BYTES = 2**20                           # the per-I/O reference: one event per 1 MiB request
REFERENCE_LIMIT_SECONDS = 30.0                  # issue 8: run the per-I/O side reduced if it would take longer
RANDREAD_BYTES = 4096                           # row 5: 4K random reads at QD32
RANDREAD_DEPTH = 32


# ------------------------------------------------------------------------------------------ helpers


def median_time(fn: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.perf_counter) -> tuple[float, Any]:
    """Median seconds of `repeat` calls on `clock` (wall by default; time.process_time: this process's CPU, one core's
    work whatever else runs), and the last call's result."""
    times = []
    out = None
    for _ in range(repeat):
        began = clock()
        out = fn()
        times.append(clock() - began)
    return statistics.median(times), out


@contextmanager
def counting_simpy_steps() -> Iterator[list[int]]:
    """Count every SimPy event processed (Environment.step calls) while active; never used while timing."""
    original = simpy.Environment.step
    count = [0]

    def step(self: simpy.Environment) -> None:
        count[0] += 1
        original(self)

    simpy.Environment.step = step  # type: ignore[method-assign]
    try:
        yield count
    finally:
        simpy.Environment.step = original  # type: ignore[method-assign]


def load_scenario(name: str, overrides: list[str] | tuple[str, ...] = ()):
    from iowatt.scenarios.loader import load

    return load(name, list(overrides))


def run_once(scenario) -> tuple[dict[str, Any], Any]:
    from iowatt.scenarios.run import run_scenario

    return run_scenario(scenario)


def engine_events(engine: dict[str, Any]) -> int:
    """SimPy events the flow engine scheduled and handled: component events (live and stale) and same-instant batches."""
    return int(engine["events"] + engine["stale_events"] + engine["batches"])


# ------------------------------------------------------------------------------------------ rows


def row_single(repeat: int) -> dict[str, Any]:
    scenario = load_scenario(SINGLE, [f"workload.size={CHECKPOINT_GB} GB"])
    run_once(scenario)  # warm imports and caches outside the timing
    walls = []
    doc: dict[str, Any] = {}
    for _ in range(repeat):
        doc, sim = run_once(scenario)
        walls.append(sim.wall_seconds)
    with counting_simpy_steps() as steps:
        run_once(scenario)
    wall_ms = statistics.median(walls) * 1e3
    return {
        "id": 1,
        "name": f"single checkpoint {CHECKPOINT_GB} GB, 8 GPUs, 1 Gen5 SSD",
        "checks": [
            check("engine_wall_ms", wall_ms, "ms", "<=", 20.0),
            check("engine_events_count", engine_events(doc["engine"]), "events", "info", None),
        ],
        "detail": {
            "scenario": f"{SINGLE} --set workload.size='{CHECKPOINT_GB} GB'",
            "engine_wall_ms": wall_ms,
            "repetitions": repeat,
            "engine": doc["engine"],
            "simpy_events_count": steps[0],
            "simulated_seconds": doc["metrics"]["simulated_seconds"],
        },
    }


def row_bytes_independence(repeat: int) -> dict[str, Any]:
    # O_DIRECT on both sides: with the page cache 4 GB fits in the dirty buffer and 4 TB does not, a
    # different physical regime (an extra write-back phase), not a cost of bytes in the engine
    small = load_scenario(SINGLE, ["workload.size=4 GB", "workload.io_path=direct"])
    large = load_scenario(SINGLE, ["workload.size=4 TB", "workload.io_path=direct"])
    run_once(small)
    run_once(large)
    walls: dict[str, list[float]] = {"small": [], "large": []}
    docs: dict[str, dict[str, Any]] = {}
    for _ in range(max(repeat, 3)):  # interleaved, so drift hits both sides alike
        for key, scenario in (("small", small), ("large", large)):
            doc, sim = run_once(scenario)
            walls[key].append(sim.wall_seconds)
            docs[key] = doc
    steps: dict[str, int] = {}
    for key, scenario in (("small", small), ("large", large)):
        with counting_simpy_steps() as count:
            run_once(scenario)
        steps[key] = count[0]
    events = {k: engine_events(d["engine"]) for k, d in docs.items()}
    wall = {k: statistics.median(v) for k, v in walls.items()}
    breakpoints = {k: d["engine"]["breakpoints"] for k, d in docs.items()}
    event_ratio = events["large"] / events["small"]
    wall_ratio = wall["large"] / wall["small"]
    # fill-band and SLC breakpoints are state changes a bigger write really reaches; without them the
    # engine's work is the flows' starts and completions, which do not depend on bytes
    flow_events = {k: events[k] - 2 * breakpoints[k] for k in events}
    return {
        "id": 2,
        "name": "bytes independence: 4 GB vs 4 TB",
        "checks": [
            check("event_ratio_abs_deviation", abs(event_ratio - 1.0), "fraction", "<=", 0.10),
            check("wall_ratio", wall_ratio, "x", "<=", 2.0),
        ],
        "detail": {
            "events_small": events["small"],
            "events_large": events["large"],
            "event_ratio": event_ratio,
            "simpy_events_small": steps["small"],
            "simpy_events_large": steps["large"],
            "breakpoints_small": breakpoints["small"],
            "breakpoints_large": breakpoints["large"],
            "events_without_breakpoints_small": flow_events["small"],
            "events_without_breakpoints_large": flow_events["large"],
            "wall_small_ms": wall["small"] * 1e3,
            "wall_large_ms": wall["large"] * 1e3,
            "io_path": "direct (both sides; buffered 4 GB fits in the page cache and adds a write-back phase)",
            "why_events_could_differ": "the pSLC cliff fires only on drives with a pSLC cache (simulator/storage/ssd.py); "
            "it is one component event plus one batch",
        },
    }


def row_fill_study(repeat: int) -> dict[str, Any]:
    scenario = load_scenario(FILL_STUDY)
    run_once(scenario)
    walls, engine_walls = [], []
    doc: dict[str, Any] = {}
    for _ in range(repeat):
        began = time.perf_counter()
        doc, sim = run_once(scenario)
        walls.append(time.perf_counter() - began)
        engine_walls.append(sim.wall_seconds)
    wall = statistics.median(walls)
    return {
        "id": 3,
        "name": "fill study: 3 passes x 33 checkpoints of 1,636 GB, 61.44 TB QLC",
        "checks": [check("wall_seconds", wall, "s", "<=", 0.5)],
        "detail": {
            "scenario": FILL_STUDY,
            "wall_seconds": wall,
            "engine_wall_seconds": statistics.median(engine_walls),
            "checkpoints": doc["metrics"]["checkpoint_count"],
            "engine": doc["engine"],
            "simulated_seconds": doc["metrics"]["simulated_seconds"],
        },
    }


def _reference_service(overrides: list[str]) -> tuple[float, float, int, list[tuple[str, float, float]]]:
    """(core s/B of one rank, drive s/B of the shared path, ranks, rank 0's constraints) of the checkpoint.

    Read from the constraints the checkpoint's first rank flow crosses in an
    untimed run of the project's model (FlowEngine.start wrapped): the rank's
    own constraints (its serializing core) form one server per rank; every other
    constraint is shared by all ranks, and its largest coefficient / capacity is
    the drive's service time per byte (DESIGN.md section 2: the drive as a
    simpy.Resource)."""
    from iowatt.simulator import flows

    seen: list[tuple[str, float, float]] = []
    original = flows.FlowEngine.start

    def start(self, name, amount, usage, **kwargs):
        if name == "ckpt.rank0" and not seen:
            pairs = list(usage.items()) if isinstance(usage, dict) else list(usage)
            seen.extend((c.name, c.capacity, k) for c, k in pairs)
            usage = pairs
        return original(self, name, amount, usage, **kwargs)

    flows.FlowEngine.start = start  # type: ignore[method-assign]
    try:
        scenario = load_scenario(SINGLE, overrides)
        doc, sim = run_once(scenario)
    finally:
        flows.FlowEngine.start = original  # type: ignore[method-assign]
    limited = [(n, cap, k) for n, cap, k in seen if not math.isinf(cap) and cap > 0]
    core = max((k / cap for n, cap, k in limited if n.startswith("ckpt.rank0")), default=0.0)
    drive = max(k / cap for n, cap, k in limited if not n.startswith("ckpt.rank0"))
    del sim
    ranks = int(doc["metrics"]["checkpoint_writer_ranks_count"])
    return core, drive, ranks, seen


def _reference_run(total_bytes: float, ranks: int, core: float, drive: float) -> tuple[float, int, float]:
    """(predicted seconds, requests, wall seconds) of the per-request SimPy model of one checkpoint."""
    streams = [reference.request_sizes(total_bytes / ranks, REQUEST_BYTES) for _ in range(ranks)]
    began = time.perf_counter()
    predicted, served = reference.rank_pipeline(streams, core, drive)
    return predicted, served, time.perf_counter() - began


def row_per_io_reference(repeat: int, quick: bool) -> dict[str, Any]:
    full_bytes = CHECKPOINT_GB * 1e9
    # O_DIRECT: every byte goes through the drive before the save returns, the path the reference models
    direct = ["workload.io_path=direct"]
    core, drive, ranks, crossed = _reference_service([f"workload.size={CHECKPOINT_GB} GB", *direct])
    # estimate the full per-request run from a slice of 8,192 requests
    probe_bytes = 8192 * REQUEST_BYTES
    _, probe_requests, probe_wall = _reference_run(probe_bytes, ranks, core, drive)
    full_requests = math.ceil(full_bytes / ranks / REQUEST_BYTES) * ranks
    estimate = probe_wall * full_requests / probe_requests
    if quick:
        ref_bytes = probe_bytes
    elif estimate > REFERENCE_LIMIT_SECONDS:
        ref_bytes = full_bytes * REFERENCE_LIMIT_SECONDS / 3 / estimate   # about 10 s of per-request work
    else:
        ref_bytes = full_bytes
    reduced = ref_bytes < full_bytes
    ref_predicted, ref_requests, ref_wall = _reference_run(ref_bytes, ranks, core, drive)
    scale = full_requests / ref_requests
    ref_wall_full = ref_wall * scale
    full = load_scenario(SINGLE, [f"workload.size={CHECKPOINT_GB} GB", *direct])
    run_once(full)
    fluid_walls = []
    fluid_full_doc: dict[str, Any] = {}
    for _ in range(max(1, min(repeat, 5))):
        fluid_full_doc, sim = run_once(full)
        fluid_walls.append(sim.wall_seconds)
    fluid_wall = statistics.median(fluid_walls)
    # the fluid engine at the reference's own size: the predicted-time comparison needs no scaling
    fluid_doc, _ = run_once(load_scenario(SINGLE, [f"workload.size={ref_bytes:.0f}", *direct]))
    fluid_same = fluid_doc["metrics"]["save_checkpoint_duration_mean_seconds"]
    fluid_full = fluid_full_doc["metrics"]["save_checkpoint_duration_mean_seconds"]
    difference = abs(ref_predicted - fluid_same) / fluid_same
    ratio = ref_wall_full / fluid_wall
    return {
        "id": 4,
        "name": "against a per-I/O model (plain SimPy, one event per 1 MiB request)",
        "checks": [
            check("wall_ratio", ratio, "x", ">=", 1000.0),
            check("predicted_time_difference", difference, "fraction", "<=", 0.02),
        ],
        "detail": {
            "scenario": f"{SINGLE} --set workload.size='{CHECKPOINT_GB} GB' --set workload.io_path=direct",
            "reference_wall_seconds_full": ref_wall_full,
            "fluid_engine_wall_seconds": fluid_wall,
            "wall_ratio": ratio,
            "reference_bytes": ref_bytes,
            "reference_requests": ref_requests,
            "reference_wall_seconds_measured": ref_wall,
            "reduced": reduced,
            "linear_scale_factor": scale,
            "estimated_full_reference_seconds": estimate,
            "reference_predicted_seconds": ref_predicted,
            "fluid_predicted_seconds_same_size": fluid_same,
            "fluid_predicted_seconds_full": fluid_full,
            "reference_predicted_seconds_scaled": ref_predicted * full_bytes / ref_bytes,
            "reference_requests_per_second": ref_requests / ref_wall,
            "rank_core_seconds_per_byte": core,
            "drive_seconds_per_byte": drive,
            "rank0_constraints": [{"name": n, "capacity": c, "coefficient": k} for n, c, k in crossed if not math.isinf(c)],
            "note": ("per-I/O side run on a reduced size and scaled linearly in requests" if reduced else "per-I/O side run at full size")
            + "; its service times come from the same constraints as the fluid model, so the agreement checks the engine, not the physics",
        },
    }


def row_per_request_mode(repeat: int, quick: bool) -> dict[str, Any]:
    """Issue 20: the per-request mode (simulator/per_request) on 4K random reads at QD32, one drive, against a bare
    SimPy resource model (one server, one generator process per worker) serving the same number of requests."""
    from iowatt.models.ssd import read_seconds_per_byte
    from iowatt.simulator.per_request.run import simulate as per_request

    base = load_scenario(SINGLE)
    spec = base.system.storage.device_spec()
    service = read_seconds_per_byte(spec, RANDREAD_BYTES, "rand") * RANDREAD_BYTES
    requests = 20_000 if quick else 200_000
    # a time-based fio job long enough for `requests` completions at the drive's rate at QD32
    job = {"kind": "fio", "rw": "randread", "bs": RANDREAD_BYTES, "iodepth": RANDREAD_DEPTH, "size": "10G",
           "runtime": 1.0, "time_based": True}
    from iowatt.scenarios.loader import load

    scenario = load({"name": "bench_per_request", "system": base.system.model_dump(mode="json"), "workload": job}, [])
    rate = per_request(scenario.system, scenario.workload, 0).engine["requests"]  # requests in 1 s of simulated time
    scenario = scenario.model_copy(update={"workload": scenario.workload.model_copy(update={"runtime": requests / rate})})
    # CPU seconds of this process: "on one core" even when the machine's other cores (and ours) are shared
    mode_cpu, sim = median_time(lambda: per_request(scenario.system, scenario.workload, 0), repeat, time.process_time)
    done = int(sim.engine["requests"])
    bare_cpu, bare = median_time(lambda: reference.closed_loop([[service] * done], RANDREAD_DEPTH), repeat, time.process_time)
    mode_wall, _ = median_time(lambda: per_request(scenario.system, scenario.workload, 0), 1)
    mode_rps, bare_rps = done / mode_cpu, done / bare_cpu
    fluid_doc, _ = run_once(scenario)  # the fluid model's answer for the same job (the referee's comparison)
    return {
        "id": 5,
        "name": "per-request mode (simulator/per_request), 4K randread QD32, one drive",
        "checks": [
            check("requests_per_second", mode_rps, "1/s", ">=", 3e5),
            check("ratio_to_bare_simpy", mode_rps / bare_rps, "x", "info", None),
        ],
        "detail": {
            "requests": done,
            "mode_requests_per_second": mode_rps,
            "bare_simpy_requests_per_second": bare_rps,
            "ratio_to_bare_simpy": mode_rps / bare_rps,
            "mode_events_per_request": sim.engine["events"] / done,
            "mode_cpu_seconds": mode_cpu,
            "bare_cpu_seconds": bare_cpu,
            "mode_wall_seconds_one_run": mode_wall,
            "timing": "process CPU time (time.process_time), median of repetitions, both sides in this run",
            "bare_simulated_seconds": bare[0],
            "mode_read_iops": sim.metrics["read_iops"],
            "fluid_read_iops": fluid_doc["metrics"]["read_iops"],
            "service_seconds": service,
            "device": spec.name,
            "bare_model": "benchmarks/reference.closed_loop: one simpy.Resource, QD32 worker processes, the drive's time per request",
            "mqsim_reference": "MQSim runs about 4e4 host requests per second (issue 20)",
        },
    }


def _iowatt_command() -> list[str]:
    script = Path(sys.executable).with_name("iowatt")
    return [str(script)] if script.exists() else [sys.executable, "-m", "iowatt.cli"]


_RSS_PROBE = (
    "import resource, subprocess, sys\n"
    "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def row_cli(repeat: int) -> dict[str, Any]:
    command = _iowatt_command()
    scenario_file = str(ROOT / "scenarios" / "library" / f"{SINGLE}.yaml")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "0"}
    run_cmd = [*command, "run", scenario_file, "--format", "json"]

    cpu: dict[str, list[float]] = {"help": [], "run": []}

    def launch(args: list[str], key: str = "") -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if key:  # the child's CPU seconds: what a quiet machine's wall time would be, whatever the load
            cpu[key].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)

    launch([*command, "--help"])  # warm the OS file cache and .pyc files
    launch(run_cmd)
    reps = max(repeat, 5) if repeat > 1 else 1
    help_s, _ = median_time(lambda: launch([*command, "--help"], "help"), reps)
    run_s, _ = median_time(lambda: launch(run_cmd, "run"), reps)
    help_cpu, run_cpu = statistics.median(cpu["help"]), statistics.median(cpu["run"])
    # a child that runs `iowatt run` once and reports its children's peak RSS (kB on Linux)
    probe = subprocess.run([sys.executable, "-c", _RSS_PROBE, *run_cmd], capture_output=True, text=True, check=True, env=env)
    kilobytes = int(probe.stdout.strip().splitlines()[-1])
    rss_MB = kilobytes * (1 if platform.system() == "Darwin" else 1024) / 1e6  # ru_maxrss: bytes on macOS, KiB on Linux
    return {
        "id": 7,
        "name": "CLI start-up as whole processes",
        "checks": [
            check("help_seconds", help_s, "s", "<=", 0.3),
            check("run_seconds", run_s, "s", "<=", 0.5),  # issue 33
            check("peak_rss_MB", rss_MB, "MB", "<=", 150.0),
            check("help_cpu_seconds", help_cpu, "s", "info", None),
            check("run_cpu_seconds", run_cpu, "s", "info", None),
        ],
        "detail": {"command": " ".join(run_cmd), "repetitions": reps, "help_seconds": help_s, "run_seconds": run_s, "peak_rss_MB": rss_MB,
                   "help_cpu_seconds": help_cpu, "run_cpu_seconds": run_cpu},
    }


# ------------------------------------------------------------------------------------------ main


def format_table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'#':>2}  {'benchmark':<62} {'metric':<32} {'value':>12} {'target':>10}  status"]
    lines.append("-" * len(lines[0]))
    for row in rows:
        for n, c in enumerate(row["checks"]):
            label = row["name"] if n == 0 else ""
            ident = str(row["id"]) if n == 0 else ""
            target = "-" if c["target"] is None else f"{c['op']} {c['target']:g}"
            value = f"{c['value']:.4g} {c['unit']}".strip()
            lines.append(f"{ident:>2}  {label[:62]:<62} {c['metric']:<32} {value:>12} {target:>10}  {c['status']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one repetition and small sizes (< 20 s)")
    parser.add_argument("--repeat", type=int, default=None, help="repetitions per figure (default 15, --quick 1)")
    parser.add_argument("--out", type=Path, default=HERE / "results.json", help="where to write the JSON results")
    parser.add_argument("--only", type=str, default="", help="comma-separated row numbers to run (e.g. 6,7)")
    parser.add_argument("--full-table", action="store_true",
                        help="row 10 on the whole visible table, where its target applies (minutes), not 5 fast rows")
    args = parser.parse_args(argv)
    repeat = args.repeat if args.repeat is not None else (1 if args.quick else 15)
    if repeat < 1:
        parser.error(f"--repeat: expected >= 1, found {repeat}")
    only = {int(x) for x in args.only.split(",") if x.strip()} if args.only else set(range(1, 11))
    began = time.perf_counter()
    rows: list[dict[str, Any]] = []
    plan: list[tuple[int, Callable[[], dict[str, Any]]]] = [
        (1, lambda: row_single(repeat)),
        (2, lambda: row_bytes_independence(repeat)),
        (3, lambda: row_fill_study(min(repeat, 5) if not args.quick else 1)),
        (4, lambda: row_per_io_reference(repeat, args.quick)),
        (5, lambda: row_per_request_mode(min(repeat, 3), args.quick)),
        (6, lambda: row_scale(repeat, args.quick)),
        (7, lambda: row_cli(repeat)),
        (8, lambda: row_sweep(args.quick)),
        (9, lambda: uncertainty.row_run(min(repeat, 3), check, args.quick)),
        (10, lambda: uncertainty.row_validate(min(repeat, 3), check, args.quick, args.full_table)),
    ]
    for ident, fn in plan:
        if ident not in only:
            continue
        started = time.perf_counter()
        row = fn()
        row["bench_seconds"] = time.perf_counter() - started
        rows.append(row)
        print(f"row {ident} done in {row['bench_seconds']:.1f} s", file=sys.stderr, flush=True)
    document = {
        "quick": args.quick,
        "repetitions": repeat,
        "total_seconds": time.perf_counter() - began,
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
                    "load_average_1min": os.getloadavg()[0] if hasattr(os, "getloadavg") else None},
        "rows": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
    tmp.replace(args.out)
    print(format_table(rows))
    print(f"\n{len(rows)} rows in {document['total_seconds']:.1f} s; wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
