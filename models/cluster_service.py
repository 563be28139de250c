"""The storage software of a scale-out cluster as service stations: dedicated cores, per-core rates, hops.

A WEKA-like design (docs.weka.io, "WEKA containers architecture overview")
runs three kinds of processes, each on a dedicated core:
  - frontend processes on the clients (and backends), POSIX access and sending
    I/O to the compute and drive processes;
  - compute processes on the storage nodes: the filesystem, the erasure code,
    the I/O from clients (here: one request per host request at the node
    that owns the stripe, plus the bytes it codes and forwards);
  - drive processes on the storage nodes, the I/O to the SSDs (here: every
    piece a node reads or writes).
A process type's core serves an I/O of n bytes in  1 / iops + n / Bps  seconds
(per-core IOPS and bytes/s, for reads and for writes); rates are stated for
the reference core (a Zen 4 core at 2.4 GHz, models.compute.CPUSpec.core_speed)
and a node's or client's own cores scale them by their core_speed.

Where the defaults come from (provenance next to each constant):
  - core counts: docs.weka.io "Plan the WEKA system hardware requirements"
    (planning-a-weka-system-installation): one drive process per SSD up to 6
    SSDs, one per 2 SSDs beyond; 2 compute processes per drive process; the
    client's WEKA software takes one physical core by default;
  - per-core rates: the SuperMicro rows of docs.weka.io "WEKA performance tests"
    (testing-weka-system-performance: 8 backends, 4+2, 6 x Micron 9300, dual
    100 GbE, 12 compute + 6 drive + 1 frontend cores, Xeon Gold 6126; 8 clients
    with 6 frontend cores, DPDK; fio jobs of wekatester: 1 MiB at 32 jobs x QD1,
    4 KiB at 64 jobs x QD8 per client).  Single client: read 21.4 GiB/s, write
    17.2 GiB/s, 563,667 read and 378,667 write IOPS; aggregate: read 123 GiB/s,
    write 37.6 GiB/s, 4,346,330 read and 1,317,000 write IOPS.  Attribution
    (assumed): the single client is bound by its 6 frontend cores (its dual
    100 GbE, ~23.7 GB/s of goodput, is above the 23.0 GB/s read), the aggregate
    by the backends' drive processes (the 8 x 6 SSDs and NICs are above it; the
    8 clients could take 4.5 M read IOPS, so the read IOPS row bounds the drive
    processes from below and is taken as their rate).  Xeon Gold 6126 per-core
    speed: 2.6 GHz / 2.4 GHz x 0.712 (Skylake per clock, as
    models/catalog/cpu.yaml states for intel-xeon-gold-6146) = 0.7713.
"""

from __future__ import annotations

from typing import Literal

from iowatt.models.fabric import protocol_cost
from iowatt.models.links import LinkSpec
from iowatt.models.uncertainty import assumed_constant, constant
from pydantic import BaseModel, ConfigDict, Field

Op = Literal["read", "write"]
ClientStack = Literal["dpdk", "kernel", "fuse"]

# Xeon Gold 6126 (the WEKA SuperMicro test's backends and clients) in reference cores (module docstring).
WEKA_TEST_CORE_SPEED = 2.6 / 2.4 * 0.712


def _per_reference_core(seconds_on_test_core: float) -> float:
    return seconds_on_test_core * WEKA_TEST_CORE_SPEED


