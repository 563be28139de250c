"""GPUDirect Storage reads (cuFile) as gdsio issues them, as a closed queueing network.

gdsio runs `threads` threads, each with `io_depth` cuFile reads outstanding in
one of three APIs (gdsio's transfer types):

  sync   cuFileRead (-x 0): a thread waits for each read, so io_depth is 1 and N = threads
  batch  cuFileBatchIOSubmit (-x 6): io_depth reads submitted together, N = threads x io_depth
  async  cuFileReadAsync on the thread's CUDA stream (-x 5): work on a stream runs in issue
         order (CUDA C++ Programming Guide, "Streams"), so a thread's reads reach the drive one
         at a time, N = threads; the queued ones only hide the next read's submission

The drives see those N requests and serve them through the volume's own
closed-loop law (its drives' concurrency law at each block size, capped by
their ceilings).  Each request also costs:

- the host CPU for cuFile's submission and completion (library, the nvidia-fs
  ioctl, the kernel's O_DIRECT path): one core-interval per request, done by
  the gdsio thread that owns the read, so a multi-server station of
  min(threads, host cores) servers: a batch of 128 reads from one thread is
  submitted and reaped one after another by that thread;
- in P2P mode nothing more: the drive DMAs straight into the GPU's BAR1 over
  the PCIe path (models.host_interface: a switch, the root complex, or across
  sockets), crossing the GPU's link once;
- in compatibility mode (cuFile's POSIX fallback where the platform refuses
  peer-to-peer: no nvidia-fs, an unsupported path) the drive DMAs into a pinned
  host bounce buffer, then cudaMemcpy copies it to the GPU: the copy engine is a
  single server (block / copy rate each), the copy's launch and completion a
  fixed delay, and host DRAM carries every byte twice (DMA in, copy out).

The network (models.closed_network) gives the rate at N; the flow engine then
shares the drives' and the GPU link's ceilings between the threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from iowatt.models.closed_network import Delay, Solution, Station, solve
from iowatt.models.host_interface import GpuPath
from iowatt.models.uncertainty import assumed_constant, constant

GdsMode = Literal["p2p", "compat"]
GdsApi = Literal["sync", "batch", "async"]

# Host CPU per cuFile read, reference-core seconds (not measured here).
CUFILE_CPU = assumed_constant(
    "models.gds.cufile_cpu_seconds_per_io", 10e-6, low=5e-6, high=20e-6, shape="log-uniform",
    note="a synchronous O_DIRECT read costs a system call, the block layer's submission and the NVMe completion's "
    "interrupt and wake-up, ~5-8 us of a core on current CPUs (the same per-I/O cost that limits a core to ~150-200 k "
    "synchronous IOPS); cuFile adds its handle and registered-buffer lookups and the nvidia-fs ioctl (GPUDirect "
    "Storage Overview Guide: reads go through nvidia-fs's ioctl into the kernel's direct-I/O path)",
    range_note="low: the bare synchronous read, 5 us (200 k IOPS per core); high: twice the value, cuFile's lookups "
    "and the ioctl costing as much again as the read's own path")
# cudaMemcpy's fixed cost in compatibility mode: launch, DMA descriptor set-up and the synchronising completion.
COMPAT_COPY = assumed_constant(
    "models.gds.compat_copy_latency_seconds", 10e-6, low=5e-6, high=20e-6, shape="log-uniform",
    note="the small-transfer latency of a host-to-device copy over PCIe that bandwidth tests report for pinned memory "
    "(a few us of PCIe round trips plus the driver's launch path)",
    range_note="low: a kernel launch plus one PCIe round trip, ~5 us; high: a synchronous copy of pageable-class "
    "cost, twice the pinned figure")


def cufile_cpu_s_per_io() -> float:
    return constant(CUFILE_CPU.name)


def compat_copy_latency_s() -> float:
    return constant(COMPAT_COPY.name)


# Host DRAM bytes per byte read in compatibility mode: the drive's DMA writes the bounce buffer, the
# copy engine reads it back (RFC-free arithmetic: two passes over DRAM).
COMPAT_DRAM_BYTES_PER_BYTE = 2.0


def default_mode(path: GpuPath) -> GdsMode:
    """P2P where the GPU and the drives share a switch or a root complex; the compatibility mode across
    sockets (assumed: the GPUDirect Storage Design Guide advises against paths over the CPU interconnect,
    and platforms that refuse peer-to-peer there leave cuFile its POSIX fallback)."""
    return "compat" if path == "cross_socket" else "p2p"


def drive_requests(api: GdsApi, threads: int, io_depth: int) -> int:
    """Reads waiting at the drives: every thread's io_depth in batch mode, one per thread otherwise."""
    return threads * io_depth if api == "batch" else threads


def submission_hidden(api: GdsApi, io_depth: int) -> bool:
    """A stream with more reads queued submits the next while the drive serves the current one."""
    return api == "async" and io_depth > 1


@dataclass(frozen=True)
class GdsLoop:
    """gdsio's loop at N requests: requests per second and the network behind it."""

    requests: int
    rate: float
    solution: Solution
    storage_ceiling: float      # requests/s the storage allows at any depth (its constraints)

    @property
    def latency_s(self) -> float:
        return self.requests / self.rate

    def binding(self) -> str:
        share = self.rate / self.storage_ceiling
        if share >= 0.95:
            return f"drive ceiling ({share:.0%} of the block-size law)"
        others = {k: v for k, v in self.solution.utilisation.items() if k != "storage"}
        name, u = max(others.items(), key=lambda kv: kv[1], default=("", 0.0))
        if u >= 0.95:
            return f"{name} saturated ({u:.0%} busy)"
        return f"concurrency: {self.requests} read(s) at the drive ({share:.0%} of its ceiling)"


def gds_loop(storage_rates: tuple[float, ...], block_bytes: float, requests: int, mode: GdsMode,
             host_cores: float, copy_Bps: float, cpu_s: float | None = None, core_speed: float = 1.0,
             storage_ceiling: float | None = None, submitters: int | None = None) -> GdsLoop:
    """Solve N = `requests` reads of `block_bytes`: the storage (its rates with 1..N outstanding), the
    host's cores for cuFile (`cpu_s` reference-core seconds each, on cores of `core_speed`), and in
    compatibility mode the GPU's copy engine and the copy's fixed latency.  cpu_s None: the assumed cuFile cost.
    submitters: the gdsio threads doing that CPU work (None: as many as requests); the station has
    min(submitters, host_cores) servers."""
    cpu_s = cufile_cpu_s_per_io() if cpu_s is None else cpu_s
    servers = host_cores if submitters is None else min(float(submitters), host_cores)
    stations = [Station("storage", storage_rates)]
    if cpu_s > 0.0:
        stations.append(Station("host cpu", tuple(min(j, servers) * core_speed / cpu_s for j in range(1, requests + 1))))
    delays = []
    if mode == "compat":
        stations.append(Station("gpu copy engine", (copy_Bps / block_bytes,)))
        delays.append(Delay("copy launch", compat_copy_latency_s()))
    sol = solve(tuple(stations), tuple(delays), requests)
    return GdsLoop(requests, sol.throughput, sol, storage_ceiling or max(storage_rates))
