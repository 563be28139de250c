"""One SSD in the flow engine (the Drive contract): its constraints, power meter and state.

Constraints (per drive, N = drive index):
  ssdN.link_write / ssdN.link_read   PCIe payload rate per direction
  ssdN.read                          read service time, 1 device-second per second
  ssdN.write                         write service time at the native program rate; its capacity
                                     is a speed factor set by the fill-state dynamics below
  ssdN.media                         shared service time of reads and writes (interference law)
  ssdN.power                         dynamic power budget = power-state cap - idle - busy floor (W)
  ssdN.host_bytes / nand_bytes / new_bytes
                                     unbounded counters (coefficient 1 per host byte, WA per host
                                     byte, 1 per byte of new data) that the dynamics integrate
  ssdN.commands / nand_read_bytes / gc_read_bytes / commands_in_flight
                                     unbounded counters of commands, NAND bytes read for the host,
                                     valid bytes garbage collection reads, and commands in flight
                                     (rate x the time each keeps the drive busy); the command counter is also the gate
                                     the power policy closes while the drive rests or wakes

Power (models.ssd_power): the meter is the state's idle power, a busy floor for the
share of the time a command is in flight, and energies per command, per NAND byte read,
programmed and erased; its parts are kept apart (report: energy_J_by_part).  The
power policy (simulator.storage.power_policy) moves the drive between states.

Fill-state dynamics (on ssdN.write): the fill level advances with bytes of new
data; the pSLC cache (if the drive has one) absorbs host writes at
slc_write_MBps until it is used up, and its size shrinks as the drive fills
(models.nand.slc_cache_bytes).  The engine is told of a breakpoint at every
1 % fill band (where the cache size is re-evaluated) and at the SLC cliff,
where the write capacity drops to the native rate.  A write flow's WA is
fixed when it starts (write_usage): random overwrites see the greedy
steady-state WA at the fill of that moment; overwrites do not change fill.

Garbage collection starts when every physical block has been programmed once:
a drive given with fill > 0 is taken as preconditioned (in steady state, as
SNIA SSS PTS preconditions with 2x the capacity before measuring), a drive at
fill 0 is fresh-out-of-box until its NAND bytes written reach the raw NAND
(capacity x (1 + over-provisioning)); before that random overwrites cost only
the indirection-unit read-modify-write (there is always a free block to write);
after it every random write pays the greedy WA at the current fill.
TRIM (`discard`) lowers the fill: deleted data stop holding NAND.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any

from iowatt.models import nand, ssd_power
from iowatt.models.links import device_queue_limit, link_payload_Bps
from iowatt.models.ssd import (
    SSDSpec,
    power_cap_W,
    queue_seconds,
    read_seconds_per_byte,
    state_idle_W,
    unloaded_latency_s,
    write_amplification,
    write_seconds_per_byte,
)
from iowatt.simulator.flows import Constraint, FlowEngine
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Drive, Usage
from iowatt.simulator.storage.power_policy import DrivePower, PowerPolicy

FILL_BAND = 0.01  # fill breakpoints every 1 % of user capacity
POWER_BINS = 240  # the drive's power over time in the report: average power in this many equal bins


class _FillState:
    """Dynamics of ssdN.write: fill level, pSLC cache use, byte counters."""

    def __init__(self, drive: SsdDrive) -> None:
        self.drive = drive
        spec = drive.spec
        self.has_slc = spec.slc_cache_max_fraction > 0.0 and spec.slc_write_MBps is not None
        self.slc_used = 0.0
        self.slc_exhausted = not self.has_slc or self.cache_size() <= 0.0
        self.speed_slc = (spec.slc_write_MBps or spec.seq_write_MBps) / spec.seq_write_MBps
        self.host_bytes = 0.0
        self.nand_bytes = 0.0
        self.elapsed = 0.0
        self.trace: list[tuple[float, float, float]] = []  # (time, fill, write speed factor)

    def cache_size(self) -> float:
        s = self.drive.spec
        return nand.slc_cache_bytes(s.capacity_bytes, self.drive.fill, s.over_provisioning, s.nand, s.slc_cache_max_fraction)

    def speed(self) -> float:
        return 1.0 if self.slc_exhausted else self.speed_slc

    def _rates(self) -> tuple[float, float, float]:
        d = self.drive
        return d.host_counter.load, d.nand_counter.load, d.new_counter.load

    def advance(self, elapsed_seconds: float, load: float) -> None:
        del load
        host, nand_rate, new = self._rates()
        self.elapsed += elapsed_seconds
        self.host_bytes += host * elapsed_seconds
        self.nand_bytes += nand_rate * elapsed_seconds
        d = self.drive
        d.valid_fraction = min(1.0, d.valid_fraction + new * elapsed_seconds / d.spec.capacity_bytes)
        if not self.slc_exhausted:
            self.slc_used += host * elapsed_seconds

    def seconds_to_breakpoint(self, load: float) -> float:
        del load
        if self.slc_exhausted:
            # fill bands only re-size the pSLC cache; without one nothing changes at them (workloads
            # read the fill when they start a flow, after engine.sync brings it up to date)
            return math.inf
        host, _nand, new = self._rates()
        d = self.drive
        due = math.inf
        if new > 0.0 and d.fill < 1.0:
            band = min(1.0, (math.floor(d.fill / FILL_BAND + 1e-6) + 1) * FILL_BAND)
            due = (band - d.fill) * d.spec.capacity_bytes / new
        if not self.slc_exhausted and host > 0.0:
            due = min(due, max(0.0, self.cache_size() - self.slc_used) / host)
        return due

    def on_breakpoint(self, engine: FlowEngine, constraint: Constraint) -> None:
        if not self.slc_exhausted and self.slc_used >= self.cache_size() * (1.0 - 1e-9) - 1.0:
            self.slc_exhausted = True
        self.trace.append((engine.env.now, self.drive.fill, self.speed()))
        engine.set_capacity(constraint, self.speed())


class SsdDrive(Drive):
    """One SSD in the flow engine."""

    def __init__(
        self, engine: FlowEngine, name: str, spec: SSDSpec, power_state: int, fill: float, policy: PowerPolicy | None = None
    ) -> None:
        self.engine = engine
        self.name = name
        self.spec = spec
        self.power_state = power_state
        self.valid_fraction = fill
        self.fill_start = fill
        link = link_payload_Bps(spec.link)
        self.link_write = engine.constraint(f"{name}.link_write", link)
        self.link_read = engine.constraint(f"{name}.link_read", link)
        self.read = engine.constraint(f"{name}.read", 1.0)
        self.host_counter = engine.constraint(f"{name}.host_bytes", math.inf)
        self.nand_counter = engine.constraint(f"{name}.nand_bytes", math.inf)
        self.new_counter = engine.constraint(f"{name}.new_bytes", math.inf)
        self.state = _FillState(self)
        self.write = engine.constraint(f"{name}.write", self.state.speed(), dynamics=self.state)
        self.state.trace.append((engine.env.now, fill, self.state.speed()))
        self.media = engine.constraint(f"{name}.media", 1.0)
        self._build_power(power_state, policy or PowerPolicy())

    # ------------------------------------------------------------ state
    @property
    def fill(self) -> float:
        return self.valid_fraction

    @property
    def queue_limit(self) -> int | None:
        return device_queue_limit(self.spec.interface)

    @property
    def tracks_writes(self) -> bool:
        return True

    @property
    def gc_active(self) -> bool:
        """Garbage collection runs: preconditioned drive, or every physical block programmed once."""
        raw = self.spec.capacity_bytes * (1.0 + self.spec.over_provisioning)
        return self.fill_start > 0.0 or self.state.nand_bytes >= raw

    def discard(self, nbytes: float) -> None:
        """TRIM of `nbytes` of user data: the fill drops (the blocks hold no valid data any more)."""
        super().discard(nbytes)
        self.engine.sync(self.write)  # bring the fill up to now before changing it
        self.valid_fraction = max(0.0, self.valid_fraction - nbytes / self.spec.capacity_bytes)

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
        """Writes: `overwrite` bytes replace data already on the drive (fill does not grow; random
        overwrites pay steady-state WA at the current fill once garbage collection runs)."""
        block, pattern, overwrite = access.block_bytes, access.pattern, access.overwrite
        self.engine.sync(self.write)  # the fill as of now, not as of the last event
        # once GC runs, every random write (new data or not) consumes blocks that GC must free from
        # randomly invalidated ones: the greedy WA applies to the whole random stream
        gc = self.gc_active and (overwrite or pattern == "rand")
        wa = write_amplification(self.spec, block, pattern, gc, self.fill)
        t = write_seconds_per_byte(self.spec, block, pattern, gc, self.fill)
        usage = [
            (self.link_write, share),
            (self.write, share * t),
            (self.media, share * t / self.state.speed()),
            *self._write_power_usage(block, wa, share, t / self.state.speed()),
            (self.host_counter, share),
            (self.nand_counter, share * wa),
        ]
        if not overwrite:
            usage.append((self.new_counter, share))
        return usage

    def qd1_latency_s(self, access: Access) -> float:
        return unloaded_latency_s(self.spec, access.block_bytes, access.write)

    def concurrency(self, access: Access) -> ConcurrencyLaw:
        """models.ssd's concurrency law: reads queue on the flash units (writes too where the spec says so)."""
        read_share = 0.0 if access.write else 1.0
        s = queue_seconds(self.spec, access.block_bytes, read_share, access.pattern, access.overwrite, self.fill)
        return ConcurrencyLaw(self.qd1_latency_s(access), s / self._cap_unit_share(access), self.queue_limit, units=True)

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
            wa = write_amplification(self.spec, block, access.pattern, access.overwrite, self.fill)
            per_byte = write_seconds_per_byte(self.spec, block, access.pattern, access.overwrite, self.fill)
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
        """Fill and endurance of this drive up to now (the engine brought up to now first)."""
        s = self.state
        wa = s.nand_bytes / s.host_bytes if s.host_bytes > 0 else 1.0
        seconds = self.engine.env.now
        out = {
            "host_bytes_written": s.host_bytes,
            "nand_bytes_written": s.nand_bytes,
            "write_amplification_mean": wa,
            "fill_start": self.fill_start,
            "fill_end": self.fill,
            "slc_cache_exhausted": float(s.slc_exhausted),
        }
        life = nand.endurance(
                self.spec.capacity_bytes,
                s.host_bytes,
                s.nand_bytes,
                seconds,
                self.spec.endurance_dwpd,
                self.spec.warranty_years,
                self.spec.endurance_rating_wa,
            )
        # no writes (or no rating): the endurance is not consumed; leave the infinite value out (JSON has no inf)
        out.update({k: v for k, v in life.items() if math.isfinite(v)})
        return out
