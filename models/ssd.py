"""Solid-state drive: specification and the laws that turn it into capacities.

Block-size law (two-point fit).  One request of b bytes costs the drive
t_fe + b / X seconds of service, where t_fe is the front-end (controller,
command) cost per request and X the internal streaming rate.  For reads the
two unknowns are solved so the law passes *exactly* through both datasheet
points, 4 KiB random IOPS (its ceiling C: where the datasheet gives the queue
depth of the figure, C is solved from the concurrency law below so that the
law meets the figure at that depth) and 128 KiB sequential bandwidth:
    t_fe + 4096 / X = 1 / IOPS_4k,    t_fe + 131072 / X = 131072 / BW_128k
(t_fe clamped at 0 when the 4 KiB point is bandwidth-bound).  Flash has no
seek, so random and sequential reads share the law.

Writes.  Sequential writes use the same front-end cost t_fe (assumed
direction-independent) and an internal rate X_w fitted to the 128 KiB
sequential write point; the datasheet sequential figure is steady state
(after 2x fill, S08) with WA ~1, because a sequential stream invalidates
whole erase blocks.  A write of b bytes that programs WA NAND bytes per host
byte costs t_fe / b + WA / X_w seconds per host byte
(write_seconds_per_byte_at); the simulator takes WA from the drive's FTL
state (models.ftl: what garbage collection copies for this stream at the
drive's FTL-valid data and spare).  The closed form below is the steady
state of one stream alone on a drive `fill` full:
    WA_rand(b, fill) = iu(b) x WA_greedy(fill / (1 + op)),   WA_seq = 1
where iu(b) = max(1, IU / b) is the read-modify-write of a sub-indirection-
unit write and WA_greedy the Lambert-W law of models.nand; random writes to
never-written LBAs (fresh-out-of-box) cost iu(b) only.

Over-provisioning op (spare NAND / user capacity) is rarely published.
Unless the spec gives it, it is derived from the datasheet: the 4 KiB
random-write IOPS is a steady-state figure on a full drive (SNIA PTS-E), so
    (1 / IOPS_4k - t_fe) x X_w / 4096 = iu(4 KiB) x WA_greedy(1 / (1 + op))
solves op (over_provisioning_of).  The catalog's drives come out at 4-25 %,
the range of read-intensive drives that sell decimal TB on binary-sized NAND.

Queue depth (closed loop).  N = iodepth x numjobs requests outstanding, each
with unloaded latency L0(b) = L_4k + (b - 4096) / X; the drive serves at
most C(b) = X_max(b) requests per second (the block-size law).  An SSD is c
parallel flash units (dies x planes behind the channels) and each request
goes to the unit its address maps to, so requests collide on busy units
long before all N could be served at once.  With c = C x L0 units (Little's
law: c units busy for L0 each serve C requests per second) and requests sent
to a uniformly random unit, exact mean value analysis of that closed network
of c balanced single-server queues (Reiser & Lavenberg, J. ACM 27(2), 1980;
each unit holds (N-1)/c of the others when a request arrives) gives
    R(N) = L0 x (1 + (N - 1) / c) = L0 + (N - 1) / C,    X(N) = N / R(N),
a smooth knee: X(1) = 1 / L0, X(c) ~ C / 2, X -> C as N grows (and never
above it while L0 >= 1 / C).  Mean latency is Little's law, R = N / X.
A fractional c is floor(c) full units and one that takes the remaining
share of the requests; the exact MVA of that network (models.unit_mva)
is the closed form above when c is whole and stays exact for large blocks,
where c is 1 or 2 and the closed form runs up to 7 % slow at the knee.  In
a read/write mix the writes add their latency as a delay, not units.
simulator.per_request runs the same network one request at a time.
Only reads queue on the units (S = read share x 1 / C_read): writes are
acknowledged from the power-protected write buffer and programmed later, so
they meet the program-rate ceiling but no collisions (min with the ceiling).
A SATA drive holds at most 32 commands (NCQ tags), so N is capped at 32 in
X and the rest wait in the host queue (they add latency, not throughput).
tests/test_ssd_laws.py checks the law against the MVA recursion and a
per-request SimPy run of c units.

Read/write interference.  Reads and writes share the NAND dies and the
controller: a mix is feasible while the media utilisations add to at most
one, rate_r x t_r + rate_w x t_w <= 1 (t = service seconds per byte), so a
mixed job's throughput is the harmonic mix of the two ceilings.

Power: models.ssd_power (idle, a busy floor, per-command, NAND read,
program and erase energies).  An NVMe operational power state caps the
total; the simulator makes the cap a constraint so the throughput is scaled
down until the drive fits (NVMe semantics, docs/sources.md W01).  A
non-operational state (NVMe NOPS) serves no I/O and draws its own power;
changing state costs the old state's exit latency plus the new state's
entry latency (NVMe EXLAT/ENLAT), and the policies that move a drive
between states live in simulator.storage.power_policy.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Literal

from iowatt.models import nand, unit_mva
from iowatt.models.links import LinkSpec, device_queue_limit, link_payload_Bps
from iowatt.models.uncertainty import assumed_constant, constant
from pydantic import BaseModel, ConfigDict, Field, model_validator

KiB = 1024
_B4K = 4 * KiB
_B128K = 128 * KiB

Pattern = Literal["seq", "rand"]


class PowerState(BaseModel):
    """One entry of the NVMe power-state table (Identify Controller, power state descriptors)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_W: float = Field(gt=0, description="maximum average power in this state (NVMe MP); a non-operational state draws it")
    entry_latency_us: float = Field(default=0.0, ge=0, description="NVMe ENLAT")
    exit_latency_us: float = Field(default=0.0, ge=0, description="NVMe EXLAT")
    non_operational: bool = Field(default=False, description="NVMe NOPS: the state serves no I/O (the first command wakes the drive)")
    idle_W: float | None = Field(default=None, ge=0, description="NVMe IDLP: idle power in this operational state, where the drive reports it")


