"""`iowatt run --format dlio -o DIR`: a simulated run written as DLIO writes a real one, so that tools made for
DLIO and MLPerf Storage output (mlpstorage reportgen, `iowatt collect dlio --ingest`) read it key by key.

DIR/summary.json has DLIO's keys and shapes (dlio_benchmark utils/statscounter.py, StatsCounter.__init__ and
end_run): top-level num_accelerators, num_hosts, hostname, start, end, epochs, num_files_train, num_files_eval,
num_samples_per_file, host_cpu_count and host_memory_GB (one entry per host; DLIO's GB are GiB), potential_caching
(per host), data_size_per_host_GB, host_processor_name, host_cpuinfo, host_meminfo; and `metric`: training
lists per epoch (train_au_percentage, train_throughput_samples_per_second) with their mean and stdev,
train_au_meet_expectation as "success" or "fail", train_io_mean_MB_per_second (MiB/s); checkpointing scalars
(save_/load_checkpoint_duration_mean_seconds and _stdev_, save_/load_checkpoint_io_mean_GB_per_second and
_stdev_ in GiB/s, checkpoint_size_GB in GiB).  DIR/per_epoch_stats.json: per epoch ("1", "2", ...) its start,
end and duration (a string of two decimals, as DLIO writes it) and one block per epoch; checkpoints as
save_ckpt<N> / load_ckpt<N> entries with start, end, duration and throughput (numbers).  Timestamps are the
simulated times from the moment of writing.  With the MLPerf procedure's several runs the summary holds the
result (means over runs) and per_epoch_stats the first run, as one DLIO invocation.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from iowatt.errors import UserError
from iowatt.output import write_bytes

GiB = 2.0**30
MiB = 2.0**20


def _when(start: datetime, seconds: float) -> str:
    return (start + timedelta(seconds=seconds)).isoformat()


def _hosts(document: dict[str, Any]) -> tuple[int, float, int]:
    """(hosts, memory per host in GiB, cores per host) of the simulated system."""
    system = document["scenario"]["system"]
    server = system.get("server", {})
    storage = system.get("storage", {})
    hosts = int(document["metrics"].get("hosts", storage.get("clients", 1) if isinstance(storage, dict) else 1))
    # lazy: the CLI imports every commands module at start-up, and the catalog pulls in pydantic
    from iowatt.models import catalog
    from iowatt.models.compute import CPUSpec

    cpu = catalog.spec_from("cpu", server.get("cpu", "amd-epyc-9654"))
    cores = cpu.cores * int(server.get("sockets", 1)) if isinstance(cpu, CPUSpec) else 0
    return hosts, float(server.get("memory", 256e9)) / GiB, cores


def _training_metric(document: dict[str, Any]) -> dict[str, Any]:
    detail, metrics = document["dlio"], document["metrics"]
    au = [float(x) for x in detail["train_au_percentage_by_epoch"]]
    throughput = [float(x) for x in detail["train_throughput_samples_per_second_by_epoch"]]
    record_MiB = float(detail["resolved"]["record_length"]) / MiB
    return {
        "train_au_percentage": au,
        "train_au_mean_percentage": float(fmean(au)),
        "train_au_meet_expectation": "success" if fmean(au) >= metrics["au_target_percentage"] else "fail",
        "train_au_stdev_percentage": float(pstdev(au)),
        "train_throughput_samples_per_second": throughput,
        "train_throughput_mean_samples_per_second": float(fmean(throughput)),
        "train_throughput_stdev_samples_per_second": float(pstdev(throughput)),
        "train_io_mean_MB_per_second": float(fmean(throughput)) * record_MiB,
        "train_io_stdev_MB_per_second": float(pstdev(throughput)) * record_MiB,
    }


def _checkpoint_series(document: dict[str, Any]) -> tuple[float, list[float], list[float]]:
    """(checkpoint bytes, save seconds, load seconds) of the first run (one DLIO invocation)."""
    detail, metrics = document["checkpoint"], document["metrics"]
    if "save_durations_seconds_by_run" in detail:  # the MLPerf procedure: checkpoint_size_GB is GiB
        size = metrics["checkpoint_size_GB"] * GiB
        by_run = detail["save_durations_seconds_by_run"], detail["load_durations_seconds_by_run"]
        return size, list(by_run[0][0] if by_run[0] else []), list(by_run[1][0] if by_run[1] else [])
    return metrics["checkpoint_size_GB"] * 1e9, list(detail["durations_seconds"]), list(detail.get("load_durations_seconds", []))


def _checkpoint_metric(document: dict[str, Any]) -> dict[str, Any]:
    metrics = document["metrics"]
    size, saves, loads = _checkpoint_series(document)
    mlperf = "save_durations_seconds_by_run" in document["checkpoint"]  # the result is the mean over runs
    out: dict[str, Any] = {}
    for prefix, seconds in (("save_checkpoint_", saves), ("load_checkpoint_", loads)):
        if not seconds:
            continue
        rates = [size / GiB / s for s in seconds]
        out[prefix + "io_mean_GB_per_second"] = metrics[prefix + "io_mean_GB_per_second"] if mlperf else float(fmean(rates))
        out[prefix + "io_stdev_GB_per_second"] = float(pstdev(rates))
        out[prefix + "duration_mean_seconds"] = metrics[prefix + "duration_mean_seconds"] if mlperf else float(fmean(seconds))
        out[prefix + "duration_stdev_seconds"] = float(pstdev(seconds))
    out["checkpoint_size_GB"] = size / GiB
    return out


def summary(document: dict[str, Any], start: datetime) -> dict[str, Any]:
    """DLIO's summary.json for a simulated dlio or checkpoint run."""
    kind = document["scenario"]["workload"]["kind"]
    hosts, memory_GiB, cores = _hosts(document)
    metrics = document["metrics"]
    if kind == "dlio":
        resolved = document["dlio"]["resolved"]
        metric = _training_metric(document)
        accelerators, epochs = int(metrics["accelerators"]), int(metrics["epochs"])
        files, per_file = int(resolved["num_files"]), int(resolved["samples_per_file"])
        data_GiB = metrics["dataset_GB"] * 1e9 / GiB / hosts
    elif kind == "checkpoint":
        metric = _checkpoint_metric(document)
        accelerators, epochs, files, per_file = int(metrics.get("processes", metrics["checkpoint_writer_ranks_count"])), 1, 0, 1
        data_GiB = 0.0
    else:
        raise UserError(f"--format dlio: DLIO writes training and checkpoint runs; this scenario's workload is {kind!r}")
    return {
        "start": start.isoformat(),
        "num_accelerators": accelerators,
        "num_hosts": hosts,
        "hostname": "iowatt",
        "metric": metric,
        "num_files_train": files,
        "num_files_eval": 0,
        "num_samples_per_file": per_file,
        "host_cpu_count": [cores] * hosts,
        "host_processor_name": "",
        "potential_caching": [int(data_GiB <= memory_GiB)] * hosts,
        "host_cpuinfo": {"model name": str(document["scenario"]["system"].get("server", {}).get("cpu", ""))},
        "host_meminfo": {"MemTotal": f"{int(memory_GiB * 1024 * 1024)} kB"},
        "host_memory_GB": [memory_GiB] * hosts,
        "data_size_per_host_GB": data_GiB,
        "epochs": epochs,
        "end": _when(start, metrics["simulated_seconds"]),
    }


