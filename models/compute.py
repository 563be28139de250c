"""GPUs and CPUs: the parts that compute and draw power while storage works.

GPU: attached over PCIe; host<->device copies run at a measured fraction of
the link (devices.yaml links.pcie.typical_achieved: 0.76-0.84 of theoretical
on Gen4 x16); power = idle + (active - idle) x utilisation.
CPU: cores, package idle/active power (active = TDP under load); per-core
processing rates belong to workloads (bytes per second per core for a given
transformation, stated for a reference core); `core_speed` scales them from
that reference (a Zen 4 core at 2.4 GHz) to this CPU by clock x per-clock
throughput.  GPU-initiated storage (BaM/GIDS): requests in flight = resident
thread blocks = SMs x blocks per SM.  `dlio_steps`: how MLPerf Storage emulates
this accelerator in DLIO, per training workload: the batch each emulated
accelerator takes and the time one step's compute lasts (a sleep), as the
benchmark's own workload configs state them (mlcommons/storage
configs/dlio/workload/<workload>_<accelerator>.yaml).
"""

from __future__ import annotations

from iowatt.models.links import LinkSpec
from pydantic import BaseModel, ConfigDict, Field, model_validator


class DlioStep(BaseModel):
    """One training step of an MLPerf Storage workload on an emulated accelerator (DLIO's reader.batch_size and
    train.computation_time)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    batch_size: int = Field(ge=1, description="samples per step per accelerator (reader.batch_size)")
    computation_time_s: float = Field(gt=0, description="compute per step, seconds (train.computation_time: DLIO sleeps this long)")


class GPUSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str = ""
    link: LinkSpec
    memory_GB: float = Field(gt=0)
    tdp_W: float = Field(gt=0, description="board power limit")
    idle_W: float = Field(ge=0)
    active_W: float = Field(gt=0, description="average board power while computing a training step")
    copy_efficiency: float = Field(gt=0, le=1, description="achieved host<->device copy share of the link payload rate")
    sms: int | None = Field(default=None, ge=1, description="streaming multiprocessors (bound the GPU-initiated requests in flight)")
    max_blocks_per_sm: int = Field(
        default=32, ge=1, le=64, description="resident thread blocks per SM (CUDA compute-capability limit: 32 on 7.0/8.0/9.0, 24 on 8.9)"
    )
    dlio_steps: dict[str, DlioStep] = Field(
        default_factory=dict, description="MLPerf Storage emulation per training workload (unet3d, retinanet, ...): batch size and compute per step"
    )

    def gpu_initiated_outstanding(self) -> int | None:
        """Storage requests a BaM/GIDS kernel keeps in flight: one per resident block (GIDS issues a
        4 KiB page read per 32-thread block and the warp spins on its completion), SMs x blocks per SM."""
        return None if self.sms is None else self.sms * self.max_blocks_per_sm

    @model_validator(mode="after")
    def _powers(self) -> GPUSpec:
        if not self.idle_W <= self.active_W <= self.tdp_W:
            raise ValueError(f"need idle_W <= active_W <= tdp_W, found {self.idle_W}, {self.active_W}, {self.tdp_W}")
        return self


class CPUSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str = ""
    cores: int = Field(gt=0)
    tdp_W: float = Field(gt=0)
    idle_W: float = Field(ge=0, description="package power with the OS idle")
    memory_bandwidth_GBps: float = Field(gt=0, description="sustained DRAM bandwidth per socket")
    base_clock_GHz: float | None = Field(default=None, gt=0, description="all-core base clock")
    core_speed: float = Field(
        default=1.0,
        gt=0,
        description="per-core processing throughput relative to one Zen 4 core at 2.4 GHz (EPYC 9654): "
        "base clock / 2.4 GHz x per-clock throughput of the core generation; scales per-core rates of CPU-bound work",
    )

    @model_validator(mode="after")
    def _powers(self) -> CPUSpec:
        if self.idle_W >= self.tdp_W:
            raise ValueError(f"idle_W must be below tdp_W, found {self.idle_W} >= {self.tdp_W}")
        return self
