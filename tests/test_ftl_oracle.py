"""The fluid FTL model (models.ftl) and the filesystem's placement (models.filesystem) against their oracle:
a per-page FTL simulation with a mapping table, erase blocks and greedy GC (tests/ftl_oracle.py), on drives
scaled down ~1/10,000 that keep the page / block / over-provisioning ratios.  Properties the theory of greedy
GC guarantees (more valid data never lowers WA, discard never raises it) are checked with hypothesis."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import nand
from iowatt.models.filesystem import FileSpace, FilesystemSpec
from iowatt.models.ftl import FluidFTL, Kill, steady_state_population

from tests.ftl_oracle import PageFTL, checkpoint_passes, interleave, random_overwrites

USER = 60_000  # pages of the scaled drive


def fluid_like(oracle: PageFTL) -> FluidFTL:
    """The fluid model of the oracle's drive: the NAND its garbage collection can use (reserve blocks excluded)."""
    return FluidFTL(oracle.user, oracle.gc_pages / oracle.user - 1.0)


def fluid_random_wa(ftl: FluidFTL, owner: str, nbytes: float) -> float:
    return ftl.write(owner, nbytes, ordered=False, kills=[Kill(owner, nbytes, False)]) / nbytes


@pytest.mark.parametrize(("utilisation", "op"), [(0.5, 0.07), (0.75, 0.07), (0.9, 0.07), (0.95, 0.04)])
def test_random_4k_overwrites_match_the_per_page_oracle(utilisation: float, op: float) -> None:
    """Uniform random single-page overwrites at valid / NAND = u: the fluid steady state within 5 % of the
    per-page greedy simulation, and both near the Lambert-W law (Desnoyers 2012), the large-block limit."""
    oracle = PageFTL(USER, op, 512)
    valid = int(utilisation * oracle.gc_pages)
    pages = np.arange(valid)
    oracle.write(pages)
    rng = np.random.default_rng(1)
    random_overwrites(oracle, pages, 6 * valid, rng)
    measured = random_overwrites(oracle, pages, 3 * valid, rng)
    fluid = fluid_like(oracle)
    fluid.write("a", valid, ordered=True)
    fluid_random_wa(fluid, "a", 6 * valid)
    predicted = fluid_random_wa(fluid, "a", 3 * valid)
    lambert = nand.greedy_write_amplification(valid / oracle.gc_pages)
    print(f"\nu={utilisation}: oracle {measured:.3f}, fluid {predicted:.3f}, Lambert-W {lambert:.3f}")
    assert predicted == pytest.approx(measured, rel=0.05)
    assert predicted == pytest.approx(lambert, rel=0.05)


def test_fresh_out_of_box_to_steady_state_follows_the_oracle() -> None:
    """Random overwrites on a drive filled once: WA is 1 while free blocks last, then rises to the steady
    state over the next drive writes (SNIA PTS-E transition); the fluid curve follows the oracle's within
    5 % per quarter drive write once the transition is over, and exactly 1 before it."""
    oracle = PageFTL(USER, 0.07, 512)
    valid = int(0.75 * oracle.gc_pages)
    pages = np.arange(valid)
    oracle.write(pages)
    fluid = fluid_like(oracle)
    fluid.write("a", valid, ordered=True)
    rng = np.random.default_rng(4)
    quarter = valid // 4
    measured = [random_overwrites(oracle, pages, quarter, rng) for _ in range(12)]
    predicted = [fluid_random_wa(fluid, "a", quarter) for _ in range(12)]
    print("\noracle", [round(x, 2) for x in measured], "\nfluid ", [round(x, 2) for x in predicted])
    assert predicted[0] == pytest.approx(1.0) and measured[0] == pytest.approx(1.0, abs=0.01)
    for m, p in zip(measured[3:], predicted[3:], strict=True):
        assert p == pytest.approx(m, rel=0.05)
    assert sum(predicted) == pytest.approx(sum(measured), rel=0.05)


