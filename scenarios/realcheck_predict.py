"""Predict the real-hardware check's DLIO runs with a calibrated profile on this machine, and name what bound each.

The system is the machine as measured (`calibration.realcheck_runs.machine_facts`): its cores, memory and Linux
dirty-page ratios, the calibrated profile as its one drive.  Checkpoint saves become a `checkpoint` workload
(DLIO 2.0 saves `model_size` bytes per rank with torch.save from tensors made before the timed save:
regenerate none, buffered, fsync as the run does it); training runs go through the DLIO workload reader
(scenarios.dliojob) with one emulated accelerator per MPI rank.

What bound a prediction: the model is rerun with one resource doubled at a time (the CPU's per-core speed, the
drive -- two of the calibrated drive striped --, DRAM bandwidth, the emulated accelerator's compute); the one
whose doubling shortens the predicted run most is the binding constraint (a finite difference of the run time
over each capacity: in a max-min fair flow model only a tight constraint moves it).
"""

from __future__ import annotations

from typing import Any

from iowatt.calibration.realcheck_runs import NULL_BATCH, NULL_BATCH_STEPS, NULL_RECORD_BYTES
from iowatt.models.uncertainty import assumed_constant, constant
from iowatt.scenarios.dliojob import parse_workload
from iowatt.scenarios.loader import load
from iowatt.scenarios.run import run_scenario
from iowatt.simulator.workloads.dlio import DLIO_STEP_OVERHEAD_SECONDS

# the VM's CPU as an inline catalog spec; only cores, core_speed and memory bandwidth shape the run times
REFERENCE_CLOCK_MHz = 2400.0  # models/catalog/cpu.yaml: core_speed 1 is one Zen 4 core at 2.4 GHz
# No STREAM run on this machine: a guest's share of a server socket's memory bandwidth is not known.
MEMORY_PER_CORE = assumed_constant(
    "scenarios.realcheck_predict.memory_GBps_per_core", 10.0, low=5.0, high=20.0, shape="log-uniform",
    note="a guest's share of a server socket's ~360 GB/s (cpu.yaml, EPYC 9654) is not known; 10 GB/s per vCPU is a "
    "conservative single-core STREAM-class figure for DDR4/DDR5 servers",
    range_note="low: half, a host whose other tenants hold most of the socket's bandwidth; high: 20 GB/s, a vCPU that "
    "gets a server core's own STREAM rate on an unloaded DDR5 socket (360 GB/s over 96 cores is 3.75 GB/s per core "
    "when all stream at once, so more is a share others leave unused)")
# Package powers: energy is not scored by the check (no power meter in a VM).
TDP_PER_CORE = assumed_constant(
    "scenarios.realcheck_predict.tdp_W_per_core", 5.0, low=3.0, high=8.0, shape="log-uniform",
    note="a server CPU's TDP per core: EPYC 9654 360 W / 96 cores = 3.75 W, Xeon Gold 6146 165 W / 12 = 13.75 W; 5 W",
    range_note="low: 3 W, a many-core part's TDP per core (EPYC 9654: 3.75 W); high: 8 W, a mid-count Xeon's")
IDLE_PER_CORE = assumed_constant(
    "scenarios.realcheck_predict.idle_W_per_core", 1.0, low=0.5, high=2.0, shape="log-uniform",
    note="a package's idle power per core, about a fifth of its TDP per core",
    range_note="half and twice the value: deep package C-states on an idle host, or none in a guest's view of it")
BINDING_MIN_CHANGE = 0.02  # a doubling that moves the run time by less than 2 % binds nothing (the solver's noise is far below)


def cpu_spec(facts: dict[str, Any], speed_factor: float = 1.0, memory_factor: float = 1.0) -> dict[str, Any]:
    cores = int(facts["cores"])
    return {"name": "this-machine", "model": str(facts.get("cpu_model") or "this machine"), "cores": cores,
            "tdp_W": constant(TDP_PER_CORE.name) * cores, "idle_W": constant(IDLE_PER_CORE.name) * cores,
            "memory_bandwidth_GBps": constant(MEMORY_PER_CORE.name) * cores * memory_factor,
            "base_clock_GHz": _clock_MHz(facts) / 1e3, "core_speed": _core_speed(facts) * speed_factor,
            # measured by the host probe (calibration.host_probe): seconds on a core, so it scales with the core
            **{field: float(facts[field]) * speed_factor if facts.get(field) else None
               for field in ("page_cache_write_GBps_per_core", "page_cache_read_GBps_per_core", "shm_write_GBps_per_core")}}


