"""One SSD in the flow engine (the Drive contract): its constraints, power meter, and what it holds.

Constraints (per drive, N = drive index):
  ssdN.link_write / ssdN.link_read   PCIe payload rate per direction
  ssdN.read                          read service time, 1 device-second per second
  ssdN.write                         write service time at the native program rate; its capacity
                                     is the pSLC speed factor (below)
  ssdN.media                         shared service time of reads and writes (interference law)
  ssdN.power                         dynamic power budget = power-state cap - idle - busy floor (W)
  ssdN.host_bytes / nand_bytes       unbounded counters (1 per host byte, WA per host byte)
  ssdN.commands / nand_read_bytes / gc_read_bytes / commands_in_flight
                                     unbounded counters of commands, NAND bytes read for the host,
                                     valid bytes garbage collection reads, and commands in flight
                                     (rate x the time each keeps the drive busy); the command counter is also the gate
                                     the power policy closes while the drive rests or wakes

Power (models.ssd_power): the meter is the state's idle power, a busy floor for the
share of the time a command is in flight, and energies per command, per NAND byte read,
programmed and erased; its parts are kept apart (report: energy_J_by_part).  The
power policy (simulator.storage.power_policy) moves the drive between states.

What the drive holds.  The filesystem's view of the drive's share of the
volume (models.filesystem: live files, free space in the order the allocator
reuses it, discard policy) and the FTL's (models.ftl: valid data per owner in
block groups under greedy garbage collection) are kept apart: a file deleted
without discard stays valid to the FTL.  `store` applies a file write to both
at once, when it is announced: the filesystem frees the file it replaces
(discarding it if told to) and places the new bytes on never-written or
trimmed space or over stale data; the FTL programs them, kills what they
overwrite and collects garbage; the NAND bytes programmed per host byte of
exactly this write are the write amplification its flows (`Access.file`) pay
in service time, power and NAND-byte counters.  Writes of less than the
indirection unit pay its read-modify-write on top (models.ssd.iu_factor).
Writes without a stored file are priced at the state as it is, without
changing it.

The drive is given with `fill` (files on it) and `ftl_valid` (what its FTL
holds as valid, default the same: more means deleted data never discarded),
written as `precondition` says (SNIA PTS-E random steady state, or one
sequential pass); a drive at 0 is fresh out of box.

pSLC cache (drives with one): free NAND programmed one bit per cell takes host
writes at slc_write_MBps until it is used up, with no reclaim while writing
(W08).  Its size shrinks as the drive's valid data grow
(models.nand.slc_cache_bytes): for writes of new data starting at valid share
f0 the cache runs out after x = min(max share x C, C (1 + op - f0) / (bits + 1))
host bytes, where the cache left, C (1 + op - f0 - x / C) / bits, meets x.
The engine is told of that one breakpoint.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

from iowatt.models import nand, ssd_power
from iowatt.models.filesystem import PRESETS, Extent, FileSpace, FilesystemSpec
from iowatt.models.ftl import STEP_SHARE, FluidFTL, Kill, Precondition
from iowatt.models.links import device_queue_limit, link_payload_Bps
from iowatt.models.ssd import (
    SSDSpec,
    iu_factor,
    over_provisioning_of,
    queue_seconds,
    read_seconds_per_byte,
    read_units,
    unloaded_latency_s,
    write_seconds_per_byte_at,
)
from iowatt.models.ssd_states import power_cap_W, state_idle_W
from iowatt.simulator.flows import Constraint, FlowEngine
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Drive, FileWrite, RequestRun, RequestServer, Usage, WriteRecord
from iowatt.simulator.storage.families import DriveChoice, DriveRuntime
from iowatt.simulator.storage.power_policy import DrivePower, PowerPolicy

POWER_BINS = 240  # the drive's power over time in the report: average power in this many equal bins

INITIAL = "initial"               # owner of the files the drive was given with
INITIAL_STALE = "initial.stale"   # owner of deleted data it still holds (ftl_valid above fill)


class _WriteState:
    """Dynamics of ssdN.write: host and NAND byte counters, pSLC cache use (module docstring)."""

    def __init__(self, drive: SsdDrive) -> None:
        self.drive = drive
        spec = drive.spec
        self.has_slc = spec.slc_cache_max_fraction > 0.0 and spec.slc_write_MBps is not None
        self.slc_used = 0.0
        f0 = drive.fill
        bits = nand.BITS_PER_CELL[spec.nand]
        cap = spec.capacity_bytes
        self.slc_budget = min(spec.slc_cache_max_fraction * cap, max(0.0, cap * (1.0 + drive.over_provisioning - f0)) / (bits + 1))
        self.slc_exhausted = not self.has_slc or self.slc_budget <= 0.0
        self.speed_slc = (spec.slc_write_MBps or spec.seq_write_MBps) / spec.seq_write_MBps
        self.host_bytes = 0.0
        self.nand_bytes = 0.0

    def speed(self) -> float:
        return 1.0 if self.slc_exhausted else self.speed_slc

    def advance(self, elapsed_seconds: float, load: float) -> None:
        del load
        d = self.drive
        host = d.host_counter.load
        self.host_bytes += host * elapsed_seconds
        self.nand_bytes += d.nand_counter.load * elapsed_seconds
        if not self.slc_exhausted:
            self.slc_used += host * elapsed_seconds

    def seconds_to_breakpoint(self, load: float) -> float:
        del load
        host = self.drive.host_counter.load
        if self.slc_exhausted or host <= 0.0:
            return math.inf
        return max(0.0, self.slc_budget - self.slc_used) / host

    def on_breakpoint(self, engine: FlowEngine, constraint: Constraint) -> None:
        if not self.slc_exhausted and self.slc_used >= self.slc_budget * (1.0 - 1e-9) - 1.0:
            self.slc_exhausted = True
        engine.set_capacity(constraint, self.speed())


class SsdDrive(Drive):
    """One SSD in the flow engine."""

    def __init__(self, engine: FlowEngine, name: str, spec: SSDSpec, power_state: int, fill: float,
                 filesystem: FilesystemSpec | None = None, ftl_valid: float | None = None,
                 precondition: Precondition = "random", policy: PowerPolicy | None = None) -> None:
        self.engine = engine
        self.name = name
        self.spec = spec
        self.power_state = power_state
        capacity = spec.capacity_bytes
        held = fill if ftl_valid is None else ftl_valid
        if not 0.0 <= fill <= held <= 1.0:
            raise ValueError(f"ftl_valid: expected between fill ({fill!r}) and 1, found {held!r}")
        self.over_provisioning = over_provisioning_of(spec)
        self.ftl = FluidFTL(capacity, self.over_provisioning)
        self.ftl.precondition({INITIAL: fill * capacity, INITIAL_STALE: (held - fill) * capacity}, precondition)
        self.files = FileSpace(capacity, filesystem or PRESETS["ext4"], fill * capacity, (held - fill) * capacity,
                               initial_owner=INITIAL, stale_owner=INITIAL_STALE)
        self.fill_start = self.ftl.valid_fraction
        self._wa: dict[tuple[str, bool], float] = {}  # (file, overwrite) -> WA of its last stored write
        self._log: list[WriteRecord] = []
        link = link_payload_Bps(spec.link)
        self.link_write = engine.constraint(f"{name}.link_write", link)
        self.link_read = engine.constraint(f"{name}.link_read", link)
        self.read = engine.constraint(f"{name}.read", 1.0)
        self.host_counter = engine.constraint(f"{name}.host_bytes", math.inf)
        self.nand_counter = engine.constraint(f"{name}.nand_bytes", math.inf)
        self.state = _WriteState(self)
        self.write = engine.constraint(f"{name}.write", self.state.speed(), dynamics=self.state)
        self.media = engine.constraint(f"{name}.media", 1.0)
        self._build_power(power_state, policy or PowerPolicy())

    # ------------------------------------------------------------ state
    @property
    def fill(self) -> float:
        """FTL-valid share of the user capacity (what the drive holds as data, deleted-but-not-discarded included)."""
        return self.ftl.valid_fraction

    @property
    def filesystem_fill(self) -> float:
        return self.files.live_bytes / self.spec.capacity_bytes

    @property
    def queue_limit(self) -> int | None:
        return device_queue_limit(self.spec.interface)

    @property
    def tracks_writes(self) -> bool:
        return True

    def discard(self, nbytes: float) -> None:
        """TRIM of `nbytes` of data the drive is not told the owner of: they die spread over what it holds."""
        super().discard(nbytes)
        total = self.ftl.valid_bytes
        if total > 0.0 and nbytes > 0.0:
            self.ftl.discard([Kill(o, min(nbytes, total) * v / total, False) for o, v in self.ftl.owners().items()])

    def store(self, target: FileWrite, nbytes: float, access: Access) -> None:
        """Place `nbytes` of file `target` (module docstring) and record what they cost."""
        super().store(target, nbytes, access)
        self._discard(self.files.trims_due(self.engine.env.now))  # the periodic fstrim runs due by now
        before = self.fill
        ordered = access.pattern == "seq"
        if target.replaces is not None:
            truncate = self.files.spec.replace == "truncate_rewrite"
            self._discard(self.files.delete(target.replaces, target.discard, truncate))
        own = self.files.owner_of(target.name)
        if access.overwrite and own is not None:
            # a rewrite in place: the file's own data die as the new data land
            programmed = self.ftl.write(own, nbytes, ordered, [Kill(own, nbytes, ordered)])
        else:
            owner, pieces = self.files.allocate(target.name, nbytes)
            kills = [Kill(e.owner, e.nbytes, ordered) for e in pieces if e.owner is not None]
            programmed = self.ftl.write(owner, nbytes, ordered, kills)
        programmed *= iu_factor(self.spec, access.block_bytes) if access.pattern == "rand" else 1.0
        wa = programmed / nbytes if nbytes > 0.0 else 1.0
        self._wa[(target.name, access.overwrite)] = wa
        self._record(target.name, nbytes, programmed, before)

    def _discard(self, extents: list[Extent]) -> None:
        kills = [Kill(e.owner, e.nbytes, True) for e in extents if e.owner is not None]
        if kills:
            self.ftl.discard(kills)

    def _record(self, file: str, host: float, programmed: float, before: float) -> None:
        spec = self.spec
        rated = math.inf
        if spec.endurance_dwpd is not None:
            rated = nand.rated_nand_bytes(spec.capacity_bytes, spec.endurance_dwpd, spec.warranty_years, spec.endurance_rating_wa)
        record = WriteRecord(self.engine.env.now, file, host, programmed, before, self.fill, self.filesystem_fill, programmed / rated)
        last = self._log[-1] if self._log else None
        if last is not None and last.file == file:  # one file written in pieces (fio segments): one record
            record = WriteRecord(last.time_s, file, last.host_bytes + host, last.nand_bytes + programmed, last.ftl_valid_before,
                                 record.ftl_valid_after, record.filesystem_fill, last.endurance_used + record.endurance_used)
            self._log[-1] = record
        else:
            self._log.append(record)

    def write_log(self) -> list[WriteRecord]:
        return list(self._log)

    def write_amplification(self, access: Access) -> float:
        """NAND bytes per host byte that writes like `access` program: their stored file's, or (no file) what
        the next writes of new data (or of rewrites) would cost at the state as it is."""
        if access.file is not None and (access.file, access.overwrite) in self._wa:
            return self._wa[(access.file, access.overwrite)]
        ordered = access.pattern == "seq"
        probe = STEP_SHARE * self.spec.capacity_bytes
        kills: list[Kill] = []
        total = self.ftl.valid_bytes
        if access.overwrite and total > 0.0:
            kills = [Kill(o, probe * v / total, ordered) for o, v in self.ftl.owners().items()]
        wa = self.ftl.write_amplification_ahead("probe", probe, ordered, kills) if self.ftl.free < 2 * probe or kills else 1.0
        return wa * (iu_factor(self.spec, access.block_bytes) if access.pattern == "rand" else 1.0)

    # ------------------------------------------------------------ usage
    def usage(self, access: Access, share: float = 1.0) -> Usage:
        """Constraints a host byte of `access` crosses, times `share` (striping)."""
        if access.write:
            return self._write_usage(access, share)
        t = read_seconds_per_byte(self.spec, access.block_bytes, access.pattern)
        return [
            (self.link_read, share),
            (self.read, share * t),
            (self.media, share * t),
            *self._read_power_usage(access.block_bytes, share),
        ]

    def _write_usage(self, access: Access, share: float) -> Usage:
        """Writes: service time, power and NAND bytes at the write amplification of their stored file."""
        block = access.block_bytes
        wa = self.write_amplification(access)
        t = write_seconds_per_byte_at(self.spec, block, wa)
        return [
            (self.link_write, share),
            (self.write, share * t),
            (self.media, share * t / self.state.speed()),
            *self._write_power_usage(block, wa, share, t / self.state.speed()),
            (self.host_counter, share),
            (self.nand_counter, share * wa),
        ]

    def qd1_latency_s(self, access: Access) -> float:
        return unloaded_latency_s(self.spec, access.block_bytes, access.write)

    def latency_spread(self, write: bool) -> float:
        """A fit, the datasheet's QoS, else assumed (simulator.per_request.latency)."""
        from iowatt.simulator.per_request.latency import read_sigma, write_sigma  # models-only module, kept with its mode

        return (write_sigma if write else read_sigma)(self.spec)[0]

    def request_server(self, run: RequestRun, access: Access) -> RequestServer:
        """Flash units for reads, a write buffer drained by programs, GC rounds (simulator/per_request/ssd.py), every
        law read from this fluid face."""
        from iowatt.simulator.per_request.ssd import SsdRequests  # the per-request face, run on demand

        return SsdRequests(run, self, access)

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        """models.ssd's concurrency law: reads queue on the flash units (writes too where the spec says so)."""
        read_share = 0.0 if access.write else 1.0
        s = queue_seconds(self.spec, access.block_bytes, read_share, access.pattern, access.overwrite, self.fill)
        # a cap lets only a share of the units work at once: fewer units, each request waits longer (L0 = c S kept)
        share = self._cap_unit_share(access)
        units = read_units(self.spec, access.block_bytes, read_share)
        return ConcurrencyLaw(self.qd1_latency_s(access), s / share, self.queue_limit, units=True,
                              unit_count=None if units is None else units * share)

    # ------------------------------------------------------------ power (models.ssd_power)
    def _build_power(self, power_state: int, policy: PowerPolicy) -> None:
        """Counters, the cap's budget constraint, the meter by part and the power policy that moves the state."""
        engine, name, spec = self.engine, self.name, self.spec
        self.model = ssd_power.power_model(spec)
        self.commands = engine.constraint(f"{name}.commands", math.inf)
        self.nand_read = engine.constraint(f"{name}.nand_read_bytes", math.inf)
        self.gc_read = engine.constraint(f"{name}.gc_read_bytes", math.inf)
        self.in_flight = engine.constraint(f"{name}.commands_in_flight", math.inf)
        self.power_state = power_state
        self.cap_W = power_cap_W(spec, power_state)
        self.power = engine.constraint(f"{name}.power", self._budget_W(power_state))
        m = self.model
        self.meter = engine.meter(
            name, state_idle_W(spec, power_state),
            [(self.commands, m.command_J), (self.nand_read, m.read_J_per_byte), (self.gc_read, ssd_power.gc_read_J_per_byte(m)),
             (self.nand_counter, m.program_J_per_byte), (self.nand_counter, m.erase_J_per_byte)],
            group="storage", busy_terms=[(self.in_flight, m.floor_W)],
            labels=("state", "extra", "command", "nand_read", "gc_read", "nand_program", "nand_erase", "busy_floor"),
        )
        if self.meter.history is None:
            self.meter.history = [(engine.env.now, self.meter.power_W)]  # the drive's power over time (report: power_W_bins)
        self.policy = DrivePower(engine, spec, power_state, policy, self.commands, self.meter)

    def _budget_W(self, power_state: int) -> float:
        budget = ssd_power.dynamic_budget_W(self.model, power_cap_W(self.spec, power_state))
        if budget <= 0.0:
            raise ValueError(f"{self.spec.name} PS{power_state}: its cap leaves no power for I/O after idle and the busy floor")
        return budget

    def _held_seconds(self, latency_s: float, service_s: float, joules: float) -> float:
        """How long one request keeps the drive busy (its part of the commands in flight, Little's law): its latency,
        its media service time, or its share of a capped state's power budget, whichever is longest, so a drive the
        cap throttles counts as busy all the time."""
        budget = self.power.capacity
        return max(latency_s, service_s, joules / budget if 0.0 < budget < math.inf else 0.0)

    def _read_power_usage(self, block: float, share: float) -> Usage:
        m = self.model
        joules = ssd_power.read_J_per_host_byte(m, block)
        held = self._held_seconds(unloaded_latency_s(self.spec, block, False), read_seconds_per_byte(self.spec, block) * block, joules * block)
        return [
            (self.commands, share / block),
            (self.in_flight, share * held / block),
            (self.nand_read, share * ssd_power.nand_read_bytes(m, block)),
            (self.power, share * joules),
        ]

    def _write_power_usage(self, block: float, wa: float, share: float, seconds_per_byte: float) -> Usage:
        """Commands, garbage collection's reads of the WA - 1 valid bytes it moves, and the energy (programs via
        nand_bytes, which the fill dynamics also count).  A write keeps the drive busy for its acknowledgement or
        for its programs, whichever is longer."""
        m = self.model
        joules = ssd_power.write_J_per_host_byte(m, block, wa)
        held = self._held_seconds(unloaded_latency_s(self.spec, block, True), seconds_per_byte * block, joules * block)
        usage = [(self.commands, share / block), (self.in_flight, share * held / block), (self.power, share * joules)]
        if wa > 1.0:
            usage.append((self.gc_read, share * (wa - 1.0)))
        return usage

    def _cap_unit_share(self, access: Access) -> float:
        """Share of the flash units the state's cap lets work at once at this access's ceiling (1 without a cap):
        with fewer dies busy each queued request waits longer, S / share in the concurrency law."""
        if self.cap_W is None:
            return 1.0
        block = access.block_bytes
        if access.write:
            wa = self.write_amplification(access)
            per_byte = write_seconds_per_byte_at(self.spec, block, wa)
            joules = ssd_power.write_J_per_host_byte(self.model, block, wa)
        else:
            per_byte = read_seconds_per_byte(self.spec, block, access.pattern)
            joules = ssd_power.read_J_per_host_byte(self.model, block)
        return max(1e-9, ssd_power.cap_share(self.model, self.cap_W, joules, 1.0 / per_byte))

    def change_power_state(self, new_state: int) -> Generator[Any, Any, float]:
        """SimPy process body: the drive serves nothing for the transition latency, then runs under the new cap.

        Use as `yield env.process(drive.change_power_state(1))`; returns the transition seconds."""
        cap = power_cap_W(self.spec, new_state)
        latency = yield from self.policy.change_home(new_state)
        self.power_state, self.cap_W = new_state, cap
        self.engine.set_capacity(self.power, self._budget_W(new_state))
        return latency

    def rest(self) -> None:
        """The workload ended a phase (a checkpoint saved): the power policy may rest the drive."""
        self.policy.rest()

    def power_report(self) -> dict[str, object]:
        """Energy by part, time in each state, wakes, and the power over time in equal bins."""
        out = self.policy.report()
        out["energy_J_by_part"] = self.meter.energy_by_part()
        now = self.engine.env.now
        if self.meter.history is not None and now > 0.0:
            out["power_W_bins"] = self.meter.binned_power_W(now, POWER_BINS)
            out["power_bin_seconds"] = now / POWER_BINS
        return out

    # ------------------------------------------------------------ results
    def report(self) -> dict[str, float]:
        """Writes, fill and endurance of this drive up to now."""
        self.engine.sync(self.write)  # the counters as of now
        s = self.state
        wa = s.nand_bytes / s.host_bytes if s.host_bytes > 0 else 1.0
        out = {
            "host_bytes_written": s.host_bytes,
            "nand_bytes_written": s.nand_bytes,
            "write_amplification_mean": wa,
            "fill_start": self.fill_start,
            "fill_end": self.fill,
            "filesystem_fill_end": self.filesystem_fill,
            "over_provisioning": self.over_provisioning,
            "slc_cache_exhausted": float(s.slc_exhausted),
        }
        life = nand.endurance(
            self.spec.capacity_bytes,
            s.host_bytes,
            s.nand_bytes,
            self.engine.env.now,
            self.spec.endurance_dwpd,
            self.spec.warranty_years,
            self.spec.endurance_rating_wa,
        )
        # no writes (or no rating): the endurance is not consumed; leave the infinite value out (JSON has no inf)
        out.update({k: v for k, v in life.items() if math.isfinite(v)})
        return out


def check_power_state(spec: SSDSpec, choice: DriveChoice) -> None:
    """The NVMe power state exists, leaves room for I/O, and the power policy fits the drive's table."""
    cap = power_cap_W(spec, choice.power_state)  # raises with the valid range
    if ssd_power.dynamic_budget_W(ssd_power.power_model(spec), cap) <= 0.0:
        raise ValueError(f"power_state: {spec.name} PS{choice.power_state} caps at {cap} W, no more than its idle power and "
                         f"busy floor; expected a state with room for I/O")
    choice.power_policy.check(spec, choice.power_state)


def _build(engine: FlowEngine, name: str, spec: SSDSpec, choice: DriveChoice) -> Drive:
    return SsdDrive(engine, name, spec, choice.power_state, choice.fill, choice.filesystem_spec(), choice.ftl_valid,
                    choice.precondition, choice.power_policy)


FAMILY = DriveRuntime("ssd", "ssd", _build, check_power_state)
