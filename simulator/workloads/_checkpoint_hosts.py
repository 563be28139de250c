"""Ranks on hosts: which host and GPU each rank runs on, and each host's own share of what the
client aggregate stands for.

The client host runtime is `nodes` identical hosts as one aggregate (simulator.machine.HostRuntime:
DRAM bandwidth x nodes; the storage kind's client NICs x clients).  That is exact while every host
moves the same bytes; checkpoint shards are not even (data-parallel rank 0 also writes the weights),
so a host whose ranks write more would borrow the other hosts' DRAM and NICs.  Each host gets its
own constraints at 1/nodes of the aggregate, and a rank's flows cross its host's share as well as
the aggregate: no host goes beyond its own memory bandwidth or NIC ports, the slowest rank decides.

Ranks fill hosts in order, rank r on host r // ranks_per_host (Megatron-LM's launch order: a tensor-
parallel group's consecutive ranks on one host), and a host's ranks use that host's GPUs in order.
"""

from __future__ import annotations

from iowatt.simulator.flows import Constraint, FlowEngine
from iowatt.simulator.machine import HostRuntime
from iowatt.simulator.storage import Usage, Volume
from iowatt.simulator.workloads import WorkloadConfigError


class HostLayout:
    """`hosts` client hosts of `ranks_per_host` ranks each, with per-host DRAM and client-side shares."""

    def __init__(self, engine: FlowEngine, host: HostRuntime, ranks: int, gpus: int) -> None:
        self.engine = engine
        self.hosts = host.nodes
        if ranks % self.hosts:
            raise WorkloadConfigError(
                f"workload: expected ranks that fill the {self.hosts} client hosts evenly (system.storage clients), "
                f"found {ranks} ranks"
            )
        if gpus and gpus % self.hosts:
            raise WorkloadConfigError(f"system.gpus.count: expected a multiple of the {self.hosts} client hosts, found {gpus}")
        self.ranks_per_host = ranks // self.hosts
        self.gpus_per_host = gpus // self.hosts
        split = self.hosts > 1
        self.memory = [engine.constraint(f"ckpt.host{h}.memory", host.memory.capacity / self.hosts) for h in range(self.hosts)] if split else []
        self._shares: dict[Constraint, list[Constraint]] = {}

    def host_of(self, rank: int) -> int:
        return rank // self.ranks_per_host

    def gpu_of(self, rank: int) -> int:
        """Index into system.gpus of the GPU this rank copies from (its host's GPUs, in order)."""
        host, local = divmod(rank, self.ranks_per_host)
        return host * self.gpus_per_host + local % self.gpus_per_host

    def memory_usage(self, rank: int, passes: float) -> Usage:
        """The rank's host's own DRAM bandwidth, `passes` bytes per byte (nothing on one host)."""
        return [(self.memory[self.host_of(rank)], passes)] if self.memory else []

    def on_host(self, host: int, volume: Volume, usage: Usage) -> Usage:
        """`usage` of `volume` for a stream of `host`: the aggregate's client-side constraints plus the host's share."""
        if self.hosts == 1:
            return usage
        extra: Usage = []
        for aggregate in volume.client_side():
            shares = self._shares.get(aggregate)
            if shares is None:
                capacity = aggregate.capacity / self.hosts
                shares = [self.engine.constraint(f"ckpt.host{h}.{aggregate.name}", capacity) for h in range(self.hosts)]
                self._shares[aggregate] = shares
            extra += [(shares[host], k) for c, k in usage if c is aggregate]
        return usage + extra

    def per_host(self, volume: Volume, usage: Usage) -> list[Usage]:
        """`on_host` for every host, in host order."""
        return [self.on_host(h, volume, usage) for h in range(self.hosts)]
