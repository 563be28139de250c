"""GPUs and CPUs: the parts that compute and draw power while storage works.

GPU: attached over PCIe; host<->device copies run at a measured fraction of
the link (devices.yaml links.pcie.typical_achieved: 0.76-0.84 of theoretical
on Gen4 x16); power = idle + (active - idle) x utilisation.
CPU: cores, package idle/active power; per-core processing rates belong to
workloads (bytes per second per core for a given transformation).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.links import LinkSpec


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

    @model_validator(mode="after")
    def _powers(self) -> CPUSpec:
        if self.idle_W >= self.tdp_W:
            raise ValueError(f"idle_W must be below tdp_W, found {self.idle_W} >= {self.tdp_W}")
        return self
