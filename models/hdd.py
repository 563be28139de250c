"""Hard disk drive: specification and the mechanical laws that turn it into service times.

Positions are measured as a fraction of the full stroke, x in [0, 1], from the
outer diameter (OD, x = 0) to the inner diameter (ID, x = 1).

Seek curve (Ruemmler & Wilkes, "An introduction to disk drive modeling",
IEEE Computer 1994): for a seek over a fraction d of the stroke,
    seek(d) = a + b * sqrt(d)           for 0 < d <= d_c   (arm accelerates, coasts, settles)
    seek(d) = c + e * d                 for d > d_c        (arm reaches full speed: linear)
    seek(0) = 0                                            (same cylinder)
with a = the track-to-track seek, and c, e chosen so value and slope match at
d_c.  The one free parameter b is fitted so that the mean seek over a uniform
pair of positions equals the datasheet average seek.  For two independent
uniform positions the seek distance has density 2(1 - d), so
    avg = integral_0^1 seek(d) 2(1 - d) dd = a + b K(d_c)
with K in closed form (below).  Datasheet points: track-to-track and average
seek (WD HC310, docs/sources.md H01; HGST 7K4000 SAS, H02).

Short-stroking: the data occupy the outer `span` share of the capacity.
Zoned recording keeps linear bit density roughly constant, so bytes per track
and the media rate scale with radius: r(x) = 1 - (1 - rho) x (r in units of
the OD radius, rho = ID/OD rate ratio).  The stroke fraction holding the
outer share s of capacity solves  (x - (1 - rho) x^2 / 2) / (1 - (1 - rho)/2) = s.

Rotational latency: half a revolution on average, 30 / RPM seconds.

Media rate: a track takes one revolution whatever its radius, so streaming over
stroke [0, X] moves bytes proportional to integral r dx in time proportional
to X: the mean sequential rate is rate_OD * (integral_0^X r dx) / X.  The mean
per-byte transfer time of random requests placed uniformly over those bytes is
the reciprocal of the same number.

Command reordering with n queued requests:
  * elevator (C-LOOK): the head and the n requests are n + 1 uniform points on
    the span; the gap from the head to the next request in the sweep
    direction is a spacing of n + 1 uniform points, Beta(1, n + 1), with
    density (n + 1)(1 - u)^n and mean 1/(n + 2) of the span.  At n = 1 this is
    the 2(1 - d) density of a random seek, so QD1 needs no special case.
    Rotational latency stays half a revolution.
  * SATF / rotational position ordering (what SAS TCQ and SATA NCQ firmware
    does; Jacobson & Wilkes 1991, Worthington, Ganger & Patt 1994): each
    candidate costs seek(D_i) + R_i with D_i ~ 2(1 - d) over the span and R_i
    uniform over one revolution after the seek; the drive serves the cheapest
    of n.  The expected minimum of n independent positioning times is
    integral_0^inf (1 - F(t))^n dt, computed by quadrature.  At n = 1 it equals
    mean seek + half a revolution.
  * fcfs: no reordering.
  * rpo (what the catalog drives use): real firmware rotational position
    ordering achieves only part of the ideal SATF cut in positioning time,
        pos_rpo(n) = pos(1) - eta (pos(1) - pos_satf(n)),   0 < eta <= 1,
    because it must plan with a guard band against seek-time variance (a
    command predicted to arrive just in time is scheduled a revolution late),
    and because the queue left after each pick is biased toward expensive
    commands (Jacobson & Wilkes 1991; Worthington, Ganger & Patt 1994 found
    SATF gains well below the independent-candidates bound).  eta is the
    catalog's `reorder_efficiency`, calibrated (see models/catalog/hdd.yaml).
All reordering laws are monotone non-increasing in n.

Throughput and latency at a queue depth (Little's law): one actuator serves
one command at a time, so with n commands always outstanding
    IOPS = 1 / service(n),   latency = n / IOPS = n x service(n).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from iowatt.models.links import LinkSpec, link_payload_Bps
from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:
    import numpy as np

Scheduling = Literal["fcfs", "elevator", "satf", "rpo"]
Access = Literal["random", "sequential"]


class HDDSpec(BaseModel):
    """A hard disk as the catalog describes it.  Units are in the field names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str = ""
    interface: Literal["sas", "sata"] = "sas"
    capacity_TB: float = Field(gt=0, description="user capacity, decimal TB")
    link: LinkSpec
    rpm: float = Field(gt=0, description="spindle speed, revolutions per minute")
    track_to_track_seek_ms: float = Field(gt=0, description="single-track (adjacent cylinder) seek")
    avg_seek_read_ms: float = Field(gt=0, description="datasheet average read seek (uniform random positions)")
    avg_seek_write_ms: float = Field(gt=0, description="datasheet average write seek (longer settle)")
    seek_crossover_fraction: float = Field(
        default=0.2, gt=0, lt=1, description="stroke fraction where the seek curve turns from sqrt to linear"
    )
    outer_transfer_MBps: float = Field(gt=0, description="media rate at the outer diameter, MB/s")
    inner_outer_ratio: float = Field(default=0.5, gt=0, le=1, description="ID / OD media rate (zoned recording)")
    command_overhead_ms: float = Field(default=0.1, ge=0, description="controller time per command")
    scheduling: Scheduling = Field(default="satf", description="how the drive reorders queued commands")
    reorder_efficiency: float = Field(
        default=1.0, gt=0, le=1, description="share of the ideal SATF positioning cut that firmware reordering achieves (scheduling rpo)"
    )
    idle_W: float = Field(ge=0, description="spinning, heads loaded, no commands")
    random_W: float = Field(gt=0, description="average power while seeking continuously (random I/O)")
    sequential_W: float = Field(gt=0, description="average power while streaming (sequential I/O)")

    @model_validator(mode="after")
    def _consistent(self) -> HDDSpec:
        if self.random_W < self.idle_W or self.sequential_W < self.idle_W:
            raise ValueError(
                f"active power must be >= idle power ({self.idle_W} W), found random {self.random_W} W, "
                f"sequential {self.sequential_W} W"
            )
        if self.avg_seek_read_ms <= self.track_to_track_seek_ms:
            raise ValueError("the average seek must exceed the track-to-track seek")
        return self

    @property
    def capacity_bytes(self) -> float:
        return self.capacity_TB * 1e12