class SSDSpec(BaseModel):
    """An SSD as the catalog describes it.  Units are in the field names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str = ""
    interface: Literal["nvme", "sata", "sas"] = "nvme"
    nand: Literal["slc", "mlc", "tlc", "qlc"] = "tlc"
    capacity_TB: float = Field(gt=0, description="user capacity, decimal TB")
    link: LinkSpec
    writes_queue: bool = Field(
        default=False,
        description="writes queue on the flash units like reads (no power-protected write buffer, e.g. a virtual disk); "
        "calibrated profiles set it when their fio traces say so",
    )
    seq_read_MBps: float = Field(gt=0, description="128 KiB sequential read ceiling, MB/s")
    seq_write_MBps: float = Field(gt=0, description="128 KiB sequential write ceiling (steady state), MB/s")
    rand_read_iops: float = Field(gt=0, description="4 KiB random read IOPS of the datasheet (the ceiling unless rand_read_iops_outstanding is given)")
    rand_write_iops: float = Field(gt=0, description="4 KiB random write ceiling (steady state), IOPS")
    read_latency_us: float = Field(default=80.0, gt=0, description="QD1 4 KiB read latency")
    write_latency_us: float = Field(default=20.0, gt=0, description="QD1 4 KiB write latency")
    idle_W: float = Field(ge=0)
    active_read_W: float = Field(gt=0, description="average power at the sequential read ceiling")
    active_write_W: float = Field(gt=0, description="average power at the sequential write ceiling")
    power_states: list[PowerState] = Field(default_factory=list, description="PS0, PS1, ... (NVMe)")
    aspm_support: list[Literal["l1", "l1.2"]] = Field(
        default_factory=list, description="PCIe ASPM link states the drive supports (lspci LnkCap / L1SubCap); empty: none known"
    )
    endurance_dwpd: float | None = Field(default=None, gt=0)
    warranty_years: float = Field(default=5.0, gt=0)
    price_usd_per_TB: float | None = Field(default=None, gt=0)
    # ---- optional physics fields (defaults reasoned in the descriptions)
    over_provisioning: float | None = Field(
        default=None,
        gt=0,
        le=2,
        description="spare NAND / user capacity; None: derived from the datasheet's 4 KiB random-write and "
        "128 KiB sequential-write figures (models.ssd.over_provisioning_of)",
    )
    indirection_unit_bytes: float = Field(
        default=4096,
        ge=512,
        description="FTL mapping granule; writes smaller than it are read-modify-written.  Large QLC/TLC "
        "drives use 16 KiB (S10: 6600 ION IU=16K; 6550 DWPD 1.0 at 16K random vs 0.25 at 4K)",
    )
    slc_cache_max_fraction: float = Field(
        default=0.0, ge=0, le=1, description="largest dynamic pSLC cache as a share of user capacity (0: none)"
    )
    slc_write_MBps: float | None = Field(
        default=None, gt=0, description="host write rate while the pSLC cache has room (None: no cache)"
    )
    energy_per_io_uJ: float | None = Field(
        default=None, ge=0, description="energy per command beyond the per-byte energy (None: models.ssd_power.COMMAND_J)"
    )
    active_floor_W: float | None = Field(
        default=None, ge=0,
        description="power added while any command is outstanding (None: models.ssd_power's per-lane figure of the link)",
    )
    rand_read_iops_outstanding: float | None = Field(
        default=None, ge=1,
        description="requests in flight at which the datasheet 4 KiB random-read IOPS was measured (e.g. QD512); "
        "the ceiling is then solved from the concurrency law so the law passes through that point.  None: the "
        "datasheet figure is taken as the ceiling (saturated)",
    )
    endurance_rating_wa: float = Field(
        default=1.0, ge=1, description="WA of the workload the DWPD rating is quoted at (1 for 128K sequential)"
    )
    # ---- latency distribution (the per-request mode; the means above do not depend on these)
    read_latency_p99_us: float | None = Field(
        default=None, gt=0, description="datasheet QoS: 99 % of 4 KiB random reads at QD1 complete within this (None: not published)"
    )
    read_latency_p9999_us: float | None = Field(
        default=None, gt=0, description="datasheet QoS: 99.99 % of 4 KiB random reads at QD1 complete within this (None: not published)"
    )
    read_latency_sigma: float | None = Field(
        default=None, ge=0, le=3,
        description="log standard deviation of a read's flash-unit time (lognormal, mean kept); `iowatt calibrate` fits it "
        "from fio clat histograms.  None: from the QoS figures, else simulator.per_request's assumed default",
    )
    write_latency_sigma: float | None = Field(
        default=None, ge=0, le=3,
        description="log standard deviation of a write's acknowledgement latency (lognormal, mean kept); fitted like "
        "read_latency_sigma.  None: simulator.per_request's assumed default",
    )

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

    @property
    def rand_read_ceiling_iops(self) -> float:
        """4 KiB random-read ceiling C.  A datasheet figure X measured with N requests in flight lies on the
        concurrency law X = N / R(N; L0, 1 / C) (module docstring), solved for C (ceiling_through_point);
        when L0 >= N / X the point cannot lie on the law and the figure itself is taken as the ceiling."""
        n = self.rand_read_iops_outstanding
        if n is None or n <= 1:
            return self.rand_read_iops
        return ceiling_through_point(self.rand_read_iops, n, self.read_latency_us * 1e-6)


@lru_cache(maxsize=1024)
def ceiling_through_point(iops: float, outstanding: float, l0_s: float) -> float:
    """The ceiling C whose concurrency law passes through `iops` at `outstanding` requests in flight.

    With whole units (d = 0) the law is N / (L0 + (N - 1) / C), so C0 = (N - 1) / (N / X - L0); a fixed delay
    d > 0 only lets the law run faster (less of L0 queues), so the exact C lies in [X, C0]: bisection."""
    room = outstanding / iops - l0_s
    if room <= 0.0:
        return iops
    high = max(iops, (outstanding - 1.0) / room)
    low = iops

    def rate(ceiling: float) -> float:
        return outstanding / unit_mva.latency_s(l0_s, 1.0 / ceiling, outstanding)

    if rate(high) <= iops * (1.0 + 1e-12):
        return high
    for _ in range(200):
        mid = 0.5 * (low + high)
        if rate(mid) < iops:
            low = mid
        else:
            high = mid
        if high - low <= 1e-13 * high:
            break
    return 0.5 * (low + high)


# ---------------------------------------------------------------- block-size law


def two_point_fit(bandwidth_Bps: float, iops_4k: float) -> tuple[float, float]:
    """(t_fe seconds per request, X bytes/s) through the 4 KiB IOPS and 128 KiB bandwidth points."""
    gap = _B128K / bandwidth_Bps - 1.0 / iops_4k
    if gap <= 0.0:  # 4 KiB IOPS beyond what the bandwidth allows at 128 KiB: no command cost visible
        return 0.0, bandwidth_Bps
    x = (_B128K - _B4K) / gap
    t_fe = 1.0 / iops_4k - _B4K / x
    if t_fe < 0.0:
        return 0.0, bandwidth_Bps
    return t_fe, x


def front_end_seconds(spec: SSDSpec) -> float:
    """Per-command controller cost, fitted on the read datasheet points."""
    return two_point_fit(spec.seq_read_MBps * 1e6, spec.rand_read_ceiling_iops)[0]


def read_stream_Bps(spec: SSDSpec) -> float:
    return two_point_fit(spec.seq_read_MBps * 1e6, spec.rand_read_ceiling_iops)[1]


def write_stream_Bps(spec: SSDSpec) -> float:
    """Internal sequential program rate X_w (host bytes/s at WA 1), through the 128 KiB write point."""
    t_fe = front_end_seconds(spec)
    per_byte = 1.0 / (spec.seq_write_MBps * 1e6) - t_fe / _B128K
    if per_byte <= 0.0:
        return spec.seq_write_MBps * 1e6
    return 1.0 / per_byte


def iu_factor(spec: SSDSpec, block_bytes: float) -> float:
    return max(1.0, spec.indirection_unit_bytes / block_bytes)


# Spare when the datasheet random-write point is not garbage-collection bound (its WA at 4 KiB is no more than
# the read-modify-write).
DEFAULT_OVER_PROVISIONING = assumed_constant(
    "models.ssd.default_over_provisioning", 0.12, low=0.075, high=0.145,
    note="read-intensive drives sell decimal TB on binary-sized NAND (61.44 TB on 64 TiB = 14.5 % raw), less ~2.5 % "
    "for parity and bad blocks",
    range_note="low: 9.95 % raw, a round-TB capacity on binary NAND (4 TB on 4 TiB), less the same 2.5 %; high: "
    "the whole 14.5 % of the x.x4/x.x8-TB capacities (3.84 TB on 4 TiB) with nothing set aside")


def random_write_wa_4k(spec: SSDSpec) -> float:
    """NAND bytes per host byte the datasheet 4 KiB random-write IOPS implies at the program rate X_w."""
    t_fe = front_end_seconds(spec)
    return max(1.0, (1.0 / spec.rand_write_iops - t_fe) * write_stream_Bps(spec) / _B4K)


def over_provisioning_of(spec: SSDSpec) -> float:
    """Spare NAND / user capacity: the spec's, or the datasheet's (module docstring)."""
    if spec.over_provisioning is not None:
        return spec.over_provisioning
    gc = random_write_wa_4k(spec) / iu_factor(spec, _B4K)
    if gc <= 1.0 + 1e-6:
        return constant(DEFAULT_OVER_PROVISIONING.name)  # read here, not inside the cache below
    return _spare_for_greedy_wa(gc)


@cache
def _spare_for_greedy_wa(wa: float) -> float:
    u = min(nand.greedy_utilisation(wa), 1.0 - 1e-6)  # closed form: no scipy.optimize (~0.6 s) at CLI start
    return 1.0 / u - 1.0


def write_amplification(
    spec: SSDSpec, block_bytes: float, pattern: Pattern = "seq", overwrite: bool = True, fill: float = 1.0
) -> float:
    """NAND bytes per host byte of one stream alone on a drive `fill` full, in steady state (module docstring)."""
    if pattern == "seq":
        return 1.0
    if pattern != "rand":
        raise ValueError(f"pattern must be 'seq' or 'rand', found {pattern!r}")
    iu = iu_factor(spec, block_bytes)
    if not overwrite:
        return iu
    return iu * nand.steady_state_wa(fill, over_provisioning_of(spec))


def read_seconds_per_byte(spec: SSDSpec, block_bytes: float, pattern: Pattern = "rand") -> float:
    del pattern  # flash reads have no seek
    t_fe, x = two_point_fit(spec.seq_read_MBps * 1e6, spec.rand_read_ceiling_iops)
    return 1.0 / x + t_fe / block_bytes


def write_seconds_per_byte_at(spec: SSDSpec, block_bytes: float, wa: float) -> float:
    """Drive service seconds per host byte written when each host byte programs `wa` NAND bytes (no pSLC)."""
    return front_end_seconds(spec) / block_bytes + wa / write_stream_Bps(spec)


def write_seconds_per_byte(
    spec: SSDSpec, block_bytes: float, pattern: Pattern = "seq", overwrite: bool = True, fill: float = 1.0
) -> float:
    """Drive service seconds per host byte written, at the closed-form steady-state WA (native program rate)."""
    return write_seconds_per_byte_at(spec, block_bytes, write_amplification(spec, block_bytes, pattern, overwrite, fill))


def read_throughput_Bps(spec: SSDSpec, block_bytes: float, pattern: Pattern = "rand") -> float:
    return min(1.0 / read_seconds_per_byte(spec, block_bytes, pattern), link_payload_Bps(spec.link))


def write_throughput_Bps(
    spec: SSDSpec, block_bytes: float, pattern: Pattern = "seq", overwrite: bool = True, fill: float = 1.0
) -> float:
    return min(
        1.0 / write_seconds_per_byte(spec, block_bytes, pattern, overwrite, fill), link_payload_Bps(spec.link)
    )


# ---------------------------------------------------------------- queue depth and mixes


def unloaded_latency_s(spec: SSDSpec, block_bytes: float, write: bool) -> float:
    """QD1 latency: the datasheet 4 KiB latency plus the extra transfer of a larger block."""
    if write:
        return spec.write_latency_us * 1e-6 + max(0.0, block_bytes - _B4K) / write_stream_Bps(spec)
    return spec.read_latency_us * 1e-6 + max(0.0, block_bytes - _B4K) / read_stream_Bps(spec)


def mixed_seconds_per_byte(
    spec: SSDSpec,
    block_bytes: float,
    read_share: float,
    pattern: Pattern = "rand",
    overwrite: bool = True,
    fill: float = 1.0,
) -> float:
    """Shared service time of a read/write mix (read_share of the bytes are reads)."""
    if not 0.0 <= read_share <= 1.0:
        raise ValueError(f"read share must be in [0, 1], found {read_share!r}")
    t_r = read_seconds_per_byte(spec, block_bytes, pattern)
    t_w = write_seconds_per_byte(spec, block_bytes, pattern, overwrite, fill)
    link = link_payload_Bps(spec.link)
    # each link direction is separate: the mix is also bounded by the busier direction
    per_byte = read_share * t_r + (1.0 - read_share) * t_w
    return max(per_byte, read_share / link, (1.0 - read_share) / link)


def flash_units(spec: SSDSpec, block_bytes: float) -> float:
    """c, the flash units reads of `block_bytes` spread over: L0 / S of the read law at that block size
    (c = L0 x C units by Little's law, module docstring; models.unit_mva for a fractional c)."""
    return unloaded_latency_s(spec, block_bytes, False) / read_queue_seconds(spec, block_bytes, 1.0)


def read_units(spec: SSDSpec, block_bytes: float, read_share: float) -> float | None:
    """The units a job's law counts: the reads' flash units when it reads (its writes are then a delay), else
    None (writes alone: c = L0 / S of the writes, which queue only on a spec with writes_queue)."""
    return flash_units(spec, block_bytes) if read_share > 0.0 else None


def loaded_latency_s(l0_s: float, service_s: float, outstanding: float, units: float | None = None) -> float:
    """Mean latency with `outstanding` requests on c balanced units (module docstring; models.unit_mva).

    R(N) = L0 + (N - 1) x S when c = L0 / S is whole; otherwise the exact MVA of floor(c) units and a
    partial one (Reiser & Lavenberg 1980).  S = 1 / C is the drive's time per request at its ceiling;
    `units` = c of the reads (a mix's writes add a delay, not units; None: L0 / S)."""
    return unit_mva.latency_s(l0_s, service_s, outstanding, units)


def concurrency_throughput(l0_s: float, service_s: float, outstanding: float, units: float | None = None) -> float:
    """Requests per second X(N) = N / R(N), bounded by the ceiling 1 / S (the min only binds if L0 < S)."""
    x = outstanding / loaded_latency_s(l0_s, service_s, outstanding, units)
    return x if service_s <= 0 else min(x, 1.0 / service_s)


def closed_loop(
    spec: SSDSpec,
    block_bytes: float,
    outstanding: float,
    read_share: float,
    pattern: Pattern = "rand",
    overwrite: bool = True,
    fill: float = 1.0,
) -> tuple[float, float]:
    """(throughput bytes/s, mean latency s) of `outstanding` = iodepth x numjobs requests in flight.

    X = min(N_dev / (L0 + (N_dev - 1) S), ceiling) requests per second, N_dev = min(N, queue limit),
    S = read share x read seconds per request (read_queue_seconds; plus the write share's program time when
    the spec says writes queue), the ceiling the block-size law of
    the mix; R = N / X (Little's law).  See the module docstring."""
    if outstanding < 1:
        raise ValueError(f"outstanding requests must be >= 1, found {outstanding!r}")
    ceiling_ops = 1.0 / (mixed_seconds_per_byte(spec, block_bytes, read_share, pattern, overwrite, fill) * block_bytes)
    l0 = read_share * unloaded_latency_s(spec, block_bytes, False) + (1.0 - read_share) * unloaded_latency_s(
        spec, block_bytes, True
    )
    limit = device_queue_limit(spec.interface)
    in_device = outstanding if limit is None else min(outstanding, limit)
    queue_s = queue_seconds(spec, block_bytes, read_share, pattern, overwrite, fill)
    ops = min(concurrency_throughput(l0, queue_s, in_device, read_units(spec, block_bytes, read_share)), ceiling_ops)
    return ops * block_bytes, outstanding / ops


def read_queue_seconds(spec: SSDSpec, block_bytes: float, read_share: float, pattern: Pattern = "rand") -> float:
    """S of the concurrency law: flash-unit seconds per request that queue behind other requests.

    Only reads queue on the units: a write is acknowledged once it is in the drive's power-protected
    buffer (hence QD1 write latencies of 15-21 us, S04/S11) and programmed later, so writes see the
    program-rate ceiling (the asymptotic bound) but no unit collisions.  The time per read is that of the
    drive's read ceiling, the block-size law or the PCIe link where the link is slower (S = 1 / C)."""
    return read_share * block_bytes / read_throughput_Bps(spec, block_bytes, pattern)


def queue_seconds(
    spec: SSDSpec, block_bytes: float, read_share: float, pattern: Pattern = "rand", overwrite: bool = True, fill: float = 1.0
) -> float:
    """S of the concurrency law for a read/write mix: the reads' unit time, plus the writes' program time
    when the spec says writes queue too (SSDSpec.writes_queue: a virtual disk or a drive without a
    power-protected buffer, as `iowatt calibrate` decides from a fio bundle).  The one place S is made:
    closed_loop, the simulator's volumes and the calibration's predictor all call it."""
    s = read_queue_seconds(spec, block_bytes, read_share, pattern)
    if spec.writes_queue and read_share < 1.0:
        s += (1.0 - read_share) * write_seconds_per_byte(spec, block_bytes, pattern, overwrite, fill) * block_bytes
    return s
