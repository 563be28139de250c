"""NFS over TCP: a connection's bytes are handled by one core at a time on each side (mount option nconnect).

Oracle: the utilisation law of a single server (one core per connection: at most core_speed / t bytes per second
through a connection whose bytes cost t core-seconds each), checked on the flow engine's run of fio; RPC/RDMA, which
moves no byte through the CPU (RFC 5532 sect. 4), is unchanged by nconnect.
"""

from __future__ import annotations

import pytest
from iowatt.models import fabric
from iowatt.scenarios.loader import load
from iowatt.simulator.run import simulate


def _read_GBps(protocol: str, nconnect: int) -> float:
    storage = {"kind": "nfs", "protocol": protocol, "fabric": "400gbe", "server_nics": 2, "client_nics": 2, "nconnect": nconnect,
               "server_threads": 256, "export": {"kind": "raid", "level": 0, "count": 8, "device": "micron-9550-pro"}}
    scenario = load({"name": "n", "system": {"storage": storage},
                     "workload": {"kind": "fio", "rw": "read", "bs": "1m", "iodepth": 64, "size": "20G", "runtime": 0.5,
                                  "time_based": True}}, [])
    m = simulate(scenario.system, scenario.workload, 1).metrics
    return m["read_bw_bytes"] / 1e9 if "read_bw_bytes" in m else m["read_MBps"] / 1e3


def test_one_tcp_connection_moves_at_most_one_core_of_bytes() -> None:
    """8 Gen5 drives behind 2 x 400 GbE: one TCP connection binds at one core / (CPU seconds per byte)."""
    per_byte = fabric.protocol_cost("nfs-tcp").client_cpu_s_per_byte
    one = _read_GBps("tcp", 1)
    assert one == pytest.approx(1.0 / per_byte / 1e9, rel=0.02)


def test_more_connections_lift_tcp_until_something_else_binds() -> None:
    one, four = _read_GBps("tcp", 1), _read_GBps("tcp", 4)
    assert four > 2.0 * one


def test_rdma_is_indifferent_to_nconnect() -> None:
    assert _read_GBps("rdma", 1) == pytest.approx(_read_GBps("rdma", 8), rel=1e-6)
