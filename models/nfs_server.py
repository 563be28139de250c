"""An NFS server as a closed queueing network: client RPC slots, the wire, nfsd threads, CPU and the export.

A client keeps N requests in flight (fio's iodepth x numjobs); each is cut into RPCs
of at most rsize/wsize bytes.  At most W RPCs are on the wire at once: the NFSv4.1
session's slot table (RFC 8881 sect. 2.10.6; the Linux client asks for
max_session_slots = 64) and the transport's credits (RPC-over-RDMA credits,
RFC 8166 sect. 3.3.1; sunrpc's slot table on TCP).  The rest wait in the client.

An RPC on the wire costs a round trip (a delay: protocol stacks and fabric) and
its data's serialisation on the NIC port (a single-server station).  At the
server it waits for one of T nfsd threads; a thread takes it, spends the
server's CPU on it (a multi-server station of `cores`), and -- for a READ --
blocks until the export has read the data (the export is a load-dependent
station: its own closed-loop law at the number of threads reading it).  A
WRITE is UNSTABLE: it only copies into the server's page cache.

The thread pool is a passive resource (a memory constraint), so the network is
solved hierarchically (Lazowska, Zahorjan, Graham & Sevcik, Quantitative System
Performance, 1984, ch. 9): the threads' subnetwork (CPU + export) is solved for
1..T busy threads, and that throughput, flat beyond T, is the flow-equivalent
server the RPCs queue for; with the wire in front it forms the outer network of
min(N x RPCs per request, W) customers (models.closed_network).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iowatt.models.closed_network import Delay, Solution, Station, solve, throughput_curve


@dataclass(frozen=True)
class NfsPath:
    """One class of RPCs and the server they meet.

    export_rates   requests/s the export serves with 1, 2, ... reads outstanding (its closed-loop law)
    threads        nfsd threads (T)
    cores          server cores (reference-core equivalents) for the RPC's CPU work
    cpu_s          server CPU seconds per RPC
    round_trip_s   RPC round trip outside the server's queues (stacks, fabric)
    wire_s         serialisation of one RPC's bytes on the NIC port
    window         RPCs the client may have outstanding (session slots, transport credits)
    blocks_thread  the thread waits for the export (READ), or only copies (UNSTABLE WRITE)
    """

    export_rates: tuple[float, ...]
    threads: int
    cores: float
    cpu_s: float
    round_trip_s: float
    wire_s: float
    window: int
    blocks_thread: bool = True


@dataclass(frozen=True)
class NfsLoop:
    """The loop at N RPCs: its rate and what each part of the path does."""

    rpcs: int                  # RPCs the client wants in flight
    on_wire: int               # of which the window lets out
    rpc_rate: float            # RPCs per second
    solution: Solution         # the outer network (wire, thread pool)
    threads_busy: float        # mean busy nfsd threads
    thread_hold_s: float       # mean time a thread holds an RPC
    utilisation: dict[str, float]

    def binding(self, threads: int, export: str) -> str:
        """The nfsd threads, the NIC or the server CPU when one of them is nearly always busy; else the
        export's own state at the threads' depth (`export`, e.g. the array's closed loop)."""
        name, u = max(self.utilisation.items(), key=lambda kv: kv[1])
        slots = f"; client window {self.on_wire} of {self.rpcs} RPCs" if self.on_wire < self.rpcs else ""
        if u >= 0.95 and name == "nfsd threads":
            return f"nfsd threads ({threads}, {self.threads_busy:.1f} busy on average){slots}"
        if u >= 0.95:
            return f"{name} saturated ({u:.0%} busy){slots}"
        return f"export at {self.threads_busy:.1f} outstanding: {export}{slots}"


def _inner(path: NfsPath) -> tuple[Station, ...]:
    cpu = Station("server cpu", tuple(min(j, path.cores) / path.cpu_s for j in range(1, path.threads + 1)))
    if not path.blocks_thread:
        return (cpu,)
    return (cpu, Station("export", path.export_rates[: path.threads] or (math.inf,)))


def thread_pool_rates(path: NfsPath) -> tuple[float, ...]:
    """RPCs per second the server completes with j RPCs waiting or in service (j = 1..T): its
    subnetwork with min(j, T) busy threads, flat beyond T (the flow-equivalent server)."""
    return tuple(float(x) for x in throughput_curve(_inner(path), (), path.threads))


def solve_path(path: NfsPath, rpcs: int) -> NfsLoop:
    """The outer network of min(rpcs, window) RPCs: round trip, NIC, thread pool."""
    on_wire = max(1, min(int(rpcs), path.window))
    pool = thread_pool_rates(path)
    stations = (Station("nfsd threads", pool), Station("nic", (1.0 / path.wire_s,)))
    sol = solve(stations, (Delay("round trip", path.round_trip_s),), on_wire)
    # threads busy: the pool's mean occupancy, capped at T (Little's law inside the server)
    at_server = sol.mean_queue["nfsd threads"]
    busy = min(float(path.threads), at_server)
    m = max(1, min(path.threads, round(busy)))
    inner = solve(_inner(path), (), m)
    hold = m / inner.throughput
    util = {"nfsd threads": busy / path.threads, "nic": sol.utilisation["nic"], "server cpu": inner.mean_queue["server cpu"] / path.cores}
    return NfsLoop(int(rpcs), on_wire, sol.throughput, sol, busy, hold, util)
