"""One SSD in the flow engine (the Drive contract): its constraints, power meter and state.

Constraints (per drive, N = drive index):
  ssdN.link_write / ssdN.link_read   PCIe payload rate per direction
  ssdN.read                          read service time, 1 device-second per second
  ssdN.write                         write service time at the native program rate; its capacity
                                     is a speed factor set by the fill-state dynamics below
  ssdN.media                         shared service time of reads and writes (interference law)
  ssdN.power                         dynamic power budget = power-state cap - idle (W)
  ssdN.host_bytes / nand_bytes / new_bytes
                                     unbounded counters (coefficient 1 per host byte, WA per host
                                     byte, 1 per byte of new data) that the dynamics integrate

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

from iowatt.models import nand
from iowatt.models.links import device_queue_limit, link_payload_Bps
from iowatt.models.ssd import (
    SSDSpec,
    io_joules,
    power_cap_W,
    queue_seconds,
    read_joules_per_byte,
    read_seconds_per_byte,
    read_units,
    transition_seconds,
    unloaded_latency_s,
    write_amplification,
    write_joules_per_byte,
    write_seconds_per_byte,
)
from iowatt.simulator.flows import Constraint, FlowEngine
from iowatt.simulator.storage.contract import Access, ConcurrencyLaw, Drive, Usage

FILL_BAND = 0.01  # fill breakpoints every 1 % of user capacity


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

    def __init__(self, engine: FlowEngine, name: str, spec: SSDSpec, power_state: int, fill: float) -> None:
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
        cap = power_cap_W(spec, power_state)
        self.cap_W = cap
        self.power = engine.constraint(f"{name}.power", math.inf if cap is None else cap - spec.idle_W)
        self.meter = engine.meter(name, spec.idle_W, [(self.power, 1.0)], group="storage")
        self._e_read = read_joules_per_byte(spec)
        self._e_write = write_joules_per_byte(spec)
        self._e_io = io_joules(spec)

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
            (self.power, share * (self._e_read + self._e_io / access.block_bytes)),
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
            (self.power, share * (self._e_write * wa + self._e_io / block)),
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
        units = read_units(self.spec, access.block_bytes, read_share)
        return ConcurrencyLaw(self.qd1_latency_s(access), s, self.queue_limit, units=True, unit_count=units)

    # ------------------------------------------------------------ power states
    def change_power_state(self, new_state: int) -> Generator[Any, Any, float]:
        """SimPy process body: the drive serves nothing for the transition latency, then runs under the new cap.

        Use as `yield env.process(drive.change_power_state(1))`; returns the transition seconds."""
        cap = power_cap_W(self.spec, new_state)
        latency = transition_seconds(self.spec, self.power_state, new_state)
        if latency > 0.0:
            self.engine.set_capacity(self.power, 0.0)
            yield self.engine.env.timeout(latency)
        self.power_state = new_state
        self.cap_W = cap
        self.engine.set_capacity(self.power, math.inf if cap is None else cap - self.spec.idle_W)
        return latency

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