@pytest.mark.parametrize("streams", [1, 8])
def test_sequential_rewrite_costs_nothing_with_one_or_eight_interleaved_streams(streams: int) -> None:
    """Fill 90 % sequentially with 1 stream, or 8 interleaved streams each in its own region, then rewrite it
    the same way twice: every erase block dies whole, WA stays 1 in the oracle and the fluid model."""
    oracle = PageFTL(USER, 0.07, 256)
    size = int(0.9 * USER) // streams // 8 * 8
    files = [np.arange(i * size, (i + 1) * size) for i in range(streams)]
    order = interleave(files, 8)
    oracle.write(order)
    host, programmed = oracle.host, oracle.nand
    oracle.write(order)
    oracle.write(order)
    measured = (oracle.nand - programmed) / (oracle.host - host)
    fluid = fluid_like(oracle)
    total = size * streams
    fluid.write("f#1", total, ordered=True)
    predicted = (fluid.write("f#2", total, True, [Kill("f#1", total, True)]) + fluid.write("f#3", total, True, [Kill("f#2", total, True)])) / (2 * total)
    assert measured == pytest.approx(1.0, abs=0.01)
    assert predicted == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize("fill", [0.5, 0.9])
def test_sequential_writes_on_a_randomly_written_drive_pay_its_garbage_collection(fill: float) -> None:
    """A drive in random-write steady state at `fill` (SNIA PTS-E precondition): new sequential data into its
    free space, and a sequential rewrite of its data, both pay greedy GC on the scattered free space; the fluid
    model (precondition='random') agrees with the per-page oracle within 5 %."""
    oracle = PageFTL(USER, 0.1, 256)
    valid = int(fill * USER)
    pages = np.arange(valid)
    oracle.write(pages)
    random_overwrites(oracle, pages, 8 * valid, np.random.default_rng(2))
    new = int(min(0.3, 1.0 - fill) * USER)
    into_free = copy.deepcopy(oracle)
    host, programmed = into_free.host, into_free.nand
    into_free.write(np.arange(valid, valid + new))
    measured_new = (into_free.nand - programmed) / (into_free.host - host)
    host, programmed = oracle.host, oracle.nand
    oracle.write(pages)
    measured_rewrite = (oracle.nand - programmed) / (oracle.host - host)

    fluid = fluid_like(oracle)
    fluid.precondition({"h": valid}, "random")
    predicted_new = fluid.copy().write("n", new, True) / new
    predicted_rewrite = fluid.write("h2", valid, True, [Kill("h", valid, True)]) / valid
    print(f"\nfill {fill}: new data oracle {measured_new:.3f} fluid {predicted_new:.3f}; rewrite oracle {measured_rewrite:.3f} fluid {predicted_rewrite:.3f}")
    assert measured_new > 1.02 and measured_rewrite > 1.02
    assert predicted_new == pytest.approx(measured_new, rel=0.05)
    assert predicted_rewrite == pytest.approx(measured_rewrite, rel=0.05)


def fluid_checkpoints(user: float, oracle: PageFTL, size: float, per_pass: int, passes: int, spec: FilesystemSpec) -> list[dict[str, float]]:
    """The same passes through models.filesystem (placement, discard) and models.ftl (the NAND)."""
    ftl = fluid_like(oracle)
    fs = FileSpace(user, spec)
    out = []
    for p in range(passes):
        host, programmed, valid = ftl.host_bytes, ftl.nand_bytes, ftl.valid_fraction
        for s in range(per_pass):
            n = p * per_pass + s
            if n >= per_pass:
                gone = fs.delete(f"ckpt{n - per_pass}")
                ftl.discard([Kill(e.owner, e.nbytes, True) for e in gone if e.owner])
            owner, pieces = fs.allocate(f"ckpt{n}", size)
            ftl.write(owner, size, True, [Kill(e.owner, e.nbytes, True) for e in pieces if e.owner])
        out.append({"wa": (ftl.nand_bytes - programmed) / (ftl.host_bytes - host), "valid_start": valid})
    return out


