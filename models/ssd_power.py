"""SSD power from its components: idle, a busy floor, commands, NAND reads, programs and erases.

A drive's power is

    P = P_state                                  idle in its NVMe power state (operational idle, or the
                                                 power of a non-operational state; less with the link in L1)
      + F x [at least one command outstanding]   the busy floor: controller cores, DRAM and NAND channels
                                                 leaving their idle clock gating
      + e_cmd x commands/s                       per command: submission and completion, FTL lookup
      + e_read x NAND bytes read/s               array sense, channel transfer, ECC decode, DMA and PCIe
      + e_prog x NAND bytes programmed/s         array program, channel transfer, ECC encode, DMA
      + e_erase x NAND bytes programmed/s        every programmed byte's block is erased once

A host read of b bytes reads max(b, U) NAND bytes (U the read unit, 4 KiB: the
partial-page read of 3D NAND); a host write of b bytes programs WA x b NAND
bytes, and garbage collection reads the (WA - 1) x b valid bytes it moves
(Desnoyers' greedy-GC accounting, models.nand: every page written beyond the
host's is a valid page copied, read first); a copy inside the drive senses
the page and moves it over the channel but skips the host path (DMA, PCIe),
so it costs GC_READ_SHARE of a host read's energy per byte.  The same energies make the
dynamic part of the power-state cap: an operational state of maximum power
MP leaves MP - P_idle - F for the dynamic terms, and the firmware throttles
die activity until they fit (NVMe maximum power is an average over a 10 s
window, W01), so throughput falls in proportion, and with fewer dies busy at
once each queued request waits longer (simulator.storage.ssd uses the share
in the concurrency law).

Where each value comes from (catalog fields, with provenance in ssd.yaml):
  * P_idle (idle_W) and the maximum powers of the state table: datasheets, smartctl dumps, reviews;
  * F: the drive's `active_floor_W`, else FLOOR_W_PER_LANE of its link generation x lanes (below);
  * e_cmd: the drive's `energy_per_io_uJ`, else COMMAND_J (below);
  * e_read: what the drive's sequential-read power (`active_read_W` at `seq_read_MBps`, 128 KiB
    requests) leaves after P_idle, F and e_cmd;
  * e_prog + e_erase: the same from `active_write_W` at `seq_write_MBps` (WA 1), less ERASE_J_PER_BYTE.
So every drive's model passes through its own sequential read and write points,
and its 4 KiB random reads follow from the components (not from a fit).
"""

from __future__ import annotations

from dataclasses import dataclass

from iowatt.models.provenance import Provenance
from iowatt.models.ssd import SSDSpec
from iowatt.models.uncertainty import assumed_constant_of, constant

_B128K = 128 * 1024

# The busy floor per lane of the link generation (W).  A controller is sized for the link it must fill:
# channels, DRAM width and cores grow with it, so the floor is taken per lane of the generation.
FLOOR_W_PER_LANE = {1: 0.25, 2: 0.3, 3: 0.4, 4: 0.5, 5: 0.75, 6: 1.0}
FLOOR_W_SATA = 0.5
FLOOR_W_PER_SAS_LANE = 0.5
# Energy of one command (J) where the catalog has none
COMMAND_J = 2.0e-6
# Smallest NAND read (bytes): a 4 KiB partial-page read
READ_UNIT_BYTES = 4096.0
# Block erase energy per byte of the block (J/B)
ERASE_J_PER_BYTE = 1.2e-11
# Share of a host read's energy per byte that garbage collection's copy read costs
GC_READ_SHARE = 0.3