def _span(start: datetime, begin: float, seconds: float, text: bool) -> dict[str, Any]:
    return {"start": _when(start, begin), "end": _when(start, begin + seconds), "duration": f"{seconds:.2f}" if text else seconds}


def per_epoch_stats(document: dict[str, Any], start: datetime) -> dict[str, Any]:
    """DLIO's per_epoch_stats.json: epochs with one block each (training), or save/load checkpoint entries."""
    if document["scenario"]["workload"]["kind"] == "dlio":
        out: dict[str, Any] = {}
        clock = 0.0
        for number, seconds in enumerate(document["dlio"]["epoch_time_seconds"], start=1):
            epoch = _span(start, clock, seconds, True)
            out[str(number)] = {"start": epoch["start"], "block1": _span(start, clock, seconds, True), "end": epoch["end"],
                                "duration": epoch["duration"]}
            clock += seconds
        return out
    size, saves, loads = _checkpoint_series(document)
    gap = float(document["scenario"]["workload"].get("interval", 0.0))
    entries: dict[str, Any] = {"start": start.isoformat()}
    clock = 0.0
    for tag, series in (("save_ckpt", saves), ("load_ckpt", loads)):
        for number, seconds in enumerate(series, start=1):
            clock += gap if tag == "save_ckpt" else 0.0
            entries[f"{tag}{number}"] = {**_span(start, clock, seconds, False), "throughput": size / GiB / seconds}
            clock += seconds
    entries["end"] = _when(start, clock)
    return {"1": entries}


def write(document: dict[str, Any], folder: Path) -> None:
    """Write DIR/summary.json and DIR/per_epoch_stats.json; both are made before either is written."""
    if folder.exists() and not folder.is_dir():
        raise UserError(f"--output {folder}: --format dlio writes a folder (summary.json, per_epoch_stats.json), found a file")
    if not folder.parent.is_dir():
        raise UserError(f"--output {folder}: the folder {folder.parent} does not exist")
    start = datetime.now().replace(microsecond=0)
    texts = {name: json.dumps(make(document, start), indent=4) + "\n" for name, make in
             (("summary.json", summary), ("per_epoch_stats.json", per_epoch_stats))}
    folder.mkdir(exist_ok=True)
    for name, text in texts.items():
        write_bytes(text.encode(), folder / name)