@pytest.mark.parametrize(("share", "per_pass"), [(0.213, 3), (0.0266, 33)])
@pytest.mark.parametrize("discard", [False, True])
@pytest.mark.parametrize(("allocator", "layout"), [("next_fit", "time"), ("reuse", "time"), ("next_fit", "per_file")])
def test_checkpoint_passes_match_the_oracle(share: float, per_pass: int, discard: bool, allocator: str, layout: str) -> None:
    """StorageReview's geometries: 3 checkpoints of 21 % (drive 64 % full) and 33 of 2.7 % (88 %), 8 writers
    each, every checkpoint replacing the one a pass before; 10 % spare (the catalog drives' derived spare is
    4-25 %).  WA and the FTL-valid share at each pass start agree with the per-page oracle (next-fit without
    discard fills the drive's view to 100 %; TRIM or reuse keeps it at the filesystem's fill)."""
    oracle_out = checkpoint_passes(USER, 0.10, 256, share, per_pass, 3, policy=allocator, discard=discard, layout=layout)
    probe = PageFTL(USER, 0.10, 256)
    size = float(int(share * USER) // 8 // 8 * 8 * 8)
    spec = FilesystemSpec(allocator=allocator, discard="on_delete" if discard else "none")  # type: ignore[arg-type]
    fluid_out = fluid_checkpoints(USER, probe, size, per_pass, 3, spec)
    for o, f in zip(oracle_out, fluid_out, strict=True):
        assert f["wa"] == pytest.approx(o["wa"], rel=0.05)
        assert f["valid_start"] == pytest.approx(o["valid_start"], abs=0.01)
    full = 1.0 if allocator == "next_fit" and not discard else per_pass * size / USER
    assert fluid_out[2]["valid_start"] == pytest.approx(full, abs=0.01)


def test_precondition_population_holds_the_valid_bytes_at_the_lambert_w_victim_share() -> None:
    """The steady-state population conserves valid bytes (u x NAND) and its emptiest blocks hold the
    Lambert-W victim share x0 = 1 - 1 / WA(u)."""
    for u in (0.3, 0.7, 0.9):
        groups = steady_state_population(u, 1.0)
        assert sum(m for m, _ in groups) == pytest.approx(1.0)
        assert sum(v for _, v in groups) == pytest.approx(u, rel=1e-9)
        x0 = 1 - 1 / nand.greedy_write_amplification(u)
        assert groups[0][1] / groups[0][0] == pytest.approx(x0, rel=0.05)


@settings(max_examples=25, deadline=None)
@given(
    low=st.floats(0.05, 0.9), more=st.floats(0.0, 0.5), op=st.floats(0.04, 0.3), new=st.floats(0.01, 0.5),
    layout=st.sampled_from(["random", "sequential"]),
)
def test_more_valid_data_never_lowers_write_amplification(low: float, more: float, op: float, new: float, layout: str) -> None:
    """Theory (greedy GC): with more FTL-valid data in the same NAND, the same write of new data copies at
    least as much (to 0.1 %, the fluid model's resolution: groups within 0.4 % of one share are merged)."""
    high = min(0.95, low + more)
    was = []
    for valid in (low, high):
        ftl = FluidFTL(1.0, op)
        ftl.precondition({"data": valid}, layout)  # type: ignore[arg-type]
        size = new * (1.0 - high)
        was.append(ftl.write("new", size, True) / size)
    assert was[1] >= was[0] * (1 - 1e-3)


@settings(max_examples=25, deadline=None)
@given(
    live=st.floats(0.05, 0.6), stale=st.floats(0.05, 0.35), trimmed=st.floats(0.0, 1.0), op=st.floats(0.04, 0.3),
    new=st.floats(0.05, 1.0), layout=st.sampled_from(["random", "sequential"]),
)
def test_discard_never_raises_write_amplification(live: float, stale: float, trimmed: float, op: float, new: float, layout: str) -> None:
    """Theory: discarding stale data only turns valid pages into dead ones, so the same later writes never copy
    more (to 0.1 %, the fluid model's resolution); here new data overwrite the stale data (as a filesystem
    reuses freed space) after none or part of it was discarded."""
    was = []
    for share in (0.0, trimmed):
        ftl = FluidFTL(1.0, op)
        ftl.precondition({"live": live, "stale": stale}, layout)  # type: ignore[arg-type]
        ftl.discard([Kill("stale", stale * share, True)])
        size = new * stale
        left = ftl.owner_bytes("stale")
        was.append(ftl.write("new", size, True, [Kill("stale", min(size, left), True)]) / size)
    assert was[1] <= was[0] * (1 + 1e-3)
