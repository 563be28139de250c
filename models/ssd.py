"""Solid-state drive: specification and the laws that turn it into capacities.

Service-time law (block size): one request of b bytes occupies the drive for
b / BW + t_op seconds, where t_op is the per-command overhead.  t_op is
chosen so the law passes through both datasheet points, the 128 KiB
sequential bandwidth and the 4 KiB random IOPS:
    t_op = 1/IOPS_4k - 4096/BW       (clamped at 0)
Throughput at block size b is then b / (b/BW + t_op): bandwidth-bound for
large b, IOPS-bound for small b, smooth in between.

Power: idle + (energy per byte) x rate, with the energy per byte from the
active power at the datasheet bandwidth: (P_active - P_idle) / BW.  An NVMe
power state caps the total; the simulator makes the cap a constraint so the
throughput is scaled down until the drive fits (NVMe ACTP semantics, NVM
Express power-management overview, devices_sources W01).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.links import LinkSpec, link_payload_Bps

KiB = 1024


class PowerState(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_W: float = Field(gt=0, description="maximum average power in this state (NVMe MP)")
    entry_latency_us: float = Field(default=0.0, ge=0)
    exit_latency_us: float = Field(default=0.0, ge=0)


class SSDSpec(BaseModel):
    """An SSD as the catalog describes it.  Units are in the field names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str = ""
    interface: Literal["nvme", "sata", "sas"] = "nvme"
    nand: Literal["slc", "mlc", "tlc", "qlc"] = "tlc"
    capacity_TB: float = Field(gt=0, description="user capacity, decimal TB")
    link: LinkSpec
    seq_read_MBps: float = Field(gt=0, description="128 KiB sequential read ceiling, MB/s")
    seq_write_MBps: float = Field(gt=0, description="128 KiB sequential write ceiling (steady state), MB/s")
    rand_read_iops: float = Field(gt=0, description="4 KiB random read ceiling, IOPS")
    rand_write_iops: float = Field(gt=0, description="4 KiB random write ceiling (steady state), IOPS")
    read_latency_us: float = Field(default=80.0, gt=0, description="QD1 4 KiB read latency")
    write_latency_us: float = Field(default=20.0, gt=0, description="QD1 4 KiB write latency")
    idle_W: float = Field(ge=0)
    active_read_W: float = Field(gt=0, description="average power at the sequential read ceiling")
    active_write_W: float = Field(gt=0, description="average power at the sequential write ceiling")
    power_states: list[PowerState] = Field(default_factory=list, description="PS0, PS1, ... (NVMe)")
    endurance_dwpd: float | None = Field(default=None, gt=0)
    warranty_years: float = Field(default=5.0, gt=0)
    price_usd_per_TB: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _powers(self) -> SSDSpec:
        if self.active_read_W < self.idle_W or self.active_write_W < self.idle_W:
            raise ValueError(
                f"active power must be >= idle power ({self.idle_W} W), found read {self.active_read_W} W, "
                f"write {self.active_write_W} W"
            )
        return self

    @property
    def capacity_bytes(self) -> float:
        return self.capacity_TB * 1e12


def per_op_seconds(bandwidth_Bps: float, iops_4k: float) -> float:
    """Per-command overhead that makes the service-time law pass through both datasheet points."""
    return max(0.0, 1.0 / iops_4k - 4 * KiB / bandwidth_Bps)


def read_seconds_per_byte(spec: SSDSpec, block_bytes: float) -> float:
    bw = spec.seq_read_MBps * 1e6
    return 1.0 / bw + per_op_seconds(bw, spec.rand_read_iops) / block_bytes


def write_seconds_per_byte(spec: SSDSpec, block_bytes: float) -> float:
    bw = spec.seq_write_MBps * 1e6
    return 1.0 / bw + per_op_seconds(bw, spec.rand_write_iops) / block_bytes


def read_throughput_Bps(spec: SSDSpec, block_bytes: float) -> float:
    return min(1.0 / read_seconds_per_byte(spec, block_bytes), link_payload_Bps(spec.link))


def write_throughput_Bps(spec: SSDSpec, block_bytes: float) -> float:
    return min(1.0 / write_seconds_per_byte(spec, block_bytes), link_payload_Bps(spec.link))


def read_joules_per_byte(spec: SSDSpec) -> float:
    return (spec.active_read_W - spec.idle_W) / (spec.seq_read_MBps * 1e6)


def write_joules_per_byte(spec: SSDSpec) -> float:
    return (spec.active_write_W - spec.idle_W) / (spec.seq_write_MBps * 1e6)


def power_cap_W(spec: SSDSpec, power_state: int | None) -> float | None:
    """The state's maximum power, or None when the drive has no power-state table."""
    if not spec.power_states:
        if power_state not in (None, 0):
            raise ValueError(f"{spec.name} has no NVMe power-state table; only PS0 is valid, found PS{power_state}")
        return None
    index = 0 if power_state is None else power_state
    if not 0 <= index < len(spec.power_states):
        raise ValueError(
            f"{spec.name} has power states PS0..PS{len(spec.power_states) - 1}, found PS{index}"
        )
    cap = spec.power_states[index].max_W
    if cap <= spec.idle_W:
        raise ValueError(f"{spec.name} PS{index} caps at {cap} W, at or below its idle power {spec.idle_W} W")
    return cap