def _clock_MHz(facts: dict[str, Any]) -> float:
    return float(facts.get("cpu_MHz") or REFERENCE_CLOCK_MHz)


def _core_speed(facts: dict[str, Any]) -> float:
    return _clock_MHz(facts) / REFERENCE_CLOCK_MHz


def measured_loader(facts: dict[str, Any], samples_per_rank: int | None = None, record_bytes: int | None = None,
                    batch: int = 1) -> dict[str, float]:
    """The DLIO workload fields this machine's probes measured (none for a bundle made before they existed):
    numpy.load's cost per npz file and per byte (reference-core units: measured seconds x core_speed), DLIO's
    loader start-up, its costs outside compute per step and per epoch, and the hand-over of a loaded batch (the null runs).
    `samples_per_rank`: the run's, for DLIO 2.0's per-sample repr of the rank's index map (host_probe), which the null
    runs measured at their own NULL_BATCH x NULL_BATCH_STEPS samples per rank.  `record_bytes`: the run's sample size;
    where the probe loaded cold npz files of that size and of the null runs', a sample costs what the cold load at its
    own size costs beyond the null runs' (the model's per-byte rates, the warm npz parse and the cold read's page, are
    what the difference is taken net of).  `batch`: samples per step, for the hand-over's CPU (calibration.handover_probe):
    the trainer's CPU at the run's batch bytes, and the hand-over's wait grown by what the larger batch adds to it."""
    out: dict[str, float] = {}
    speed = _core_speed(facts)
    if facts.get("npz_seconds_per_file") is not None and facts.get("npz_GBps_per_core"):
        # DLIO 2.0's NPZReader opens a sample's file on every read (read_type on_demand): a file per sample; the
        # null runs' per-sample cost, where measured, holds that open and all else a sample costs the loader
        per_sample_s = facts.get("loader_seconds_per_sample")
        per_sample = float(per_sample_s if per_sample_s is not None else facts["npz_seconds_per_file"])
        entry_s = facts.get("index_map_seconds_per_entry")
        if per_sample_s is not None and entry_s is not None and samples_per_rank is not None:
            # the index map's repr grows with the rank's samples: the run's map against the null run's
            per_sample = max(0.0, per_sample + float(entry_s) * (samples_per_rank - NULL_BATCH * NULL_BATCH_STEPS))
        per_sample = max(0.0, per_sample + _cold_open_seconds(facts, record_bytes))
        out["cpu_seconds_per_sample"] = per_sample * speed
        out["cpu_bytes_per_core_second"] = float(facts["npz_GBps_per_core"]) * 1e9 / speed
    if facts.get("loader_start_seconds") is not None:
        out["loader_start"] = float(facts["loader_start_seconds"])
    # the hand-over of a loaded batch: measured by the null run with a compute sleep (absent from older bundles: none)
    for fact, field in (("step_overhead_seconds", "step_overhead"), ("epoch_overhead_seconds", "epoch_overhead"),
                        ("handover_seconds", "handover_seconds")):
        if facts.get(fact) is not None:
            out[field] = float(facts[fact])
    if "handover_seconds" in out and facts.get("handover_cpu_seconds") is not None and record_bytes is not None:
        # the trainer maps every page of the batch's shared memory: a larger batch than the null run's adds that CPU
        # to the hand-over it measured (DLIO's samples are int(sqrt(record))^2 bytes)
        per_byte = float(facts.get("handover_cpu_seconds_per_byte") or 0.0)
        batch_bytes = batch * int(record_bytes**0.5) ** 2
        out["handover_seconds"] += per_byte * max(0.0, batch_bytes - NULL_RECORD_BYTES)
        out["handover_cpu_seconds"] = min(out["handover_seconds"], float(facts["handover_cpu_seconds"]) + per_byte * batch_bytes)
    return out


def _cold_open_seconds(facts: dict[str, Any], record_bytes: int | None) -> float:
    """What a cold npz sample of `record_bytes` costs the loader beyond the null runs' 4 KiB one and beyond the per-byte
    rates the model charges it (seconds on this machine's core; 0 where the probe did not load that size cold)."""
    cold = facts.get("npz_cold_seconds_by_record") or {}
    size, base = str(record_bytes), str(NULL_RECORD_BYTES)
    if record_bytes is None or size not in cold or base not in cold or not facts.get("page_cache_read_GBps_per_core"):
        return 0.0
    per_byte_s = 1.0 / (float(facts["npz_GBps_per_core"]) * 1e9) + 1.0 / (float(facts["page_cache_read_GBps_per_core"]) * 1e9)
    return float(cold[size]) - float(cold[base]) - (record_bytes - NULL_RECORD_BYTES) * per_byte_s


