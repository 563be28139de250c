"""DLRM pre-processing: raw click logs -> Parquet -> binary training files, on CPU workers.

The job runs as NVIDIA's DLRM data preparation does it, in two passes over
day files (Criteo 1TB Click Logs layout):
  1. parquet: each worker takes a raw TSV file, reads it from the volume,
     parses the text and hashes the categorical columns (CPU), and writes a
     Parquet file (`parquet_bytes_per_row`);
  2. binary: each worker takes a Parquet file, decodes it and writes DLRM's
     binary layout (`binary_bytes_per_row`).  The Parquet files were just
     written, so when they all fit in the page cache (`page_cache_fraction` of
     host memory) they are read from DRAM, not from the drive.
Each file is one flow that crosses the volume's read path (1 x file bytes),
its write path (output/input bytes per byte), host DRAM
(`dram_bytes_per_byte_*`) and host CPU (1 / per-core rate core-seconds per
byte), with at most one core per worker (a worker is one process).  Workers
pull files from a shared queue, so with F files and N workers a pass takes
ceil(F / N) rounds when each file is CPU-bound: more workers never slow the
job, and once N x per-core rate reaches the drive, DRAM or core-count roof
the time stops falling (roofline).  The per-core rates are assumptions
(below); the drive matters only where it reaches its roof, which is why two
very different SSDs give the same completion time at 1..24 workers (Micron
6550 ION technical brief: 'similar completion time').

Dataset default (assumed, public description of the Criteo 1TB Click Logs):
24 day files, 4,373,472,329 rows; a TSV row is a label, 13 integer and 26
hexadecimal categorical fields, ~252 bytes on average (~1.1 TB in all).
Parquet after hashing (40 int32 columns = 160 bytes, snappy ~0.6) ~96 bytes
per row; DLRM binary (1 B label, 13 x fp16 dense, 26 x int32 categorical)
131 bytes per row.
"""

from __future__ import annotations

import math
from typing import Literal

import simpy
from iowatt.models.uncertainty import assumed_field
from iowatt.models.units import Bytes
from iowatt.simulator.storage import Access, FileWrite
from iowatt.simulator.workloads import RunContext, Workload, WorkloadOutcome
from pydantic import BaseModel, ConfigDict, Field

MiB = 2**20
PHASES = ("parquet", "binary")


class DlrmPreprocessParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["dlrm_preprocess"] = "dlrm_preprocess"
    workers: int = Field(default=1, ge=1, le=4096, description="CPU worker processes (Micron brief: 1..24)")
    rows: float = Field(default=4_373_472_329, gt=0, description="rows (samples) in the raw data; default Criteo 1TB Click Logs")
    files: int = Field(default=24, ge=1, le=100_000, description="raw files (Criteo 1TB: 24 day files); a worker converts whole files")
    raw_bytes_per_row: Bytes = assumed_field(
        252, low=215, high=290, gt=0, description="TSV bytes per row (~1.1 TB / 4.37 B rows)",
        note="the public description of the Criteo 1TB Click Logs: ~1.1 TB of TSV over 4.37 B rows",
        range_note="the row's own layout: label and tab (2 B) + 26 categoricals of 8 hex digits and a tab (234 B) + 13 "
        "integers of 1-3 digits and a tab (26-52 B); low: 215 B, with one-digit integers and ~10 % of categoricals "
        "empty; high: 290 B, every field present with three-digit integers")
    parquet_bytes_per_row: Bytes = assumed_field(
        96, low=64, high=144, shape="log-uniform", gt=0, description="Parquet bytes per row (40 int32 columns, snappy ~0.6)",
        note="40 int32 columns = 160 B before compression; snappy and dictionary encoding ~0.6",
        range_note="low: 0.4 of 160 B, dictionary-encoded categoricals that repeat; high: 0.9, hashed categoricals of "
        "high cardinality that barely compress")
    binary_bytes_per_row: Bytes = Field(default=131, gt=0, description="DLRM binary bytes per row: 1 B label + 13 x fp16 + 26 x int32")
    parse_bytes_per_core_second: Bytes = assumed_field(
        50e6, low=25e6, high=100e6, shape="log-uniform", gt=0,
        description="raw text parsed + categoricals hashed per core",
        note="pandas-class CSV parsing ~100 MB/s per core, halved for hashing 26 string columns",
        range_note="low: the hashing costing three times the parse; high: the parse alone, hashing free")
    convert_bytes_per_core_second: Bytes = assumed_field(
        200e6, low=100e6, high=400e6, shape="log-uniform", gt=0,
        description="Parquet decoded and re-encoded as binary per core",
        note="snappy + dictionary decode ~300-500 MB/s per core, plus the conversion",
        range_note="low: the conversion costing as much as a 300 MB/s decode twice over; high: 400 MB/s, the decode's "
        "upper figure with the conversion nearly free")
    dram_bytes_per_byte_parse: float = assumed_field(
        5.0, low=3.0, high=8.0, shape="log-uniform", ge=0, description="DRAM traffic per raw byte",
        note="DMA in, copy out, parsed columns written and read, output staged: ~5 passes over DRAM",
        range_note="low: 3, DMA in, one copy out (read + write) with the parsed columns kept in cache; high: 8, every "
        "stage's intermediate written and read once more")
    dram_bytes_per_byte_convert: float = assumed_field(
        4.0, low=2.5, high=6.4, shape="log-uniform", ge=0, description="DRAM traffic per Parquet byte",
        note="copy in, decode, encode, copy out: ~4 passes over DRAM",
        range_note="low: 2.5, decode and encode fused in cache; high: 6.4, the decoded columns (larger than the "
        "compressed bytes) written and read once more")
    read_block_size: Bytes = Field(default=MiB, ge=4096, description="read request size (buffered sequential reads)")
    write_block_size: Bytes = Field(default=MiB, ge=4096, description="write request size (page-cache write-back)")
    page_cache: bool = Field(default=True, description="read the Parquet files from DRAM when they all fit in the page cache")
    page_cache_fraction: float = Field(default=0.8, gt=0, le=1, description="share of host memory the page cache may hold")

    @property
    def raw_bytes(self) -> float:
        return self.rows * self.raw_bytes_per_row

    @property
    def parquet_bytes(self) -> float:
        return self.rows * self.parquet_bytes_per_row

    @property
    def binary_bytes(self) -> float:
        return self.rows * self.binary_bytes_per_row


