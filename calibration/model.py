"""The closed-loop drive model the fit and the check use (self-contained; mirrors models.ssd's service-time law).

Per direction d (read, write) three parameters, named like SSDSpec fields:
BW_d (seq_*_MBps), IOPS_d at 4 KiB (rand_*_iops) and the QD1 4 KiB latency
L_d (*_latency_us).  For a request of b bytes:

    ceiling service time   s_d(b) = b / BW_d + t_op_d,   t_op_d = 1/IOPS_d - 4096/BW_d  (>= 0)
    unloaded latency       l_d(b) = L_d + (b - 4096) / BW_d

A job with N = iodepth x numjobs requests in flight and read fraction f is a
closed loop (queue-depth law):

    IOPS = min(N / (f l_r + (1-f) l_w),  1 / (f s_r + (1-f) s_w))
    throughput = IOPS x b,   mean latency = N / IOPS   (Little's law)
"""

from __future__ import annotations

from dataclasses import dataclass

KiB4 = 4096.0
FIELDS = {
    "read": ("seq_read_MBps", "rand_read_iops", "read_latency_us"),
    "write": ("seq_write_MBps", "rand_write_iops", "write_latency_us"),
}
ALL_FIELDS = FIELDS["read"] + FIELDS["write"]


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


def _direction(values: dict[str, float], direction: str, bs: float) -> tuple[float, float]:
    bw_field, iops_field, lat_field = FIELDS[direction]
    bw = values[bw_field] * 1e6
    t_op = max(1.0 / values[iops_field] - KiB4 / bw, 0.0)
    service = bs / bw + t_op
    unloaded = max(values[lat_field] * 1e-6 + (bs - KiB4) / bw, service)
    return service, unloaded


def predict(values: dict[str, float], job: Job) -> dict[str, float]:
    """Throughput (B/s), IOPS and mean latency (us) of one job, from SSDSpec-named values."""
    f = job.read_fraction
    service = unloaded = 0.0
    if f > 0:
        s, u = _direction(values, "read", job.bs)
        service += f * s
        unloaded += f * u
    if f < 1:
        s, u = _direction(values, "write", job.bs)
        service += (1 - f) * s
        unloaded += (1 - f) * u
    iops = min(job.inflight / unloaded, 1.0 / service)
    return {
        "bw_Bps": iops * job.bs,
        "iops": iops,
        "lat_us": job.inflight / iops * 1e6,
        "bound": "ceiling" if 1.0 / service <= job.inflight / unloaded else "queue-depth",
    }