PROVENANCE: dict[str, Provenance] = {
    "FLOOR_W_PER_LANE": Provenance(
        p="assumed",
        src="StorageReview S08; 'Can Storage Devices be Power Adaptive?' (HotStorage 2024)",
        note="no drive publishes its busy floor.  Gen5 x4 = 3 W: the Micron 6550 ION runs I/O at PS7 (10 W cap, S08) "
        "with its 5 W idle, so idle + floor must leave it a few watts; its four measured PS1 points (S08: 17.5-17.9 W "
        "for 12.7 GB/s reads, 1.4 GB/s random writes, 8.2 GB/s writes) lie within 0.4 W of each other, so most of "
        "its busy power does not scale with bytes.  HotStorage 2024 reaches at most 59.4 % below a device's maximum "
        "operating power with power states and I/O shaping, i.e. idle + floor near 40 % of it (10 W of 25 W).  "
        "Other generations scale with the lane rate's controller class: Gen4 0.5, Gen3 0.4 W per lane",
        low=0.5, high=1.5,
        range_note="factors on every generation's figure.  high: 1.5 x puts the Gen5 x4 floor at 4.5 W, which with the "
        "6550's 5 W idle is just under the 10 W PS7 cap it runs I/O at (S08); low: half, the floor of a controller "
        "that gates its channels and cores between commands, the 0.4 W spread of the 6550's four PS1 points (S08) "
        "still far below it",
    ),
    "FLOOR_W_SATA": Provenance(
        p="assumed", src="S06",
        note="Micron 5210 ION: 1.5 W idle, 2.8 W max read, 3.6 W max write (S06); a SATA controller's busy floor taken as "
        "0.5 W, a third of the gap between idle and its read power",
        low=0.25, high=0.75,
        range_note="low: a fifth of the 1.3 W gap between the 5210's idle and maximum read power (S06); high: over half "
        "of it, leaving 0.55 W for the bytes of a full-rate read",
    ),
    "FLOOR_W_PER_SAS_LANE": Provenance(
        p="assumed", note="as SATA per lane: one 12 Gb/s SerDes and its share of the controller",
        low=0.25, high=0.75, range_note="as FLOOR_W_SATA's range, per lane",
    ),
    "COMMAND_J": Provenance(
        p="assumed", src="S08",
        note="the only measured per-command energy: Micron 6550 ION at PS1, 17.5 W at 12.7 GB/s 128 KiB reads and "
        "17.9 W at 11.6 GB/s 16 KiB reads (707 K IOPS) give 2.0 uJ per command with this model's idle and floor; "
        "per-command work (doorbell, submission and completion TLPs, FTL lookup) is controller firmware of one class",
        low=1.0e-6, high=4.0e-6, shape="log-uniform",
        range_note="half and twice the one measured figure: it rests on the 0.4 W between two S08 points stated to "
        "0.1 W, so +-0.2 W of rounding moves it by about half; other controllers differ by firmware class",
    ),
    "READ_UNIT_BYTES": Provenance(
        p="assumed", src="Micron TN-29-93 (SNAP READ: partial-page reads of 3D NAND)",
        note="3D NAND reads a 4 KiB partial page for a 4 KiB request.  Were a whole 16 KiB page sensed per 4 KiB read, "
        "every Gen5 drive's datasheet 4 KiB IOPS would need more than its PS0 cap with the sequential-read energy of "
        "its own datasheet, which the vendors measure at PS0",
        low=4096.0, high=8192.0, shape="log-uniform",
        range_note="low: the 4 KiB partial-page read (TN-29-93); high: a half-page (8 KiB) sense, the next granularity "
        "of a 16 KiB page; the whole page is ruled out (note)",
    ),
    "GC_READ_SHARE": Provenance(
        p="assumed",
        note="a GC copy senses the valid page and moves it over the NAND channel to be programmed again, but skips the "
        "host DMA and PCIe path.  The array read alone is ~4 uJ per 16 KiB page (ONFI-class 25 mA at 2.5-3.3 V for a "
        "50-60 us TLC tR), ~0.25 nJ per byte, about 0.3 of the 0.7-0.8 nJ per byte a Gen5 drive's host read costs here",
        low=0.2, high=0.4,
        range_note="low: the array read alone at the short end (~3 uJ per 16 KiB page against 0.8 nJ per host byte); "
        "high: the array read plus its channel crossings and ECC decode, a host read's work less the DMA and PCIe path",
    ),
    "ERASE_J_PER_BYTE": Provenance(
        p="assumed",
        note="ONFI-class array erase current ~25 mA at VCC 2.5 V for tBERS ~5 ms is ~0.3 mJ per block; a 3D TLC block "
        "holds ~24 MiB, so ~1.2e-11 J per byte, about 1 % of the program energy",
        low=0.4e-11, high=4.0e-11, shape="log-uniform",
        range_note="the note's arithmetic at its ends: low, 15 mA at 2.5 V for 3 ms over a 32 MiB block; high, 35 mA at "
        "3.3 V for 7 ms over a 16 MiB block",
    ),
}


FLOOR_PER_LANE_FACTOR = assumed_constant_of("models.ssd_power.floor_per_lane_factor", 1.0, PROVENANCE["FLOOR_W_PER_LANE"])
FLOOR_SATA = assumed_constant_of("models.ssd_power.floor_W_sata", FLOOR_W_SATA, PROVENANCE["FLOOR_W_SATA"])
FLOOR_SAS = assumed_constant_of("models.ssd_power.floor_W_per_sas_lane", FLOOR_W_PER_SAS_LANE, PROVENANCE["FLOOR_W_PER_SAS_LANE"])
COMMAND = assumed_constant_of("models.ssd_power.command_J", COMMAND_J, PROVENANCE["COMMAND_J"])
READ_UNIT = assumed_constant_of("models.ssd_power.read_unit_bytes", READ_UNIT_BYTES, PROVENANCE["READ_UNIT_BYTES"])
ERASE = assumed_constant_of("models.ssd_power.erase_J_per_byte", ERASE_J_PER_BYTE, PROVENANCE["ERASE_J_PER_BYTE"])
GC_READ = assumed_constant_of("models.ssd_power.gc_read_share", GC_READ_SHARE, PROVENANCE["GC_READ_SHARE"])


@dataclass(frozen=True)
class PowerModel:
    """One drive's power components (SI units)."""

    idle_W: float
    floor_W: float
    command_J: float
    read_J_per_byte: float
    program_J_per_byte: float
    erase_J_per_byte: float
    read_unit_bytes: float = READ_UNIT_BYTES
    gc_read_share: float = GC_READ_SHARE  # of a host read's energy per byte, for a garbage-collection copy read

    @property
    def write_J_per_byte(self) -> float:
        """Program and erase energy per NAND byte written."""
        return self.program_J_per_byte + self.erase_J_per_byte


