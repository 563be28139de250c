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

System power outside the GPUs and drives (simulator.machine meters each):
  CPU package   idle + (TDP - idle) x utilisation (cpu_package_W): SPECpower_ssj2008 measures
                servers at graduated load levels, and an EPYC 9654 system runs from 63.2 W at
                active idle to 351 W at full load (C03), close to a straight line between them;
  DRAM          a background power per GB installed (refresh, termination, clocking) plus an
                access energy per byte moved (dram_W);
  NIC           a constant power per adapter (its SerDes and ASIC run whether or not packets flow).
"""

from __future__ import annotations

from iowatt.models.links import LinkSpec
from iowatt.models.provenance import Provenance
from iowatt.models.uncertainty import assumed_constant_of, constant
from pydantic import BaseModel, ConfigDict, Field, model_validator

DRAM_BACKGROUND_W_PER_GB = 0.065
DRAM_J_PER_BYTE = 1.6e-10
NIC_W = 20.0

PROVENANCE: dict[str, Provenance] = {
    "DRAM_BACKGROUND_W_PER_GB": Provenance(
        p="assumed", src="C02",
        note="ServeTheHome on Genoa: 24 DDR5 DIMMs use over 100 W (C02), over 4.2 W per DIMM; with the 64 GB RDIMMs of "
        "such servers that is ~0.065 W per GB installed",
        low=0.03, high=0.13, shape="log-uniform",
        range_note="low: ~2 W per 64 GB RDIMM, half of C02's per-DIMM figure, a DDR5 DIMM idling in power-down "
        "between accesses; high: C02's 4.2 W per DIMM on 32 GB RDIMMs, the smaller DIMMs such servers also ship with",
    ),
    "DRAM_J_PER_BYTE": Provenance(
        p="assumed",
        note="DDR4/DDR5 read and write energy of the DRAM devices and I/O is ~15-25 pJ per bit moved; 20 pJ/bit = 0.16 nJ per byte",
        low=1.2e-10, high=2.4e-10,
        range_note="low: 15 pJ/bit, the note's low end (row-buffer hits, streaming DMA); high: 30 pJ/bit, its high end "
        "with the row activations of scattered accesses added",
    ),
    "NIC_W": Provenance(
        p="assumed",
        note="a dual-port 100-200 GbE or InfiniBand adapter (ConnectX-6/7 class) draws ~15-25 W with optics; 20 W per adapter",
        low=15.0, high=25.0,
        range_note="the note's ~15-25 W: low, a dual-port card on copper cables; high, the same with active optics",
    ),
}
DRAM_BACKGROUND = assumed_constant_of("models.compute.dram_background_W_per_GB", DRAM_BACKGROUND_W_PER_GB,
                                      PROVENANCE["DRAM_BACKGROUND_W_PER_GB"])
DRAM_ACCESS = assumed_constant_of("models.compute.dram_J_per_byte", DRAM_J_PER_BYTE, PROVENANCE["DRAM_J_PER_BYTE"])
NIC = assumed_constant_of("models.compute.nic_W_per_adapter", NIC_W, PROVENANCE["NIC_W"])


def dram_J_per_byte() -> float:
    """DRAM access energy per byte moved in this run (the assumed constant, or a sampler's draw)."""
    return constant(DRAM_ACCESS.name)


def nic_W_per_adapter() -> float:
    return constant(NIC.name)


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
    page_cache_write_GBps_per_core: float | None = Field(
        default=None,
        gt=0,
        description="GB/s one core copies into page-cache pages it must first allocate (a buffered write() of resident "
        "memory to a new file, below the dirty limits): measured by `iowatt check-machine`'s host probe; default: "
        "models.host_io's reference-core figure x core_speed.  Virtual machines whose page faults exit to the hypervisor "
        "can be ten times slower than bare metal",
    )
    page_cache_read_GBps_per_core: float | None = Field(
        default=None,
        gt=0,
        description="GB/s of one core's CPU time a buffered read() of uncached file data costs (the page's allocation, "
        "readahead and the copy out; not the wait for the drive): measured by `iowatt check-machine`'s host probe; "
        "default: the page-cache write rate (page_cache_write_GBps_per_core, or models.host_io's reference figure).  "
        "On a VM it can be ten times the write rate: the device fills a read's page by DMA, so the page fault to the "
        "hypervisor is not the guest CPU's",
    )
    shm_write_GBps_per_core: float | None = Field(
        default=None,
        gt=0,
        description="GB/s one core fills a new shared-memory segment it has just mapped (every page faulted in, then "
        "written): what a PyTorch DataLoader worker pays to collate each batch (torch's default_collate allocates the "
        "batch in fresh shared memory).  Measured by `iowatt check-machine`'s host probe; default: not charged",
    )

    @model_validator(mode="after")
    def _powers(self) -> CPUSpec:
        if self.idle_W >= self.tdp_W:
            raise ValueError(f"idle_W must be below tdp_W, found {self.idle_W} >= {self.tdp_W}")
        return self


def cpu_package_W(spec: CPUSpec, utilisation: float) -> float:
    """Package power at a share of the cores busy (module docstring): idle + (TDP - idle) x utilisation."""
    if not 0.0 <= utilisation <= 1.0:
        raise ValueError(f"CPU utilisation must be in [0, 1], found {utilisation!r}")
    return spec.idle_W + (spec.tdp_W - spec.idle_W) * utilisation


def dram_W(installed_bytes: float, moved_Bps: float) -> float:
    """DRAM power: background per GB installed plus access energy per byte moved."""
    if installed_bytes < 0.0 or moved_Bps < 0.0:
        raise ValueError(f"DRAM bytes and traffic must be >= 0, found {installed_bytes!r}, {moved_Bps!r}")
    return constant(DRAM_BACKGROUND.name) * installed_bytes / 1e9 + dram_J_per_byte() * moved_Bps