# Frontend (client, DPDK), calibrated on the single-client rows (6 cores, fitted_on: docs.weka.io
# testing-weka-system-performance, SuperMicro): 4 KiB read 6 / 563,667 = 10.645 us, 1 MiB read
# 6 / (21.4 x 1024 /s) = 273.8 us -> 0.25195 ns/B and 9.613 us per op; 4 KiB write 15.845 us,
# 1 MiB write 340.66 us -> 0.31099 ns/B and 14.571 us per op (Xeon Gold 6126 core-seconds).
FRONTEND_READ_OP_S = _per_reference_core(9.613e-6)
FRONTEND_READ_S_PER_BYTE = _per_reference_core(0.25195e-9)
FRONTEND_WRITE_OP_S = _per_reference_core(14.571e-6)
FRONTEND_WRITE_S_PER_BYTE = _per_reference_core(0.31099e-9)
# Drive processes, calibrated on the aggregate rows (48 drive cores; fitted_on as above), with
# models.erasure's 4+2 work: 1 MiB read = 4 pieces of 256 KiB: 48 / (123 x 1024 x 4 /s) = 95.27 us
# per piece; 4 KiB read = 1 piece: 48 / 4,346,330 = 11.044 us -> 0.32641 ns/B and 9.707 us per op.
# 1 MiB write = 6 pieces of 256 KiB: 48 / (37.6 x 1024 x 6 /s) = 207.78 us per piece; 4 KiB write
# = a journal of 3 pieces of 4 KiB + metadata + its destage (4 KiB read back, 6 KiB written in
# full stripes; models.erasure): 48 / 1,317,000 = 36.447 us per write -> 0.76638 ns/B and
# 6.880 us per write op.
DRIVE_READ_OP_S = _per_reference_core(9.707e-6)
DRIVE_READ_S_PER_BYTE = _per_reference_core(0.32641e-9)
DRIVE_WRITE_OP_S = _per_reference_core(6.880e-6)
DRIVE_WRITE_S_PER_BYTE = _per_reference_core(0.76638e-9)
# Compute processes: not bound in any WEKA row, which only bounds them (4 KiB read <= 22 us,
# 4 KiB write <= 73 us, 1 MiB write <= 2.5 ms per request per core); the code itself is ERASURE below.
COMPUTE_OP = assumed_constant(
    "models.cluster_service.compute_seconds_per_op", 5e-6, low=2e-6, high=12.5e-6, shape="log-uniform",
    note="metadata lookup and RPC dispatch in user space, no system calls: 5 us per request of a reference core",
    range_note="low: a polled user-space RPC dispatch, ~2 us; high: 12.5 us, a dispatch that also takes a system "
    "call or two (the WEKA 4 KiB read row bounds it at 22 us per request per core, module docstring)")
COMPUTE_PER_BYTE = assumed_constant(
    "models.cluster_service.compute_seconds_per_byte", 0.1e-9, low=0.05e-9, high=0.2e-9, shape="log-uniform",
    note="one copy of each byte handled at ~10 GB/s per core, the memcpy rate models.fabric's TCP cost rests on",
    range_note="low: a streaming copy at ~20 GB/s per core (AVX-512, cache-resident); high: ~5 GB/s per core, a copy "
    "that misses the caches on a loaded socket")
# Reed-Solomon coding per data byte and parity chunk; decoding a lost chunk costs the same per input byte.
ERASURE_PER_BYTE_PER_PARITY = assumed_constant(
    "models.cluster_service.erasure_seconds_per_byte_per_parity", 0.2e-9, low=0.1e-9, high=0.5e-9, shape="log-uniform",
    note="Intel ISA-L encodes at several GB/s of data per core with AVX2/AVX-512 for small m: 5 GB/s per parity "
    "(m = 2 -> 2.5 GB/s per core)",
    range_note="low: 10 GB/s per parity, ISA-L's AVX-512 GFNI class for small m; high: 2 GB/s per parity, AVX2 on an "
    "older core or a library without ISA-L's table-lookup kernels")
# One-way network hop of the user-space (DPDK) data path, switch and protocol processing included.  The WEKA QD1
# rows (4 KiB read 144.76 us, write 107.12 us) less the stations' service (frontend 10.6/15.8 us, compute 6.5 us,
# drive process 11.0/10.0 us on those cores) leave 116 us for a read's 3 hops + NAND read and 75 us for a write's 4
# hops + the SSD's buffered write; with the ~80 us NAND read and ~15 us buffered write of the Gen3 TLC class,
# 10-16 us per hop.
DPDK_HOP = assumed_constant(
    "models.cluster_service.dpdk_hop_seconds", 13e-6, low=8e-6, high=20e-6,
    note="13 us: the middle of the 10-16 us per hop the WEKA QD1 rows leave (comment above)",
    range_note="low: the write row with a 40 us buffered write, (75 - 40) / 4 = 8.8 us per hop; high: the write row's "
    "75 us over its 4 hops with nothing left for the buffered write, 18.8 us, or the read row with a 60 us NAND read, "
    "(116 - 60) / 3 = 18.7 us")