def workload_for(kind: str, workload: dict[str, Any], ranks: int, fsync: bool, checkpoints: int, facts: dict[str, Any]) -> dict[str, Any]:
    """The iowatt workload mapping of one DLIO run."""
    if kind == "checkpoint":
        shard = float(workload["checkpoint"]["model_size"])  # type: ignore[index]
        out: dict[str, Any] = {"kind": "checkpoint", "size": shard * ranks, "ranks": ranks, "count": checkpoints, "fsync": fsync,
                               "io_path": "buffered", "regenerate": "none"}
        if not facts.get("dirty_bytes") and facts.get("dirty_ratio"):
            out["dirty_ratio"] = float(facts["dirty_ratio"]) / 100.0
            out["dirty_background_ratio"] = float(facts.get("dirty_background_ratio") or 0) / 100.0
        return out
    train = {k: v for k, v in workload.items() if k != "workflow"} | {"workflow": {"train": True}}
    mapped, _ = parse_workload(train, "realcheck", lenient=False)
    # the ranks run under mpirun with one slot per core, so OpenMPI's barrier busy-waits (a rank that arrives first polls)
    dataset = workload.get("dataset") or {}
    samples = int(dataset.get("num_files_train", 0)) * int(dataset.get("num_samples_per_file", 1))  # type: ignore[union-attr]
    record = dataset.get("record_length")  # type: ignore[union-attr]
    batch = int((workload.get("reader") or {}).get("batch_size", 1))  # type: ignore[union-attr]
    loader = measured_loader(facts, samples // ranks if samples else None, int(record) if record else None, batch)
    # this machine's loop, never the unet3d preset's (fitted on MLPerf clients): the null runs' where measured, else
    # the development VM's, as for every bundle before the null runs existed
    loader.setdefault("step_overhead", DLIO_STEP_OVERHEAD_SECONDS)
    return {**mapped, "accelerators": ranks, "barrier_spin": ranks > 1, **loader}


def _scenario(name: str, facts: dict[str, Any], profile: str, workload: dict[str, Any], variant: str) -> dict[str, Any]:
    storage: dict[str, Any] = {"device": f"profile:{profile}"}
    if variant == "storage":
        storage["count"] = 2
    workload = dict(workload)
    if variant == "compute" and "computation_time" in workload:
        workload["computation_time"] = workload["computation_time"] / 2.0
    cpu = cpu_spec(facts, 2.0 if variant == "cpu" else 1.0, 2.0 if variant == "memory" else 1.0)
    return {"name": name, "system": {"storage": storage, "server": {"cpu": cpu, "memory": float(facts["memory_bytes"])}}, "workload": workload}


def _time(kind: str, metrics: dict[str, float]) -> float:
    return float(metrics["save_checkpoint_duration_mean_seconds"] if kind == "checkpoint" else metrics["simulated_seconds"])


def predict(name: str, kind: str, workload: dict[str, Any], facts: dict[str, Any], profile: str) -> dict[str, Any]:
    """Predicted metrics of one run, and the binding constraint with each doubling's effect on the run time."""
    document, _ = run_scenario(load(_scenario(name, facts, profile, workload, "base")))
    metrics = document["metrics"]
    if kind == "checkpoint":
        values = {"save_seconds": float(metrics["save_checkpoint_duration_mean_seconds"])}
    else:
        values = {"train_au_percentage": float(metrics["train_au_percentage"]), "train_io_MiB_per_second": float(metrics["train_io_mean_MiB_per_second"])}
    base = _time(kind, metrics)
    changes: dict[str, float] = {}
    for variant in ("cpu", "storage", "memory") + (("compute",) if kind == "training" else ()):
        varied, _ = run_scenario(load(_scenario(name, facts, profile, workload, variant)))
        changes[variant] = (_time(kind, varied["metrics"]) - base) / base if base > 0 else 0.0
    tightest = min(changes, key=lambda k: changes[k])
    # no single doubling moves the run: two resources bind together, or fixed latencies (start-up, overheads) dominate
    binding = tightest if changes[tightest] <= -BINDING_MIN_CHANGE else "no single resource (co-limited, or fixed start-up and overheads)"
    return {"values": values, "run_seconds": base, "binding": binding, "time_change_when_doubled": changes}
