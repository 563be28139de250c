"""The drive law the fit and the check use: models.ssd's own functions, combined by a closed-loop queue law.

Nothing here re-derives device physics.  For a job of block size b, read
share f (of bytes) and N = iodepth x numjobs requests in flight, on an SSDSpec:

    D(b) = b x models.ssd.mixed_seconds_per_byte(spec, b, f, pattern, overwrite=False)
           service seconds per request at the drive's ceiling (block-size law, read/write
           interference and the link, exactly as the simulator's constraints use them)
    L0(b) = f x unloaded_latency_s(spec, b, read) + (1 - f) x unloaded_latency_s(spec, b, write)
           the QD1 latency (datasheet 4 KiB latency + extra transfer)

Two queue laws, both exact results for closed queueing networks (Lazowska et
al., "Quantitative System Performance", 1984, ch. 5, asymptotic and balanced
bounds):

- ``parallel`` (the simulator's law, models.ssd.closed_loop): the drive serves
  requests concurrently until its ceiling, X = min(N / L0, 1 / D).  Right for
  a flash drive with many dies: latency stays at L0 until the drive saturates.
- ``balanced``: the request crosses a chain of L0 / D stages that each queue
  (guest block layer, virtio ring, hypervisor I/O thread, host device), so
  every extra request in flight adds one bottleneck service time to the
  response time: R(N) = L0 + (N - 1) x D, X = N / R(N) (the exact solution of
  a balanced network).  A virtual disk behaves like this: measured on this
  project's VM (virtio, /dev/vda), 4 KiB random-read latency rose
  67, 83, 106, 162, 251, 476, 893 us at QD 1..64, i.e. 67 us + (N - 1) x 13.5 us
  within 8 % (bundle notes in docs/calibration.md).

Both laws share the same asymptotes (1/L0 at N = 1 and 1/D as N grows), so a
profile's parameters mean the same thing under either; the fit picks the law
with the lower weighted cost and records it in the profile.

Writes to fio's test file are modelled fresh-out-of-box (overwrite=False):
a test file laid out moments before is not the steady-state garbage-collected
drive that rand_write_iops describes, so that field is not informed by a
fio bundle and keeps the base device's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from models import ssd as ssd_model
from models.ssd import SSDSpec

QueueLaw = Literal["parallel", "balanced"]
LAWS: tuple[QueueLaw, ...] = ("parallel", "balanced")

# The SSDSpec fields a fio bundle informs, per direction (names as in SSDSpec).
FIELDS = {
    "read": ("seq_read_MBps", "rand_read_iops", "read_latency_us"),
    "write": ("seq_write_MBps", "write_latency_us"),
}
ALL_FIELDS = FIELDS["read"] + FIELDS["write"]
OVERWRITE = False  # fio writes to a test file laid out moments before: fresh-out-of-box, no steady-state GC (module docstring)
FILL = 0.0


@dataclass(frozen=True)
class Job:
    id: str
    rw: str
    bs: float
    iodepth: int
    numjobs: int
    read_fraction: float
    bw_Bps: float = 0.0  # measured (mean over runs)
    lat_us: float = 0.0
    spread: float = 0.0  # run-to-run relative spread of bw
    runs: int = 1
    read_bw_Bps: float = 0.0
    write_bw_Bps: float = 0.0
    power: dict[str, float] | None = None

    @property
    def inflight(self) -> int:
        return self.iodepth * self.numjobs

    @property
    def pattern(self) -> ssd_model.Pattern:
        return "seq" if self.rw in ("read", "write", "rw", "readwrite") else "rand"


def as_spec(values: SSDSpec | dict[str, Any]) -> SSDSpec:
    return values if isinstance(values, SSDSpec) else SSDSpec.model_validate(values)


def service_and_latency(spec: SSDSpec, job: Job) -> tuple[float, float]:
    """(D seconds per request at the ceiling, L0 seconds at QD1) from models.ssd."""
    f = job.read_fraction
    d = job.bs * ssd_model.mixed_seconds_per_byte(spec, job.bs, f, job.pattern, overwrite=OVERWRITE, fill=FILL)
    l0 = 0.0
    if f > 0:
        l0 += f * ssd_model.unloaded_latency_s(spec, job.bs, False)
    if f < 1:
        l0 += (1 - f) * ssd_model.unloaded_latency_s(spec, job.bs, True)
    return d, max(l0, d)  # a request cannot finish faster than its own service


def predict(values: SSDSpec | dict[str, Any], job: Job, law: QueueLaw = "parallel") -> dict[str, Any]:
    """Throughput (B/s), IOPS, mean latency (us) and the bound of one fio job."""
    spec = as_spec(values)
    n = job.inflight
    d, l0 = service_and_latency(spec, job)
    if law == "parallel":
        bw, latency_s = ssd_model.closed_loop(spec, job.bs, n, job.read_fraction, job.pattern, overwrite=OVERWRITE, fill=FILL)
        iops = bw / job.bs
        bound = "ceiling" if 1.0 / d <= n / l0 else "queue-depth"
    elif law == "balanced":
        latency_s = l0 + (n - 1) * d
        iops = n / latency_s
        bound = "ceiling" if (n - 1) * d >= l0 else "queue-depth"
    else:
        raise ValueError(f"queue law: expected one of {', '.join(LAWS)}, found {law!r}")
    return {"bw_Bps": iops * job.bs, "iops": iops, "lat_us": latency_s * 1e6, "bound": bound}