def run(ctx: RunContext, params: DlrmPreprocessParams) -> WorkloadOutcome:
    env, engine, system = ctx.env, ctx.engine, ctx.system
    host = system.host
    cached = params.page_cache and params.parquet_bytes <= params.page_cache_fraction * host.config.memory
    rd = system.volume.usage(Access("read", params.read_block_size, "seq", params.workers))
    # the outputs are files: the drives place them (and price them) when they are announced
    parquet = Access("write", params.write_block_size, "seq", params.workers, file="dlrm.parquet")
    system.volume.store(FileWrite("dlrm.parquet"), params.parquet_bytes, parquet)
    wr_parquet = system.volume.usage(parquet)
    # phase 1, per raw byte: read 1, write the Parquet share, parse on one core
    parse_cpu = 1.0 / params.parse_bytes_per_core_second
    ratio_p = params.parquet_bytes_per_row / params.raw_bytes_per_row
    usage_parse = [*rd, *[(c, k * ratio_p) for c, k in wr_parquet], (host.memory, params.dram_bytes_per_byte_parse), (host.cpu, parse_cpu)]
    # phase 2, per Parquet byte: read 1 (from the drive or the page cache), write the binary share
    conv_cpu = 1.0 / params.convert_bytes_per_core_second
    ratio_b = params.binary_bytes_per_row / params.parquet_bytes_per_row
    binary = Access("write", params.write_block_size, "seq", params.workers, file="dlrm.binary")
    system.volume.store(FileWrite("dlrm.binary"), params.binary_bytes, binary)
    wr_binary = system.volume.usage(binary)
    source = [] if cached else rd
    usage_convert = [*source, *[(c, k * ratio_b) for c, k in wr_binary], (host.memory, params.dram_bytes_per_byte_convert), (host.cpu, conv_cpu)]

    phase_seconds = {p: 0.0 for p in PHASES}
    totals = {"read_drive": 0.0, "read_cache": 0.0, "written": 0.0}
    per_file_rows = params.rows / params.files

    def worker(queue: list[int], phase: str):
        while queue:
            i = queue.pop()
            if phase == "parquet":
                amount = per_file_rows * params.raw_bytes_per_row
                yield engine.transfer(f"dlrm.parquet.f{i}", amount, usage_parse, max_rate=params.parse_bytes_per_core_second)
                totals["read_drive"] += amount
                totals["written"] += amount * ratio_p
            else:
                amount = per_file_rows * params.parquet_bytes_per_row
                yield engine.transfer(f"dlrm.binary.f{i}", amount, usage_convert, max_rate=params.convert_bytes_per_core_second)
                totals["read_cache" if cached else "read_drive"] += amount
                totals["written"] += amount * ratio_b

    def job():
        for phase in PHASES:
            start = env.now
            queue = list(range(params.files - 1, -1, -1))
            yield simpy.AllOf(env, [env.process(worker(queue, phase)) for _ in range(min(params.workers, params.files))])
            phase_seconds[phase] = env.now - start

    env.process(job())
    env.run()
    total = env.now
    rounds = math.ceil(params.files / params.workers)
    metrics = {
        "completion_time_seconds": total,
        "parquet_phase_seconds": phase_seconds["parquet"],
        "binary_phase_seconds": phase_seconds["binary"],
        "workers": float(params.workers),
        "raw_GB": params.raw_bytes / 1e9,
        "parquet_GB": params.parquet_bytes / 1e9,
        "binary_GB": params.binary_bytes / 1e9,
        "bytes_read_from_storage_GB": totals["read_drive"] / 1e9,
        "bytes_read_from_page_cache_GB": totals["read_cache"] / 1e9,
        "bytes_written_GB": totals["written"] / 1e9,
        "raw_MB_per_second": params.raw_bytes / total / 1e6 if total > 0 else 0.0,
        "storage_read_MB_per_second": totals["read_drive"] / total / 1e6 if total > 0 else 0.0,
        "storage_write_MB_per_second": totals["written"] / total / 1e6 if total > 0 else 0.0,
    }
    detail = {
        "parquet_read_from_page_cache": bool(cached),
        "file_rounds_per_phase": rounds,
        "cpu_bound_phase_seconds": {  # roofline of each phase if only the cores bound it
            "parquet": rounds * per_file_rows * params.raw_bytes_per_row / params.parse_bytes_per_core_second,
            "binary": rounds * per_file_rows * params.parquet_bytes_per_row / params.convert_bytes_per_core_second,
        },
    }
    return WorkloadOutcome(metrics, detail)


WORKLOAD = Workload("dlrm_preprocess", DlrmPreprocessParams, run)
