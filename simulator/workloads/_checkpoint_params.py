"""The checkpoint workload's parameters (simulator/workloads/checkpoint.py) and the MLPerf Storage model presets.

Apart from the workload's run so that its helpers (_checkpoint_save, _checkpoint_modes, _checkpoint_report)
import them without importing the workload back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from iowatt.models import host_io
from iowatt.models.uncertainty import assumed_field, calibrated_field
from iowatt.models.units import Bytes, Fraction, Seconds
from iowatt.simulator.workloads._checkpoint_design import SaveDesign
from iowatt.simulator.workloads._mlperf_checkpoint import MlperfProcedure
from pydantic import BaseModel, ConfigDict, Field, model_validator

# MLPerf Storage checkpointing table: parallelism per model, and parameters
# derived from its model size column at fp16 (2 B/param): model_GB there is
# GiB (755 "GB" for 405B = 405e9 x 2 B / 2^30), so parameters = model_GB x
# 2^30 / 2; fp32 Adam state at 12 B/param then reproduces its optimizer column
# (../shared/reference/published_results.yaml dlio_workloads.llm_checkpoint).
_GiB = 2**30


@dataclass(frozen=True)
class ModelPreset:
    """A model of the MLPerf Storage checkpointing table: its parameters and parallelism."""

    parameters: float
    tp: int
    pp: int
    dp: int
    zero_stage: int


ModelName = Literal["llama3_8b", "llama3_70b", "llama3_405b", "llama3_1t"]
MODEL_PRESETS: dict[ModelName, ModelPreset] = {
    "llama3_8b": ModelPreset(parameters=15 * _GiB / 2, tp=1, pp=1, dp=8, zero_stage=3),
    "llama3_70b": ModelPreset(parameters=130 * _GiB / 2, tp=8, pp=1, dp=8, zero_stage=3),
    "llama3_405b": ModelPreset(parameters=755 * _GiB / 2, tp=8, pp=32, dp=2, zero_stage=1),
    "llama3_1t": ModelPreset(parameters=2571 * _GiB / 2, tp=8, pp=64, dp=2, zero_stage=1),
}


class CheckpointParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["checkpoint"] = "checkpoint"
    model: ModelName | None = Field(
        default=None, description="MLPerf Storage model preset: parameters and parallelism (each can be overridden)"
    )
    size: Bytes | None = Field(default=None, gt=0, description="bytes per checkpoint, all ranks together (overrides the model)")
    parameters: float | None = Field(default=None, gt=0, description="model parameters, e.g. 405e9")
    weight_bytes_per_param: float = Field(default=2.0, gt=0, description="2 for fp16/bf16 weights")
    optimizer_bytes_per_param: float = Field(default=12.0, ge=0, description="12 for Adam: fp32 master + two moments")
    tp: int | None = Field(default=None, ge=1, description="tensor parallel degree")
    pp: int | None = Field(default=None, ge=1, description="pipeline parallel degree")
    dp: int | None = Field(default=None, ge=1, description="data parallel degree")
    zero_stage: int | None = Field(default=None, ge=0, le=3, description="ZeRO stage; >= 1 shards optimizer state over DP")
    ranks: int = Field(default=8, ge=1, le=100_000, description="writers when no parallelism is given")
    count: int = Field(default=1, ge=1, le=100_000, description="checkpoints to save (ignored when `passes` is set)")
    passes: int | None = Field(default=None, ge=1, le=100, description="fill passes: write until fill_target, then overwrite")
    fill_target: Fraction = Field(default=0.9, gt=0, le=1, description="share of capacity a pass fills")
    checkpoints_per_pass: int | None = Field(default=None, ge=1, description="fix the checkpoints per pass instead of fill_target")
    interval: Seconds = Field(default=0.0, ge=0, description="training compute time before each checkpoint")
    block_size: Bytes = Field(default=2**20, ge=512, description="write request size")
    copy_from_gpu: bool = Field(default=False, description="stage the state from GPU memory (DLIO emulation does not)")
    fsync_latency: Seconds = Field(default=0.0, ge=0, description="time to make a rank's file durable after its last write")
    fsync: bool = Field(
        default=False,
        description="each rank waits until its dirty pages are on the drive before its save returns "
        "(DLIO's checkpoint_fsync; DLIO before 2025 had none: torch.save returns from the page cache)",
    )
    io_path: Literal["buffered", "direct"] = Field(
        default="buffered", description="buffered: through the page cache (torch.save); direct: O_DIRECT, nothing is left dirty"
    )
    regenerate: Literal["none", "weights", "all"] = Field(
        default="none",
        description="state the benchmark creates inside the timed save: 'weights' for DLIO's 2024 transformer "
        "checkpointing (layer tensors made in checkpoint() when ZeRO < 3), 'none' when tensors are made once before",
    )
    generate_GBps_per_rank: float = calibrated_field(
        host_io.DLIO_GENERATE_GBps_PER_CORE, host_io.PROVENANCE["DLIO_GENERATE_GBps_PER_CORE"], gt=0,
        description="GB/s one rank creates tensors at on a reference core (torch.randint int8, serial CPU kernel); "
        "calibrated to StorageReview's D7-PS1010 pass 1 (464 s), see models.host_io",
    )
    save_GBps_per_rank: float | None = Field(
        default=None, gt=0,
        description="GB/s one rank serializes at on a reference core (torch.save: CRC-32 + copy into the page cache); "
        "default: from the host CPU's page-cache write rate (models.host_io.torch_save_GBps_per_core: 2.0 on the "
        "reference core, less on a host whose page faults are slow)",
    )
    dirty_ratio: Fraction = assumed_field(
        host_io.DEFAULT_DIRTY_RATIO, low=0.10, high=0.40, shape="log-uniform", gt=0, le=1,
        description="Linux vm.dirty_ratio (default 20 %)",
        note="the kernel's default (Documentation/admin-guide/sysctl/vm.rst): a study that does not state its host's "
        "sysctl settings is taken to run the default",
        range_note="low: 10 %, the tuning guides that cut writeback stalls (vm.dirty_ratio = 10 with background 5); "
        "high: 40 %, Red Hat's tuned throughput-performance profile (RHEL Performance Tuning Guide 7.2)")
    dirty_background_ratio: Fraction = assumed_field(
        host_io.DEFAULT_DIRTY_BACKGROUND_RATIO, low=0.05, high=0.20, shape="log-uniform", ge=0, le=1,
        description="Linux vm.dirty_background_ratio (default 10 %)",
        note="the kernel's default (Documentation/admin-guide/sysctl/vm.rst), as dirty_ratio",
        range_note="low: 5 %, the same latency-minded guides (background 5 with dirty_ratio 10); high: 20 %, guides "
        "for bursty writes of data that may be lost raise it with dirty_ratio (to 50/80 at the extreme); at or above "
        "dirty_ratio the kernel halves the limit instead, so more adds nothing")
    resident_memory: Bytes | None = Field(
        default=None, ge=0,
        description="DRAM the benchmark's processes hold (not page cache); default: the state kept between saves "
        "(all of it, or the optimizer state when the weights are regenerated), at most the installed memory",
    )
    trim: bool = Field(
        default=False,
        description="discard each replaced checkpoint's blocks when it is deleted (fstrim of its files); otherwise the "
        "filesystem's discard policy (storage.discard) decides",
    )
    layers: int | None = Field(
        default=None, ge=1, le=100_000,
        description="transformer layers: each rank writes its weights as one file per layer of its pipeline stage "
        "(ceil(layers / pp) files, as DLIO's save_state does); unset: one weights file per rank",
    )
    rewrite_names: bool = Field(
        default=False,
        description="a later pass opens the names the pass before it wrote again with open(name, 'wb') (O_TRUNC), as a "
        "rerun of DLIO does: ext4 (auto_da_alloc) and XFS then flush each rewritten file when it is closed, in the "
        "rank's own thread (models.host_io.close_flush_seconds); false: new names, written back by the flusher",
    )
    flush_sync_share: Fraction = assumed_field(
        0.5, low=0.0, high=1.0, ge=0, le=1,
        description="how synchronised the ranks' close flushes are (rewrite_names): 0 = the ranks have drifted apart "
        "so one flush runs at a time while the others make their next file, 1 = lockstep, all ranks flush together",
        note="no study states how its ranks' file closes line up; the range's median is the point value",
        range_note="the physical bracket itself: 0, ranks drifted apart, flushes served one at a time first come first "
        "served (the least a rank can wait: its own bytes); 1, identical ranks in lockstep, served at equal shares by "
        "NVMe round-robin arbitration (the most: every rank waits for all ranks' bytes); "
        "tests/fixtures/passes/README.md, second session")
    restore: bool = Field(default=False, description="read the last checkpoint back after saving")
    mlperf: MlperfProcedure | None = Field(
        default=None, description="run MLPerf Storage v2.0/v3.0 checkpointing: N writes with fsync, N reads, scoring over ranks and runs"
    )
    save: SaveDesign | None = Field(
        default=None, description="the save design of a training (blocking, async, tiered; many hosts): simulator/workloads/_checkpoint_modes.py"
    )

    @model_validator(mode="after")
    def _sized(self) -> CheckpointParams:
        if self.size is None and self.model is None and self.parameters is None:
            raise ValueError("give the checkpoint `size` (e.g. '415 GB'), `parameters`, or a `model` preset")
        if self.mlperf is not None and (self.passes is not None or self.restore):
            raise ValueError("mlperf: the MLPerf procedure sets its own writes and reads; drop `passes` and `restore`")
        return self

    @property
    def preset(self) -> ModelPreset | None:
        return None if self.model is None else MODEL_PRESETS[self.model]

    def parallelism(self) -> dict[str, int]:
        """tp, pp, dp and ZeRO stage in effect: as given, else the model preset's, else 1, 1, 1 and 0."""
        preset = self.preset
        given = {"tp": self.tp, "pp": self.pp, "dp": self.dp, "zero_stage": self.zero_stage}
        of_preset = {"tp": 1, "pp": 1, "dp": 1, "zero_stage": 0} if preset is None else {
            "tp": preset.tp, "pp": preset.pp, "dp": preset.dp, "zero_stage": preset.zero_stage}
        return {k: int(v if v is not None else of_preset[k]) for k, v in given.items()}

    def shard_parts(self) -> list[tuple[float, float]]:
        """(weight bytes, optimizer bytes) each rank writes per checkpoint."""
        parallel = any(v is not None for v in (self.tp, self.pp, self.dp)) or (
            self.model is not None and self.size is None
        )
        per_param = self.weight_bytes_per_param + self.optimizer_bytes_per_param
        if self.size is not None and self.parameters is not None:
            # a stated size and parameter count: the weights are parameters x bytes each, the rest is optimizer state
            weights = self.parameters * self.weight_bytes_per_param
            if weights > self.size:
                raise ValueError(
                    f"parameters: {self.parameters:.4g} x {self.weight_bytes_per_param} B of weights = {weights / 1e9:.0f} GB "
                    f"exceeds the checkpoint size {self.size / 1e9:.0f} GB"
                )
            optimizer = self.size - weights
        elif self.size is not None:
            # a stated size: weights:optimizer split by the byte counts per parameter
            weights = self.size * self.weight_bytes_per_param / per_param
            optimizer = self.size - weights
        else:
            preset = self.preset
            params = self.parameters if self.parameters is not None else (0.0 if preset is None else preset.parameters)
            weights = params * self.weight_bytes_per_param
            optimizer = params * self.optimizer_bytes_per_param
        if self.size is not None and not parallel:
            return [(weights / self.ranks, optimizer / self.ranks)] * self.ranks
        setting = self.parallelism()
        tp, pp, dp, zero = setting["tp"], setting["pp"], setting["dp"], setting["zero_stage"]
        model_parallel = tp * pp
        parts = []
        for d in range(dp):
            for _ in range(model_parallel):
                if zero >= 3:  # ZeRO 3 partitions the parameters too: every data-parallel rank writes its slice
                    w = weights / model_parallel / dp
                else:
                    w = weights / model_parallel if d == 0 else 0.0
                if zero >= 1:
                    o = optimizer / model_parallel / dp
                else:
                    o = optimizer / model_parallel if d == 0 else 0.0
                parts.append((w, o))
        return parts

    def shards(self) -> list[float]:
        """Bytes each rank writes per checkpoint."""
        return [w + o for w, o in self.shard_parts()]

    @property
    def size_bytes(self) -> float:
        return sum(self.shards())