def floor_W(spec: SSDSpec) -> float:
    """The busy floor: the catalog's `active_floor_W`, else the per-lane figure of the link."""
    if spec.active_floor_W is not None:
        return spec.active_floor_W
    link = spec.link
    if link.kind == "pcie" and link.generation is not None:
        return constant(FLOOR_PER_LANE_FACTOR.name) * FLOOR_W_PER_LANE[link.generation] * link.lanes
    if link.kind == "sas":
        return constant(FLOOR_SAS.name) * link.lanes
    return constant(FLOOR_SATA.name)


def command_J(spec: SSDSpec) -> float:
    return spec.energy_per_io_uJ * 1e-6 if spec.energy_per_io_uJ is not None else constant(COMMAND.name)


def _per_byte(active_W: float, rate_MBps: float, base_W: float, e_cmd: float, what: str, name: str) -> float:
    """Energy per byte that makes the 128 KiB sequential point draw `active_W` at `rate_MBps`."""
    rate = rate_MBps * 1e6
    dynamic = active_W - base_W - e_cmd * rate / _B128K
    if dynamic <= 0.0:
        raise ValueError(
            f"{name}: active_{what}_W {active_W} W leaves nothing for the bytes after idle + busy floor + commands "
            f"({base_W + e_cmd * rate / _B128K:.2f} W); lower active_floor_W or energy_per_io_uJ"
        )
    return dynamic / rate


def power_model(spec: SSDSpec) -> PowerModel:
    """Every component of the drive's power, derived from its catalog fields (module docstring)."""
    floor, e_cmd = floor_W(spec), command_J(spec)
    base = spec.idle_W + floor
    e_read = _per_byte(spec.active_read_W, spec.seq_read_MBps, base, e_cmd, "read", spec.name)
    e_write = _per_byte(spec.active_write_W, spec.seq_write_MBps, base, e_cmd, "write", spec.name)
    erase = min(constant(ERASE.name), e_write)
    return PowerModel(spec.idle_W, floor, e_cmd, e_read, e_write - erase, erase, constant(READ_UNIT.name), constant(GC_READ.name))


# ---------------------------------------------------------------- energy per host byte


def nand_read_bytes(model: PowerModel, block_bytes: float) -> float:
    """NAND bytes read per host byte of a read of `block_bytes` (at least one read unit per request)."""
    return max(block_bytes, model.read_unit_bytes) / block_bytes


def read_J_per_host_byte(model: PowerModel, block_bytes: float) -> float:
    """Dynamic energy of one host byte read: its command's share and the NAND bytes it reads."""
    return model.command_J / block_bytes + model.read_J_per_byte * nand_read_bytes(model, block_bytes)


def write_J_per_host_byte(model: PowerModel, block_bytes: float, wa: float) -> float:
    """Dynamic energy of one host byte written with write amplification `wa`: its command's share, WA NAND
    bytes programmed (and their blocks erased), and the WA - 1 valid bytes garbage collection reads to move."""
    if wa < 1.0:
        raise ValueError(f"write amplification must be >= 1, found {wa!r}")
    return model.command_J / block_bytes + model.write_J_per_byte * wa + gc_read_J_per_byte(model) * (wa - 1.0)


def gc_read_J_per_byte(model: PowerModel) -> float:
    """Energy of one valid byte garbage collection reads to move (no host path)."""
    return model.gc_read_share * model.read_J_per_byte


def busy_power_W(model: PowerModel, read_Bps: float, write_Bps: float, block_bytes: float, wa: float = 1.0) -> float:
    """Average power while serving these host rates (the closed form of what the flow engine meters)."""
    if read_Bps < 0.0 or write_Bps < 0.0:
        raise ValueError(f"rates must be >= 0, found read {read_Bps!r}, write {write_Bps!r}")
    if read_Bps == 0.0 and write_Bps == 0.0:
        return model.idle_W
    dynamic = read_Bps * read_J_per_host_byte(model, block_bytes) + write_Bps * write_J_per_host_byte(model, block_bytes, wa)
    return model.idle_W + model.floor_W + dynamic


def dynamic_budget_W(model: PowerModel, cap_W: float | None) -> float:
    """What an operational state's maximum power leaves for the dynamic terms (inf without a cap)."""
    if cap_W is None:
        return float("inf")
    return cap_W - model.idle_W - model.floor_W


def cap_share(model: PowerModel, cap_W: float | None, dynamic_J_per_byte: float, rate_Bps: float) -> float:
    """Share of `rate_Bps` the state's cap lets through: min(1, budget / dynamic power at that rate)."""
    budget = dynamic_budget_W(model, cap_W)
    demand = dynamic_J_per_byte * rate_Bps
    if demand <= 0.0 or budget >= demand:
        return 1.0
    return max(0.0, budget / demand)