# ----------------------------------------------------------------------------- seek curve


def _k(dc: float) -> float:
    """avg seek = a + b K(dc): the closed-form integral of the b-part of the curve against 2(1-d)."""
    s = math.sqrt(dc)
    # integral_0^dc sqrt(d) 2(1-d) dd = 2 (2/3 dc^1.5 - 2/5 dc^2.5)
    short = 2.0 * (2.0 / 3.0 * dc**1.5 - 2.0 / 5.0 * dc**2.5)
    # linear part per unit b: c' + e' d with c' = s/2, e' = 1/(2 s)
    # integral_dc^1 2(1-d) dd = (1-dc)^2 ; integral_dc^1 2 d (1-d) dd = (1 - dc^2) - 2/3 (1 - dc^3)
    long = (s / 2.0) * (1.0 - dc) ** 2 + (1.0 / (2.0 * s)) * ((1.0 - dc**2) - 2.0 / 3.0 * (1.0 - dc**3))
    return short + long


def seek_coefficients(spec: HDDSpec, write: bool = False) -> tuple[float, float, float, float, float]:
    """(a, b, c, e, d_c) in seconds for the read (or write) seek curve.

    Writes settle longer: the write curve is the read curve plus the constant
    difference of the datasheet averages (H01: 8.2 vs 7.4 ms), for d > 0.
    """
    a = spec.track_to_track_seek_ms / 1e3
    dc = spec.seek_crossover_fraction
    avg = spec.avg_seek_read_ms / 1e3
    b = (avg - a) / _k(dc)
    if write:
        a += (spec.avg_seek_write_ms - spec.avg_seek_read_ms) / 1e3
    c = a + b * math.sqrt(dc) / 2.0
    e = b / (2.0 * math.sqrt(dc))
    return a, b, c, e, dc


def seek_seconds(spec: HDDSpec, distance: float | np.ndarray, write: bool = False) -> np.ndarray:
    """Seek time for a move over `distance` (fraction of the full stroke, 0..1)."""
    import numpy as np
    a, b, c, e, dc = seek_coefficients(spec, write)
    d = np.clip(np.asarray(distance, dtype=float), 0.0, 1.0)
    t = np.where(d <= dc, a + b * np.sqrt(d), c + e * d)
    return np.where(d > 0.0, t, 0.0)


