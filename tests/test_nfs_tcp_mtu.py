"""TCP's per-byte CPU at an Ethernet MTU (models.fabric.tcp_cpu_seconds_per_byte) and the NFS `mtu` field.

Oracles: the cost's own decomposition (a copy paid per byte at any MTU plus per-segment work paid once per MSS,
TCP_CPU being stated at 1500 B), and the bottleneck law (Denning & Buzen 1978: a saturated station's throughput is
the inverse of its demand) for a single TCP connection's core.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import fabric
from iowatt.models.uncertainty import constant
from iowatt.scenarios.loader import ScenarioError, load
from iowatt.scenarios.run import run_scenario

ARRAYS = Path(__file__).resolve().parent.parent / "scenarios" / "library" / "arrays"


def test_the_stated_mtu_gives_the_stated_figure():
    """TCP_CPU is stated at the 1500-B MTU: the decomposition returns it there, and without an MTU."""
    stated = constant(fabric.TCP_CPU.name)
    assert fabric.tcp_cpu_seconds_per_byte(1500) == pytest.approx(stated, rel=1e-12)
    assert fabric.tcp_cpu_seconds_per_byte(None) == stated


@settings(max_examples=40, deadline=None)
@given(small=st.integers(576, 9216), large=st.integers(576, 9216))
def test_a_larger_mtu_never_costs_more_and_never_less_than_the_copy(small: int, large: int):
    """Per-segment work spread over more payload: the cost falls with the MTU and stays above the copy, which
    every byte pays; the per-segment part scales as 1 / MSS exactly."""
    small, large = min(small, large), max(small, large)
    copy = constant(fabric.TCP_COPY.name)
    lo, hi = fabric.tcp_cpu_seconds_per_byte(large), fabric.tcp_cpu_seconds_per_byte(small)
    assert copy < lo <= hi
    assert (hi - copy) * (small - 52) == pytest.approx((lo - copy) * (large - 52), rel=1e-9)


def _read_GBps(protocol: str, **overrides: object) -> tuple[float, str]:
    sets = [f"{k}={v}" for k, v in {"workload.rw": "read", "workload.bs": "64k", "workload.runtime": "2 s", **overrides}.items()]
    result = run_scenario(load(ARRAYS / f"burrito_nfs_ramdisk_{protocol}.yaml", sets))[0]
    return result["metrics"]["bw_bytes"] / 1e9, str(result["storage"]["closed_loop"]["binding"])


def test_jumbo_frames_raise_a_connection_bound_read_by_the_per_byte_ratio():
    """Bottleneck law: one TCP connection's bytes go through one client core at a time, so its rate is the core
    speed over the per-byte cost; 9000-B frames raise it by cost(1500) / cost(9000), the NIC not binding."""
    at_1500, _ = _read_GBps("tcp", **{"storage.mtu": 1500})
    at_9000, _ = _read_GBps("tcp", **{"storage.mtu": 9000})
    ratio = fabric.tcp_cpu_seconds_per_byte(1500) / fabric.tcp_cpu_seconds_per_byte(9000)
    assert at_9000 / at_1500 == pytest.approx(ratio, rel=0.01)
    assert at_9000 < fabric.port_goodput_Bps("100gbe", False) / 1e9


def test_rdma_ignores_the_mtu_field():
    """RPC/RDMA moves no byte through the CPU: the field does not move it."""
    assert _read_GBps("rdma", **{"storage.mtu": 1500})[0] == pytest.approx(_read_GBps("rdma", **{"storage.mtu": 9000})[0], rel=1e-9)


def test_an_mtu_out_of_range_is_refused_naming_the_field():
    with pytest.raises(ScenarioError, match="mtu"):
        load(ARRAYS / "burrito_nfs_ramdisk_tcp.yaml", ["storage.mtu=100"])