# Kernel clients (WEKA's UDP mode, NFS): the kernel network stack on the client's side of a hop is half of
# models.fabric's NFS/TCP round trip; per request and per byte the client's own CPU pays NFS/TCP's client costs
# (both read from models.fabric's constants when used).
# FUSE: the kernel hands requests of at most 32 pages = 128 KiB to the user-space daemon (the Linux
# default max_pages, and the fixed size before 4.20: mergerfs "fuse_msg_size" docs); each such request
# crosses user/kernel twice more and copies its data once more.
FUSE_MAX_REQUEST_BYTES = 128 * 1024.0
FUSE_OP = assumed_constant(
    "models.cluster_service.fuse_cpu_seconds_per_request", 5e-6, low=2e-6, high=15e-6, shape="log-uniform",
    note="two more user/kernel crossings and context switches per FUSE request, a few us of CPU",
    range_note="low: two context switches on a current core (~1 us each); high: a daemon woken on another core "
    "with its queue lock contended")
FUSE_LATENCY = assumed_constant(
    "models.cluster_service.fuse_latency_seconds_per_request", 10e-6, low=5e-6, high=20e-6, shape="log-uniform",
    note="the round trip kernel -> daemon -> kernel of one FUSE request: two context switches of a few us each",
    range_note="low: two switches of ~2.5 us with the daemon spinning; high: a sleeping daemon's wake-up on "
    "another core, ~10 us each way")
FUSE_PER_BYTE = assumed_constant(
    "models.cluster_service.fuse_cpu_seconds_per_byte", 0.1e-9, low=0.05e-9, high=0.2e-9, shape="log-uniform",
    note="one more copy of each byte, ~10 GB/s per core (the compute processes' copy rate)",
    range_note="as compute_seconds_per_byte: a copy at 20 GB/s to 5 GB/s per core")
# RDMA data path of the WEKA client: used for reads of 32 KB and more and writes of 256 KB and more
# (docs.weka.io "WEKA networking", RDMA and GPUDirect Storage); the data is placed by the NIC, so
# the frontend pays no per-byte cost for those.
RDMA_MIN_READ_BYTES = 32 * 1024.0
RDMA_MIN_WRITE_BYTES = 256 * 1024.0


class CoreRates(BaseModel):
    """What one reference core of a process type serves: a request of n bytes takes 1/iops + n/Bps seconds."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_iops: float = Field(gt=0, description="read requests per second per core, before bytes")
    write_iops: float = Field(gt=0, description="write requests per second per core, before bytes")
    read_GBps: float = Field(gt=0, description="GB/s of read data per core, before the per-request cost")
    write_GBps: float = Field(gt=0, description="GB/s of written data per core, before the per-request cost")

    def seconds(self, op: Op, requests: float, nbytes: float) -> float:
        if op == "read":
            return requests / self.read_iops + nbytes / (self.read_GBps * 1e9)
        return requests / self.write_iops + nbytes / (self.write_GBps * 1e9)


def rates(read_op_s: float, read_s_per_byte: float, write_op_s: float, write_s_per_byte: float) -> CoreRates:
    return CoreRates(read_iops=1.0 / read_op_s, write_iops=1.0 / write_op_s,
                     read_GBps=1e-9 / read_s_per_byte, write_GBps=1e-9 / write_s_per_byte)


FRONTEND_RATES = rates(FRONTEND_READ_OP_S, FRONTEND_READ_S_PER_BYTE, FRONTEND_WRITE_OP_S, FRONTEND_WRITE_S_PER_BYTE)
DRIVE_RATES = rates(DRIVE_READ_OP_S, DRIVE_READ_S_PER_BYTE, DRIVE_WRITE_OP_S, DRIVE_WRITE_S_PER_BYTE)


def compute_rates() -> CoreRates:
    """The compute processes' assumed per-core rates, read from their constants when a volume is built."""
    op, per_byte = constant(COMPUTE_OP.name), constant(COMPUTE_PER_BYTE.name)
    return rates(op, per_byte, op, per_byte)


