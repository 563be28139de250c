"""models.erasure: the work of one request on an erasure-coded cluster, by request size.

Oracles: conservation (every byte stored (k+m)/k times once destaged, every byte read
once when healthy); the RAID small-write penalty of Patterson, Gibson & Katz (SIGMOD
1988): an in-place one-chunk write reads and writes the chunk and its m parities, 2(1+m)
I/Os; the degraded-read cost of Huang et al. (USENIX ATC 2012): a Reed-Solomon chunk lost
costs k chunk reads, checked against a Monte-Carlo placement of stripes over nodes
(tests/cluster_oracle.py); where the code is computed decides which NICs carry the parity.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import erasure
from iowatt.models.erasure import Layout, request_work

from tests.cluster_oracle import monte_carlo_degraded_reads

KIB, MIB = 1024.0, 2.0**20


def meta(layout: Layout) -> float:
    return (layout.m + 1) * erasure.METADATA_BYTES_PER_WRITE * (1 - layout.lost)


def test_closed_forms():
    assert erasure.write_expansion(4, 2) == 1.5
    assert erasure.usable_fraction(4, 2) == pytest.approx(2 / 3)


def test_small_reads_touch_one_chunk_and_large_reads_a_stripe():
    lay = Layout(4, 2, 6)
    small = request_work(lay, "read", 4 * KIB, "rand")
    assert (small.reads.ios, small.reads.bytes, small.fan_out) == (1.0, 4 * KIB, 1.0)
    large = request_work(lay, "read", MIB, "seq")
    assert (large.reads.ios, large.reads.bytes, large.reads.size) == (4.0, MIB, MIB / 4)
    assert large.writes.ios == 0 and large.client_in_bytes == MIB


@pytest.mark.parametrize(("k", "m"), [(4, 2), (8, 3), (2, 1), (6, 0)])
def test_full_stripe_writes_store_k_plus_m_over_k_and_read_nothing(k: int, m: int):
    lay = Layout(k, m, k + m)
    w = request_work(lay, "write", k * MIB, "seq")
    assert w.reads.bytes == 0.0 and w.background_writes.bytes == 0.0
    assert w.writes.bytes == pytest.approx(k * MIB * (k + m) / k + meta(lay))
    assert w.path == "full-stripe write"


def test_in_place_one_chunk_write_pays_the_raid_small_write_penalty():
    """Read old data + m parities, write them back: 2 (1 + m) I/Os, two round trips."""
    lay = Layout(4, 2, 6, small_writes="rmw")
    w = request_work(lay, "write", 4 * KIB, "rand")
    assert w.reads.ios == 3 and w.writes.ios == pytest.approx(3 + (3 * 20 / 4096))
    assert w.reads.bytes == 3 * 4 * KIB
    assert w.node_hops == 4.0 and w.path == "partial-stripe read-modify-write"


def test_in_place_write_of_most_of_a_stripe_reconstructs_instead():
    """3 of 4 chunks: reading the one untouched chunk beats reading 3 old chunks + 2 parities (md's rcw)."""
    w = request_work(Layout(4, 2, 6, small_writes="rmw"), "write", 12 * KIB, "rand")
    assert w.reads.ios == 1 and w.path == "partial-stripe reconstruct-write"


def test_journal_writes_mirror_now_and_stripe_later():
    """A 4 KiB write lands as 1 + m copies at once; its destage reads it back and stores it (k+m)/k times:
    after the destage the bytes stored per byte are the full-stripe expansion (conservation)."""
    lay = Layout(4, 2, 6)
    w = request_work(lay, "write", 4 * KIB, "rand")
    assert w.reads.ios == 0 and w.writes.bytes == pytest.approx(3 * 4 * KIB + meta(lay))
    assert w.background_reads.bytes == 4 * KIB
    assert w.background_writes.bytes == pytest.approx(1.5 * 4 * KIB)
    assert w.node_hops == 2.0 and w.path == "partial-stripe journal write"


def test_sequential_small_writes_are_not_coalesced_without_a_journal():
    """O_DIRECT acknowledges each write: a sequential 4 KiB stream is partial-stripe work too."""
    assert request_work(Layout(4, 2, 6, small_writes="rmw"), "write", 4 * KIB, "seq").reads.ios == 3


@pytest.mark.parametrize(("pieces_kib", "failed"), [(4, 1), (8, 1), (4, 2), (16, 1), (12, 2)])
def test_degraded_reads_against_a_monte_carlo_placement(pieces_kib: int, failed: int):
    k, m, nodes = 4, 2, 6
    w = request_work(Layout(k, m, nodes, failed), "read", pieces_kib * KIB, "rand")
    pieces = min(k, pieces_kib // 4)
    assert w.reads.ios == pytest.approx(monte_carlo_degraded_reads(k, m, nodes, failed, pieces), rel=0.02)


def test_a_lost_chunk_costs_k_reads():
    w = request_work(Layout(4, 2, 6, failed_nodes=1), "read", 4 * KIB, "rand")
    assert w.reads.ios == pytest.approx(5 / 6 * 1 + 1 / 6 * 4)
    assert w.coded_bytes == pytest.approx(1 / 6 * 4 * KIB * 4)  # k inputs per rebuilt byte


def test_where_the_code_is_computed_decides_the_client_bytes():
    server = request_work(Layout(4, 2, 6, erasure_at="server"), "write", MIB, "seq")
    client = request_work(Layout(4, 2, 6, erasure_at="client"), "write", MIB, "seq")
    assert server.client_out_bytes == MIB
    assert server.peer_bytes == pytest.approx(1.5 * MIB * 5 / 6)
    assert client.client_out_bytes == pytest.approx(1.5 * MIB)
    assert client.peer_bytes == 0.0 and client.node_hops == 0.0


def test_failed_nodes_receive_no_pieces():
    healthy = request_work(Layout(4, 2, 6), "write", MIB, "seq")
    degraded = request_work(Layout(4, 2, 6, failed_nodes=1), "write", MIB, "seq")
    assert degraded.writes.bytes == pytest.approx(healthy.writes.bytes * 5 / 6)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(1, 10), m=st.integers(0, 4), extra=st.integers(0, 6), kib=st.integers(1, 4096),
       mode=st.sampled_from(["journal", "rmw"]), at=st.sampled_from(["server", "client"]))
def test_every_byte_is_stored_with_its_parity(k: int, m: int, extra: int, kib: int, mode: str, at: str):
    """Conservation, healthy cluster: a read moves each byte once; a write ends with at least (k+m)/k bytes per
    byte stored (full stripes exactly, journalled bytes again once destaged)."""
    lay = Layout(k, m, k + m + extra, small_writes=mode, erasure_at=at)  # type: ignore[arg-type]
    b = kib * KIB
    r = request_work(lay, "read", b, "rand")
    assert r.reads.bytes == pytest.approx(b) and r.client_in_bytes == pytest.approx(b)
    w = request_work(lay, "write", b, "rand")
    stored = w.writes.bytes + w.background_writes.bytes - meta(lay)
    assert stored >= b * (k + m) / k * (1 - 1e-9)
    assert w.fan_out <= lay.alive


def test_bad_layouts_name_what_is_wrong():
    with pytest.raises(ValueError, match="places each stripe on 6 distinct nodes, found 5 nodes"):
        Layout(4, 2, 5)
    with pytest.raises(ValueError, match="survives at most 2 failed nodes, found 3"):
        Layout(4, 2, 6, failed_nodes=3)
    with pytest.raises(ValueError, match="request size must be > 0"):
        request_work(Layout(4, 2, 6), "read", 0.0)