def rotational_latency_seconds(spec: HDDSpec) -> float:
    """Mean rotational latency: half a revolution, 30 / RPM."""
    return 30.0 / spec.rpm


def revolution_seconds(spec: HDDSpec) -> float:
    return 60.0 / spec.rpm


# ----------------------------------------------------------------------------- zones, short-stroking


def stroke_fraction(spec: HDDSpec, span_fraction: float) -> float:
    """Stroke share X holding the outer `span_fraction` of the capacity (zoned recording)."""
    if not 0.0 < span_fraction <= 1.0:
        raise ValueError(f"span_fraction must be in (0, 1], found {span_fraction}")
    k = 1.0 - spec.inner_outer_ratio
    if k == 0.0:
        return span_fraction
    total = 1.0 - k / 2.0
    # k/2 X^2 - X + s total = 0, smaller root
    return (1.0 - math.sqrt(max(0.0, 1.0 - 2.0 * k * span_fraction * total))) / k


def _cluster_positions(spec: HDDSpec, span_fraction: float, clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Stroke positions (mid, width) of `clusters` equal pieces holding the data share `span_fraction`,
    piece i at the start of the i-th 1/clusters of the capacity (an allocator that spreads directories
    over allocation groups: XFS inode64 rotates new directories over its AGs and keeps files beside
    their directory, xfs_ialloc_ag_select)."""
    import numpy as np
    k = int(clusters)
    starts = np.arange(k) / k
    piece = span_fraction / k
    lo = np.array([stroke_fraction(spec, max(c, 1e-12)) if c > 0 else 0.0 for c in starts])
    hi = np.array([stroke_fraction(spec, min(1.0, c + piece)) for c in starts])
    return (lo + hi) / 2.0, hi - lo


def media_rate_Bps(spec: HDDSpec, span_fraction: float = 1.0, clusters: int = 1) -> float:
    """Mean media rate over the data: the outer `span_fraction` of the capacity (sequential, or per byte
    of random), or `clusters` pieces spread over the disk (rate proportional to radius at each piece)."""
    import numpy as np
    k = 1.0 - spec.inner_outer_ratio
    if clusters > 1:
        mids, _ = _cluster_positions(spec, span_fraction, clusters)
        return spec.outer_transfer_MBps * 1e6 * float(np.mean(1.0 - k * mids))
    x = stroke_fraction(spec, span_fraction)
    mean_radius = 1.0 - k * x / 2.0
    return spec.outer_transfer_MBps * 1e6 * mean_radius


# ----------------------------------------------------------------------------- reordering

_GRID = 2001


def _beta_mean_seek(spec: HDDSpec, x_span: float, n: int, write: bool) -> float:
    """E[seek(x_span * U)] with U ~ Beta(1, n + 1): density (n + 1)(1 - u)^n."""
    import numpy as np
    u = np.linspace(0.0, 1.0, _GRID)
    w = (n + 1) * (1.0 - u) ** n
    return float(np.trapezoid(seek_seconds(spec, x_span * u, write) * w, u))


def _distance_law(spec: HDDSpec, span_fraction: float, clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Seek distances d (stroke fractions) between two uniform data positions, with probability weights.

    One contiguous span X: d = X u, density 2 (1 - u).  `clusters` pieces: the same cluster with
    probability 1/k (d = width u, density 2 (1 - u)); another cluster j with probability 1/k each,
    d = |mid_i - mid_j| (the pieces' widths are small beside their spacing)."""
    import numpy as np
    u = np.linspace(0.0, 1.0, _GRID)
    tri = 2.0 * (1.0 - u)
    tri = tri * np.gradient(u)  # quadrature weights of the density 2 (1 - u)
    tri /= tri.sum()
    if clusters <= 1:
        return stroke_fraction(spec, span_fraction) * u, tri
    k = int(clusters)
    mids, widths = _cluster_positions(spec, span_fraction, k)
    same_d = np.concatenate([wd * u for wd in widths])
    same_w = np.tile(tri, k) / (k * k)
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    off = i != j
    cross_d = np.abs(mids[i[off]] - mids[j[off]])
    cross_w = np.full(cross_d.size, 1.0 / (k * k))
    return np.concatenate([same_d, cross_d]), np.concatenate([same_w, cross_w])


@lru_cache(maxsize=4096)
def _satf_general(spec: HDDSpec, span_fraction: float, clusters: int, n: int, write: bool) -> float:
    """E[min over n candidates of seek(D) + R] for the distance law of a clustered layout, R ~ U(0, T_rev)."""
    import numpy as np
    rev = revolution_seconds(spec)
    d, w = _distance_law(spec, span_fraction, clusters)
    s = seek_seconds(spec, d, write)
    t = np.linspace(0.0, float(s.max()) + rev, _GRID)
    cdf = np.clip((t[:, None] - s[None, :]) / rev, 0.0, 1.0) @ w
    survival = np.clip(1.0 - cdf, 0.0, 1.0) ** n
    return float(np.trapezoid(survival, t))


def _satf_positioning(spec: HDDSpec, x_span: float, n: int, write: bool) -> float:
    """E[min over n candidates of seek(D) + R], D ~ 2(1-u) on the span, R ~ U(0, T_rev)."""
    return _min_cost_moments(spec, x_span, n, write)[0]


def positioning_seconds(
    spec: HDDSpec,
    queue_depth: int = 1,
    span_fraction: float = 1.0,
    write: bool = False,
    scheduling: Scheduling | None = None,
    clusters: int = 1,
) -> float:
    """Mean seek + rotational latency per command when `queue_depth` commands are queued.

    `clusters` > 1: the data are that many pieces spread over the disk (see _cluster_positions);
    elevator ordering is then not modelled (ValueError)."""
    n = max(1, int(queue_depth))
    policy = scheduling or spec.scheduling
    if clusters > 1:
        if policy == "elevator":
            raise ValueError("elevator ordering over a clustered layout is not modelled; use fcfs, satf or rpo")
        qd1 = _satf_general(spec, span_fraction, int(clusters), 1, write)
        if policy == "fcfs":
            return qd1
        ideal = _satf_general(spec, span_fraction, int(clusters), n, write)
        return ideal if policy == "satf" else qd1 - spec.reorder_efficiency * (qd1 - ideal)
    x = stroke_fraction(spec, span_fraction)
    if policy == "satf":
        return _satf_positioning(spec, x, n, write)
    if policy == "rpo":
        qd1 = _satf_positioning(spec, x, 1, write)
        return qd1 - spec.reorder_efficiency * (qd1 - _satf_positioning(spec, x, n, write))
    seek = _beta_mean_seek(spec, x, n if policy == "elevator" else 1, write)
    return seek + rotational_latency_seconds(spec)


def mean_seek_seconds(spec: HDDSpec, span_fraction: float = 1.0, write: bool = False, clusters: int = 1) -> float:
    """Mean seek between two uniform positions within the data (no reordering)."""
    if clusters > 1:
        d, w = _distance_law(spec, span_fraction, clusters)
        return float(seek_seconds(spec, d, write) @ w)
    return _beta_mean_seek(spec, stroke_fraction(spec, span_fraction), 1, write)


# ----------------------------------------------------------------------------- service time, QD


def random_service_seconds(
    spec: HDDSpec,
    block_bytes: float,
    queue_depth: int = 1,
    span_fraction: float = 1.0,
    write: bool = False,
    scheduling: Scheduling | None = None,
    clusters: int = 1,
) -> float:
    """Time the actuator is busy for one random command of `block_bytes`."""
    transfer = block_bytes / min(media_rate_Bps(spec, span_fraction, clusters), link_payload_Bps(spec.link))
    positioning = positioning_seconds(spec, queue_depth, span_fraction, write, scheduling, clusters)
    return spec.command_overhead_ms / 1e3 + positioning + transfer


def random_read_service_seconds(
    spec: HDDSpec, block_bytes: float, qd: int = 1, span_fraction: float = 1.0, scheduling: Scheduling | None = None, clusters: int = 1
) -> float:
    return random_service_seconds(spec, block_bytes, qd, span_fraction, False, scheduling, clusters)


def sequential_seconds_per_byte(spec: HDDSpec, span_fraction: float = 1.0, clusters: int = 1) -> float:
    """Streaming: no seeks or rotational waits (track skew and read-ahead hide them)."""
    return 1.0 / min(media_rate_Bps(spec, span_fraction, clusters), link_payload_Bps(spec.link))


def seconds_per_byte(
    spec: HDDSpec,
    block_bytes: float,
    access: Access = "random",
    queue_depth: int = 1,
    span_fraction: float = 1.0,
    write: bool = False,
    clusters: int = 1,
) -> float:
    if access == "sequential":
        return sequential_seconds_per_byte(spec, span_fraction, clusters)
    return random_service_seconds(spec, block_bytes, queue_depth, span_fraction, write, None, clusters) / block_bytes


def at_queue_depth(
    spec: HDDSpec,
    block_bytes: float,
    qd: int = 1,
    span_fraction: float = 1.0,
    write: bool = False,
    scheduling: Scheduling | None = None,
    clusters: int = 1,
) -> dict[str, float]:
    """Closed-loop random I/O at queue depth qd: IOPS, MB/s and mean latency (Little's law)."""
    service = random_service_seconds(spec, block_bytes, qd, span_fraction, write, scheduling, clusters)
    iops = 1.0 / service
    return {"iops": iops, "MBps": iops * block_bytes / 1e6, "latency_s": qd / iops, "service_s": service}


def active_watts(spec: HDDSpec, access: Access) -> float:
    return spec.random_W if access == "random" else spec.sequential_W


# ----------------------------------------------------------------------------- service-time spread


@lru_cache(maxsize=256)
def _positioning_cdf(spec: HDDSpec, x_span: float, write: bool) -> tuple[np.ndarray, np.ndarray]:
    """(t, F(t)) of one candidate's positioning seek(D) + R, D ~ 2(1-u) on the span, R ~ U(0, T_rev):
    F(t) = E_D[clip((t - seek(D)) / rev, 0, 1)]."""
    import numpy as np
    rev = revolution_seconds(spec)
    u = np.linspace(0.0, 1.0, _GRID)
    w = 2.0 * (1.0 - u)
    w /= np.trapezoid(w, u)
    s = seek_seconds(spec, x_span * u, write)
    t = np.linspace(0.0, float(s.max()) + rev, _GRID)
    return t, np.clip(np.trapezoid(np.clip((t[:, None] - s[None, :]) / rev, 0.0, 1.0) * w[None, :], u, axis=1), 0.0, 1.0)


@lru_cache(maxsize=4096)
def _min_cost_moments(spec: HDDSpec, x_span: float, n: int, write: bool) -> tuple[float, float]:
    """E[M], E[M^2] of M = the cheapest of n candidates (`_positioning_cdf`): E[M^k] = int_0^inf k t^(k-1) (1 - F(t))^n dt."""
    import numpy as np
    t, cdf = _positioning_cdf(spec, x_span, write)
    survival = (1.0 - cdf) ** n
    return float(np.trapezoid(survival, t)), float(np.trapezoid(2.0 * t * survival, t))


@lru_cache(maxsize=1024)
def slowest_positioning_seconds(spec: HDDSpec, pieces: int, span_fraction: float = 1.0, write: bool = False) -> float:
    """E[max of `pieces` independent one-candidate positionings] = int_0^inf 1 - F(t)^p dt: the slowest piece of a
    request striped over that many idle disks (each seeks and waits for its own sector; any reordering policy
    has one candidate at QD1).  Bounded by the longest seek plus a revolution, where a lognormal's max is not."""
    import numpy as np
    t, cdf = _positioning_cdf(spec, stroke_fraction(spec, span_fraction), write)
    return float(np.trapezoid(1.0 - cdf ** max(1, int(pieces)), t))


def positioning_variance_seconds2(spec: HDDSpec, queue_depth: int = 1, span_fraction: float = 1.0, write: bool = False) -> float:
    """Variance of one command's seek + rotational wait with `queue_depth` commands to pick from, as the
    per-request disk draws it (simulator.per_request.hdd): rpo serves the cheapest of n with probability
    eta = reorder_efficiency, else one candidate's cost (a mixture); satf the cheapest; fcfs one candidate;
    elevator a seek over span x Beta(1, n + 1) plus a uniform rotation.  The overhead and the transfer are
    fixed, so this is the service time's whole variance.  A disk's service is far less variable than an
    exponential one (squared coefficient of variation ~0.1 at QD1, not 1): seek + rotation are bounded."""
    import numpy as np
    n = max(1, int(queue_depth))
    x = stroke_fraction(spec, span_fraction)
    policy = spec.scheduling
    rev = revolution_seconds(spec)
    if policy == "elevator":
        uu = np.linspace(0.0, 1.0, _GRID)
        w = (n + 1) * (1.0 - uu) ** n
        seek = seek_seconds(spec, x * uu, write)
        m1, m2 = float(np.trapezoid(seek * w, uu)), float(np.trapezoid(seek**2 * w, uu))
        return max(0.0, m2 - m1 * m1) + rev * rev / 12.0
    one = _min_cost_moments(spec, x, 1, write)
    if policy == "fcfs" or n == 1:
        m1, m2 = one
    else:
        best = _min_cost_moments(spec, x, n, write)
        eta = 1.0 if policy == "satf" else spec.reorder_efficiency
        m1, m2 = eta * best[0] + (1.0 - eta) * one[0], eta * best[1] + (1.0 - eta) * one[1]
    return max(0.0, m2 - m1 * m1)


@lru_cache(maxsize=1024)
def positioning_quantiles(spec: HDDSpec, queue_depth: int = 1, span_fraction: float = 1.0, write: bool = False,
                          count: int = 64) -> tuple[float, ...]:
    """One command's seek + rotational wait with `queue_depth` commands to pick from, as the per-request disk draws
    it (the law `positioning_variance_seconds2` takes the moments of), given as its `count` quantiles at the
    midpoints (i + 1/2) / count, less their mean: the shape of the service about its mean, for a join's maximum
    (models.disk_join).  rpo: eta (1 - (1 - F)^n) + (1 - eta) F, F one candidate's law; elevator: a seek over
    span x Beta(1, n + 1) plus a uniform rotation."""
    import numpy as np
    n = max(1, int(queue_depth))
    x = stroke_fraction(spec, span_fraction)
    policy = spec.scheduling
    if policy == "elevator":
        rev = revolution_seconds(spec)
        u = np.linspace(0.0, 1.0, _GRID)
        w = (n + 1) * (1.0 - u) ** n
        w /= np.trapezoid(w, u)
        seek = seek_seconds(spec, x * u, write)
        t = np.linspace(0.0, float(seek.max()) + rev, _GRID)
        cdf = np.clip(np.trapezoid(np.clip((t[:, None] - seek[None, :]) / rev, 0.0, 1.0) * w[None, :], u, axis=1), 0.0, 1.0)
    else:
        t, one = _positioning_cdf(spec, x, write)
        eta = {"fcfs": 0.0, "satf": 1.0}.get(policy, spec.reorder_efficiency) if n > 1 else 0.0
        cdf = eta * (1.0 - (1.0 - one) ** n) + (1.0 - eta) * one
    cdf = np.maximum.accumulate(cdf)
    keep = np.concatenate([[True], np.diff(cdf) > 0.0])  # a strictly rising cdf to invert
    q = np.interp((np.arange(count) + 0.5) / count, cdf[keep], t[keep])
    return tuple(float(v) for v in q - q.mean())


# ----------------------------------------------------------------------------- positioning, cached by what it reads


def _per_geometry(positioning: Callable[[HDDSpec, float, int, bool], float]) -> Callable[[HDDSpec, float, int, bool], float]:
    """The positioning integral cached by what it reads of a drive, its seek curve and its revolution time, not by
    the whole spec: an uncertainty screen varies a drive's power, capacity or overhead one at a time, and each such
    draw is a new spec with the same integral (validate --uncertainty on the AMAX HDD rows spent ~80 % of its time
    recomputing it, issue 28's speed line).  Exact: a hit returns the value the same numbers gave."""
    cache: dict[tuple[float, ...], float] = {}

    def cached(spec: HDDSpec, x_span: float, n: int, write: bool) -> float:
        key = (*seek_coefficients(spec, write), revolution_seconds(spec), x_span, float(n))
        value = cache.get(key)
        if value is None:
            if len(cache) >= _GEOMETRY_CACHE_SIZE:
                cache.clear()
            value = cache[key] = positioning(spec, x_span, n, write)
        return value

    return cached


# entries kept before the cache starts over; a memory bound, not a model value (~100 bytes each)
_GEOMETRY_CACHE_SIZE = 4096
_satf_positioning = _per_geometry(_satf_positioning)