def erasure_seconds_per_byte_per_parity() -> float:
    return constant(ERASURE_PER_BYTE_PER_PARITY.name)


def dpdk_hop_s() -> float:
    return constant(DPDK_HOP.name)


def drive_processes(ssds: int) -> int:
    """WEKA's rule: one drive process per SSD up to 6 SSDs, one per 2 SSDs beyond (docs.weka.io planning)."""
    return ssds if ssds <= 6 else 6 + -(-(ssds - 6) // 2)  # read as continuous: 6, then one more per 2 SSDs


def compute_processes(drive_cores: int) -> int:
    """WEKA's rule: 2 compute processes per drive process (docs.weka.io planning)."""
    return 2 * drive_cores


# The NIC card that carries one port of each fabric (its PCIe host interface): NVIDIA's ConnectX-6 EN
# user manual: a x16 card carries up to 100 GbE in a Gen3 slot, 200 GbE in a Gen4 slot (docs.nvidia.com,
# ConnectX6EN Introduction); 400 GbE and NDR need Gen5 x16 by the same arithmetic (ConnectX-7), assumed.
NIC_HOST_LINK: dict[str, LinkSpec] = {
    "100gbe": LinkSpec(kind="pcie", generation=3, lanes=16),
    "ib-edr": LinkSpec(kind="pcie", generation=3, lanes=16),
    "200gbe": LinkSpec(kind="pcie", generation=4, lanes=16),
    "ib-hdr": LinkSpec(kind="pcie", generation=4, lanes=16),
    "400gbe": LinkSpec(kind="pcie", generation=5, lanes=16),
    "ib-ndr": LinkSpec(kind="pcie", generation=5, lanes=16),
}


def client_request_split(stack: ClientStack, block_bytes: float) -> float:
    """Requests the client's stack makes of one application request (FUSE splits at 128 KiB)."""
    if stack == "fuse":
        return max(1.0, -(-block_bytes // FUSE_MAX_REQUEST_BYTES))
    return 1.0


def client_hop_s(stack: ClientStack) -> float:
    return dpdk_hop_s() if stack == "dpdk" else protocol_cost("nfs-tcp").latency_s / 2.0


def host_cpu_s(stack: ClientStack, block_bytes: float) -> float:
    """Reference-core seconds a kernel or FUSE client's own CPU spends on one request (0 for DPDK: its
    dedicated frontend cores do the work)."""
    if stack == "dpdk":
        return 0.0
    kernel = protocol_cost("nfs-tcp")
    cpu = kernel.client_cpu_s_per_op + block_bytes * kernel.client_cpu_s_per_byte
    if stack == "fuse":
        cpu += client_request_split(stack, block_bytes) * constant(FUSE_OP.name) + block_bytes * constant(FUSE_PER_BYTE.name)
    return cpu


def stack_latency_s(stack: ClientStack, block_bytes: float) -> float:
    """Latency a request spends in the client's stack beyond its hops (FUSE's round trips to the daemon)."""
    return client_request_split(stack, block_bytes) * constant(FUSE_LATENCY.name) if stack == "fuse" else 0.0


def frontend_bytes(op: Op, block_bytes: float, rdma: bool) -> float:
    """Bytes the DPDK frontend handles itself: none of a request that takes WEKA's RDMA data path."""
    if rdma and block_bytes >= (RDMA_MIN_READ_BYTES if op == "read" else RDMA_MIN_WRITE_BYTES):
        return 0.0
    return block_bytes
