"""The drive law the fit and the check use: models.ssd.closed_loop's law, with one switch for write queueing.

Nothing here re-derives device physics.  For a job of block size b, read
share f and N = iodepth x numjobs requests in flight, on an SSDSpec (every
term from models.ssd):

    C(b)  = 1 / (b x mixed_seconds_per_byte)       the ceiling (block-size law, interference, link)
    L0(b) = f x unloaded_latency_s(read) + (1 - f) x unloaded_latency_s(write)     the QD1 latency
    X(N)  = min(N' / (L0 + (N' - 1) S), C),  R = N / X,  N' = min(N, device queue limit)

the mean-value solution of a closed network of balanced queueing units
(models.ssd's docstring; Reiser & Lavenberg 1980), where S is the time per
request that queues behind other requests:

- ``writes_queue=False``: S = f x read seconds per request.  models.ssd's own
  law (closed_loop): an enterprise SSD acknowledges writes from its
  power-protected buffer, so only reads collide on flash units.
- ``writes_queue=True``: S = b x (f x read + (1 - f) x write seconds per byte),
  reads and writes alike.
  A virtual disk queues writes too: on this project's VM (virtio /dev/vda),
  4 KiB random writes at QD 1, 4, 16, 64 took 67, 97, 229, 681 us, i.e.
  67 us + (N - 1) x ~10 us, the same balanced growth as its reads
  (67 us + (N - 1) x 13.5 us, QD 1..64, within 8 %), where a buffered drive's
  latency would stay flat until the ceiling (docs/calibration.md).

The fit tries both and keeps the better (lower weighted cost); the profile
records the choice in SSDSpec.writes_queue, so the prediction is exactly
models.ssd.closed_loop on the profile's spec, the law `iowatt run` uses
(tests/test_calibration_fit.py, tests/test_calibration_profile.py and
tests/test_catalog_profile.py check it); `iowatt validate` prints that
prediction next to the fit's (simulator_MBps).

Writes to fio's test file are modelled fresh-out-of-box (overwrite=False):
a test file laid out moments before is not the steady-state garbage-collected
drive that rand_write_iops describes, so that field is not informed by a
fio bundle and keeps the base device's value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from iowatt.models import ssd as ssd_model
from iowatt.models.links import device_queue_limit
from iowatt.models.ssd import SSDSpec

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
    return SSDSpec.model_validate(values)  # a spec passes through as itself (pydantic keeps instances)


def service_and_latency(spec: SSDSpec, job: Job, writes_queue: bool = True) -> tuple[float, float, float]:
    """(seconds per request at the ceiling, S the seconds per request that queue, L0 seconds at QD1)."""
    f = job.read_fraction
    ceiling_s = job.bs * ssd_model.mixed_seconds_per_byte(spec, job.bs, f, job.pattern, overwrite=OVERWRITE, fill=FILL)
    # S: models.ssd.queue_seconds, the one place it is made, with the write-queueing switch under test
    queued = spec if spec.writes_queue == writes_queue else spec.model_copy(update={"writes_queue": writes_queue})
    queue_s = ssd_model.queue_seconds(queued, job.bs, f, job.pattern, OVERWRITE, FILL)
    l0 = f * ssd_model.unloaded_latency_s(spec, job.bs, False) + (1 - f) * ssd_model.unloaded_latency_s(spec, job.bs, True)
    return ceiling_s, queue_s, l0


def predict(values: SSDSpec | dict[str, Any], job: Job, writes_queue: bool = True) -> dict[str, Any]:
    """Throughput (B/s), IOPS, mean latency (us) and the binding term of one fio job (module docstring)."""
    spec = as_spec(values)
    ceiling_s, queue_s, l0 = service_and_latency(spec, job, writes_queue)
    limit = device_queue_limit(spec.interface)
    n = job.inflight
    in_device = n if limit is None else min(n, limit)
    concurrency = in_device / ssd_model.loaded_latency_s(l0, queue_s, in_device, ssd_model.read_units(spec, job.bs, job.read_fraction))
    ops = min(concurrency, 1.0 / ceiling_s)
    bound = "ceiling" if 1.0 / ceiling_s <= concurrency or (in_device - 1) * queue_s >= l0 else "queue-depth"
    return {"bw_Bps": ops * job.bs, "iops": ops, "lat_us": n / ops * 1e6, "bound": bound}


def simulator_predict(values: SSDSpec | dict[str, Any], job: Job) -> dict[str, float]:
    """What `iowatt run` predicts today: models.ssd.closed_loop on the same SSDSpec."""
    spec = as_spec(values)
    bw, latency_s = ssd_model.closed_loop(spec, job.bs, job.inflight, job.read_fraction, job.pattern, overwrite=OVERWRITE, fill=FILL)
    return {"bw_Bps": bw, "iops": bw / job.bs, "lat_us": latency_s * 1e6}
