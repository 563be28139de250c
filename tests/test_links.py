"""Link and fabric laws against hand computation (models.links, models.fabric).

Oracles: the PCI-SIG line rates and encodings, the TLP overhead of Intel AN 855
(24 B per TLP without ECRC), the Gen6 flit (236 of 256 B), 8b/10b for SATA/SAS,
64b/66b data rates for InfiniBand and Ethernet, and per-packet header sizes
(Ethernet 38 B of framing, IP+TCP 40 B: 94.93 % at 1500 MTU, source L12).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import fabric
from iowatt.models.links import (
    LinkSpec,
    ethernet_link,
    infiniband_link,
    link_payload_Bps,
    network_goodput_Bps,
    pcie_payload_Bps,
    pcie_raw_Bps,
)
from pydantic import ValidationError

LANES = [1, 2, 4, 8, 16]


def test_pcie_gen4_x4_by_hand():
    # 16 GT/s x 4 lanes x 128/130 / 8 bits, times MPS / (MPS + 24 B of TLP overhead)
    hand = 16e9 * 4 * (128 / 130) / 8 * 256 / (256 + 24)
    assert pcie_payload_Bps(4, 4, 256) == pytest.approx(hand, rel=1e-12)
    assert hand / 1e9 == pytest.approx(7.20, abs=0.005)  # devices.yaml links.pcie.gen4 x4_tlp_limited_GBps


@pytest.mark.parametrize(
    ("generation", "lanes", "GBps"),
    [(3, 16, 14.40), (4, 16, 28.81), (5, 4, 14.40), (5, 16, 57.61)],  # devices.yaml links.pcie *_tlp_limited_GBps
)
def test_pcie_tlp_limited_table(generation: int, lanes: int, GBps: float):
    assert pcie_payload_Bps(generation, lanes) / 1e9 == pytest.approx(GBps, abs=0.006)


def test_pcie_gen1_gen2_use_8b10b_and_gen6_uses_flits():
    assert pcie_raw_Bps(1, 1) == pytest.approx(250e6)  # Intel AN 855: 250 MB/s per Gen1 lane
    assert pcie_raw_Bps(2, 1) == pytest.approx(500e6)
    # Gen6 x16: 64 GT/s x 16 / 8 = 128 GB/s raw, x 236/256 = 118.0 GB/s (Lockwood, L04)
    assert pcie_payload_Bps(6, 16) / 1e9 == pytest.approx(118.0, abs=0.01)


def test_max_payload_size_changes_efficiency_as_tlp_law():
    for mps in (128, 256, 512, 1024, 4096):
        assert pcie_payload_Bps(4, 16, mps) / pcie_raw_Bps(4, 16) == pytest.approx(mps / (mps + 24), rel=1e-12)


def test_sata_sas_are_8b10b():
    assert link_payload_Bps(LinkSpec(kind="sata", lanes=1)) == pytest.approx(600e6)
    assert link_payload_Bps(LinkSpec(kind="sas", lanes=1)) == pytest.approx(1200e6)
    assert link_payload_Bps(LinkSpec(kind="sas", lanes=4)) == pytest.approx(4800e6)  # wide port (L08)


def test_infiniband_and_ethernet_rates():
    for speed, gbps in (("edr", 100), ("hdr", 200), ("ndr", 400)):
        assert link_payload_Bps(infiniband_link(speed)) == pytest.approx(gbps * 1e9 / 8)
    # TCP at 1500 MTU: 1460 / 1538 of the data rate (L12): 94.93 Gb/s on 100 GbE
    assert network_goodput_Bps(ethernet_link("100gbe")) * 8 / 1e9 == pytest.approx(94.93, abs=0.01)
    assert network_goodput_Bps(ethernet_link("100gbe"), "tcp", 9000) * 8 / 1e9 == pytest.approx(99.14, abs=0.01)
    # InfiniBand: 4096 B payload per 4096 + 26 B packet
    assert network_goodput_Bps(infiniband_link("edr")) == pytest.approx(12.5e9 * 4096 / 4122)


def test_bad_link_specs_name_the_field():
    with pytest.raises(ValidationError, match="lanes"):
        LinkSpec(kind="pcie", generation=4, lanes=3)
    with pytest.raises(ValidationError, match="generation"):
        LinkSpec(kind="pcie", generation=7, lanes=4)
    with pytest.raises(ValidationError, match="rate_Gbps"):
        LinkSpec(kind="ethernet")


# ---------------------------------------------------------------------------- fabrics and protocols


def test_fabric_goodput_by_hand():
    # IPoIB on EDR: (4096 - 44) / (4096 + 26) of 12.5 GB/s
    assert fabric.port_goodput_Bps("ib-edr", rdma=False) == pytest.approx(12.5e9 * 4052 / 4122)
    # RoCEv2 on 200 GbE: 4096 / (4096 + 44 + 38)
    assert fabric.port_goodput_Bps("200gbe", rdma=True) == pytest.approx(25e9 * 4096 / 4178)
    # two ports carry twice one
    assert fabric.port_goodput_Bps("200gbe", False, ports=2) == pytest.approx(2 * fabric.port_goodput_Bps("200gbe", False))


def test_protocol_header_costs_bandwidth_per_request():
    cost = fabric.protocol_cost("nfs-rdma")
    for request in (4096, 131072, 2**20):
        expected = fabric.port_goodput_Bps("ib-edr", True) * request / (request + cost.header_bytes)
        assert fabric.protocol_goodput_Bps("ib-edr", "nfs-rdma", request) == pytest.approx(expected)


def test_protocol_latency_is_round_trip_plus_serialisation():
    for protocol in fabric.PROTOCOLS:
        fabric_name = "ib-edr" if protocol.endswith("rdma") else "100gbe"
        request = 131072
        goodput = fabric.protocol_goodput_Bps(fabric_name, protocol, request)
        assert fabric.request_latency_s(fabric_name, protocol, request) == pytest.approx(
            fabric.PROTOCOLS[protocol].latency_s + request / goodput
        )
    # RDMA skips the kernel stack and the copies: lower latency and no per-byte CPU
    assert fabric.PROTOCOLS["nfs-rdma"].latency_s < fabric.PROTOCOLS["nfs-tcp"].latency_s
    assert fabric.PROTOCOLS["nfs-rdma"].server_cpu_s_per_byte < fabric.PROTOCOLS["nfs-tcp"].server_cpu_s_per_byte
    assert fabric.PROTOCOLS["nvmeof-rdma"].latency_s < fabric.PROTOCOLS["nfs-rdma"].latency_s


def test_unknown_protocol_is_a_clear_error():
    with pytest.raises(ValueError, match="found 'smb'"):
        fabric.protocol_cost("smb")


@settings(max_examples=40, deadline=None)
@given(
    generation=st.integers(1, 6),
    lanes=st.sampled_from(LANES),
    more=st.sampled_from(LANES),
    mps=st.sampled_from([128, 256, 512, 1024, 2048, 4096]),
)
def test_more_lanes_newer_generations_bigger_payloads_never_slower(generation: int, lanes: int, more: int, mps: int):
    low, high = sorted((lanes, more))
    assert pcie_payload_Bps(generation, high, mps) >= pcie_payload_Bps(generation, low, mps)
    if generation < 6:
        assert pcie_payload_Bps(generation + 1, lanes, mps) > pcie_payload_Bps(generation, lanes, mps)
        assert pcie_payload_Bps(generation, lanes, min(4096, mps * 2)) >= pcie_payload_Bps(generation, lanes, mps)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(fabric.FABRICS),
    protocol=st.sampled_from(sorted(fabric.PROTOCOLS)),
    request=st.floats(512, 2**22),
    ports=st.integers(1, 4),
)
def test_more_ports_and_larger_requests_never_slower(name: str, protocol: str, request: float, ports: int):
    rate = fabric.protocol_goodput_Bps(name, protocol, request, ports)
    assert fabric.protocol_goodput_Bps(name, protocol, request, ports + 1) > rate
    assert fabric.protocol_goodput_Bps(name, protocol, request * 2, ports) >= rate
    # never above the port's data rate
    assert rate <= link_payload_Bps(fabric.fabric_link(name)) * ports


# ---------------------------------------------------------------------------- compute catalog (GPUs on their links, CPUs)


def test_catalog_has_every_mission_gpu_and_cpu_with_provenance():
    from iowatt.models import catalog

    gpus = {"nvidia-h100-sxm", "nvidia-h100-nvl", "nvidia-h100-pcie", "nvidia-a100-pcie-40gb", "nvidia-a100-pcie-80gb",
            "nvidia-a100-sxm-40gb", "nvidia-a100-sxm-80gb", "nvidia-l4", "nvidia-v100"}
    cpus = {"amd-epyc-9654", "amd-epyc-9654p", "amd-epyc-7713", "amd-epyc-74f3", "intel-xeon-8568y-plus",
            "intel-xeon-gold-6430", "intel-xeon-gold-6146", "intel-xeon-e5-2680-v3"}
    assert gpus <= {e.name for e in catalog.entries("gpu")}
    assert cpus <= {e.name for e in catalog.entries("cpu")}
    for entry in catalog.entries("gpu") + catalog.entries("cpu"):
        numeric = {k for k, v in entry.spec.model_dump().items() if isinstance(v, int | float) and not isinstance(v, bool)}
        assert numeric <= set(entry.provenance), (entry.name, numeric - set(entry.provenance))


@pytest.mark.parametrize(("gpu", "measured_GBps"), [("nvidia-v100", 12.0), ("nvidia-a100-pcie-40gb", 26.0)])
def test_gpu_copy_rate_reproduces_the_published_measurement(gpu: str, measured_GBps: float):
    # G19: V100 ingress 12 GB/s; G13: A100 PCIe bandwidthTest pinned ~26 GB/s (devices.yaml)
    from iowatt.models import catalog

    spec = catalog.lookup("gpu", gpu).spec
    assert link_payload_Bps(spec.link) * spec.copy_efficiency / 1e9 == pytest.approx(measured_GBps, rel=0.01)


def test_gpu_initiated_requests_in_flight_are_sms_times_blocks():
    from iowatt.models import catalog

    # GIDS on an H100 NVL: 132 SMs x 32 resident blocks = 4,224 page reads in flight (simulator/workloads/gnn.py)
    assert catalog.lookup("gpu", "nvidia-h100-nvl").spec.gpu_initiated_outstanding() == 4224
    assert catalog.lookup("gpu", "nvidia-l4").spec.gpu_initiated_outstanding() == 58 * 24


def test_core_speed_reference_is_the_epyc_9654():
    from iowatt.models import catalog

    assert catalog.lookup("cpu", "amd-epyc-9654").spec.core_speed == 1.0
    for entry in catalog.entries("cpu"):
        spec = entry.spec
        # never faster per core than its clock ratio allows, times the one generation ahead of Zen 4 per clock here:
        # Zen 5 (EPYC 9005), AMD's stated +16 % IPC
        assert spec.base_clock_GHz is not None
        assert spec.core_speed <= spec.base_clock_GHz / 2.4 * 1.16 + 1e-3
