"""What the drive holds, and what garbage collection costs: a fluid (mean-field) model of an SSD's NAND.

Pure state and laws, no SimPy; simulator/storage/ssd.py drives it and
tests/test_ftl_oracle.py checks it against a per-page FTL simulation
(tests/ftl_oracle.py: pages, erase blocks, a mapping table, greedy GC).

Drive-visible data.  The FTL holds a logical block as valid from the moment
it is written until it is overwritten or discarded (TRIM); a file the
filesystem deletes without discard stays valid to the drive.  Valid data
belong to *owners* (one incarnation of a file, the data a drive was given
with, ...), so that a later overwrite or discard can say whose data die.

The NAND is a set of block *groups*: erase blocks written together, each
group with its physical bytes (`mass`) and the valid bytes it still holds
per owner.  Greedy garbage collection (Desnoyers, SYSTOR 2012; Hu et al.,
SYSTOR 2009) takes the blocks with the smallest valid share, copies their
valid bytes and erases them; in the fluid limit (many blocks, many pages per
block) every block of a group has the group's valid share, so the victim is
the group with the smallest share and the copy costs share / (1 - share)
programmed bytes per byte freed.  Write amplification is not a formula
applied to a stream but what this process programs per host byte:

- a stream whose old data die whole erase blocks at a time in the order they
  were written (one sequential writer, or interleaved writers whose files are
  all replaced together, as a checkpoint is) leaves dead blocks behind it:
  they are erased without copying, WA = 1 at any fill (*ordered* data, kept
  with their position in the owner's write order; a filesystem that
  allocates in time order, as ext4 does at writeback from one goal, rewrites
  stale data in that order);
- data whose logical order is unrelated to their physical order (random
  writes, or what a random precondition left) die spread over many blocks
  (*dispersed* kills): every block of the group loses the same share, and GC
  has to copy what is left.  Uniform random overwrites at utilisation u then
  settle at the Lambert-W law of models.nand (the same mean-field limit);
- fresh out of box the NAND is free: nothing is copied until the free pool
  is spent, and WA rises from 1 to the steady state over the next drive
  writes, as SNIA's PTS-E preconditioning shows (an emergent transition, not
  a step).

Not resolved: interleaved writers whose files the filesystem lays out apart
(per-file extents) with requests interleaved in every erase block (O_DIRECT)
leave blocks that a later write kills only partly; when the free pool runs
out before the rest dies, greedy GC keeps copying pages just ahead of the
overwrite, a per-block cascade a fluid model does not see (the per-page
oracle gives WA 1.5-1.8 for two 40 % checkpoints of 2 files at 10 % spare,
WA 1.0 for the StorageReview geometries at the catalog drives' spare).

A drive handed over in use (`precondition`) starts either with its valid
data in one ordered group per owner (`sequential`: a sequential fill) or in
the greedy steady state of uniform random writes at its utilisation
(`random`, SNIA PTS-E steady state): block valid shares spread over
[x0, 1] with block density proportional to 1 / share (the mean-field
population above the victim level: blocks decay at a rate proportional to
their valid pages; x0 is the Lambert-W victim share), and no free block left.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from iowatt.models import nand

Precondition = Literal["random", "sequential"]

# A write is applied in steps of at most this share of the user capacity: the kills, garbage collection
# and allocation of one step happen together.  Dispersed kills need small steps (the victims' valid
# share moves with every step); 0.5 % keeps the random steady state within 1 % of the Lambert-W law
# (tests/test_ftl_oracle.py) and a 3-pass, 99-checkpoint study under 10^3 steps.
STEP_SHARE = 0.005
# Dispersed groups of the same owners whose valid shares differ by less than this are merged (bounded state).
MERGE_SHARE = 0.004
# Blocks in the `random` precondition population (quantiles of the steady-state distribution).
PRECONDITION_GROUPS = 64
_EPS = 1e-12


@dataclass
class Group:
    """Erase blocks written together: physical bytes (`mass`) and valid bytes per owner.

    Ordered groups hold one owner's data from position `lo` to `hi` of its write order (bytes
    as first written; mass and valid bytes spread evenly over the range)."""

    mass: float
    valid: dict[str, float]
    ordered: bool = False
    lo: float = 0.0
    hi: float = 0.0

    @property
    def valid_bytes(self) -> float:
        return sum(self.valid.values())

    @property
    def share(self) -> float:
        return self.valid_bytes / self.mass if self.mass > _EPS else 1.0

    def cut(self, fraction: float) -> Group:
        """Take the front `fraction` of this group (its lowest positions) off as a new group."""
        span = (self.hi - self.lo) * fraction
        part = Group(self.mass * fraction, {o: v * fraction for o, v in self.valid.items()}, self.ordered, self.lo, self.lo + span)
        self.mass -= part.mass
        for o, v in part.valid.items():
            self.valid[o] -= v
        self.lo += span
        return part


@dataclass(frozen=True)
class Kill:
    """`nbytes` of `owner`'s valid data die during a write (overwritten) or at once (discarded).

    `ordered`: they die in the order they were written, whole blocks at a time (a sequential
    rewrite of sequentially written data); otherwise spread over the owner's blocks."""

    owner: str
    nbytes: float
    ordered: bool


@dataclass
class FluidFTL:
    """The NAND of one drive as groups of blocks under greedy garbage collection (module docstring)."""

    user_bytes: float
    over_provisioning: float
    groups: list[Group] = field(default_factory=list)
    host_bytes: float = 0.0
    nand_bytes: float = 0.0
    written: dict[str, float] = field(default_factory=dict)
    relocated_bytes: float = 0.0

    def __post_init__(self) -> None:
        if not self.user_bytes > 0.0:
            raise ValueError(f"user_bytes: expected > 0, found {self.user_bytes!r}")
        if self.over_provisioning <= 0.0:
            raise ValueError(f"over_provisioning: expected > 0 (garbage collection needs spare NAND), found {self.over_provisioning!r}")
        self.physical_bytes = self.user_bytes * (1.0 + self.over_provisioning)
        self.free = self.physical_bytes - sum(g.mass for g in self.groups)

    # ------------------------------------------------------------ state
    @property
    def valid_bytes(self) -> float:
        return sum(g.valid_bytes for g in self.groups)

    @property
    def valid_fraction(self) -> float:
        """FTL-valid share of the user capacity (what the drive holds as data)."""
        return self.valid_bytes / self.user_bytes

    def owner_bytes(self, owner: str) -> float:
        return sum(g.valid.get(owner, 0.0) for g in self.groups)

    def owners(self) -> dict[str, float]:
        """Valid bytes per owner."""
        out: dict[str, float] = {}
        for g in self.groups:
            for o, v in g.valid.items():
                out[o] = out.get(o, 0.0) + v
        return out

    def copy(self) -> FluidFTL:
        groups = [Group(g.mass, dict(g.valid), g.ordered, g.lo, g.hi) for g in self.groups]
        return FluidFTL(self.user_bytes, self.over_provisioning, groups, self.host_bytes, self.nand_bytes, dict(self.written), self.relocated_bytes)

    # ------------------------------------------------------------ initial state
    def precondition(self, owners: dict[str, float], layout: Precondition) -> None:
        """Start with `owners`' valid bytes already written (`layout`: how, module docstring)."""
        total = sum(owners.values())
        if total <= _EPS:
            return
        if total > self.user_bytes * (1.0 + 1e-9):
            raise ValueError(f"precondition: {total:.4g} valid bytes exceed the user capacity {self.user_bytes:.4g}")
        if self.groups:
            raise ValueError("precondition: the drive already holds data")
        if layout == "sequential":
            for owner, nbytes in owners.items():
                if nbytes > 0.0:
                    self.groups.append(Group(nbytes, {owner: nbytes}, True, 0.0, nbytes))
                    self.written[owner] = nbytes
        elif layout == "random":
            shares = {o: b / total for o, b in owners.items() if b > 0.0}
            for mass, valid in steady_state_population(total / self.physical_bytes, self.physical_bytes):
                self.groups.append(Group(mass, {o: valid * s for o, s in shares.items()}))
        else:
            raise ValueError(f"precondition: expected 'random' or 'sequential', found {layout!r}")
        self.free = self.physical_bytes - sum(g.mass for g in self.groups)

    # ------------------------------------------------------------ operations
    def write(self, owner: str, nbytes: float, ordered: bool, kills: list[Kill] = ()) -> float:  # type: ignore[assignment]
        """Program `nbytes` host bytes of `owner` while `kills` die in proportion; returns NAND bytes programmed.

        `ordered`: the new data continue the owner's write order (one sequential stream); otherwise
        they are dispersed data (random writes)."""
        if nbytes < 0.0:
            raise ValueError(f"write: bytes must be >= 0, found {nbytes!r}")
        if nbytes == 0.0:
            return 0.0
        start = self.relocated_bytes
        steps = max(1, math.ceil(nbytes / (STEP_SHARE * self.user_bytes)))
        delta = nbytes / steps
        for _ in range(steps):
            for k in kills:
                self._kill(k.owner, k.nbytes / steps, k.ordered)
            self._collect(delta)
            self._place(owner, delta, ordered)
            if len(self.groups) > 4 * PRECONDITION_GROUPS:
                self._tidy()
        self._tidy()
        return nbytes + (self.relocated_bytes - start)

    def discard(self, kills: list[Kill]) -> None:
        """TRIM: the data die now (whole blocks of ordered data are free at once)."""
        for k in kills:
            self._kill(k.owner, k.nbytes, k.ordered)
        self._tidy()

    def write_amplification_ahead(self, owner: str, nbytes: float, ordered: bool, kills: list[Kill] = ()) -> float:  # type: ignore[assignment]
        """WA the next `nbytes` of such a write would have, without changing this state."""
        if nbytes <= 0.0:
            return 1.0
        return self.copy().write(owner, nbytes, ordered, kills) / nbytes

    # ------------------------------------------------------------ internals
    def _place(self, owner: str, nbytes: float, ordered: bool) -> None:
        """Program new host data into free blocks (ordered data continue the owner's write order)."""
        pos = self.written.get(owner, 0.0)
        last = self.groups[-1] if self.groups else None
        if (ordered and last is not None and last.ordered and set(last.valid) == {owner}
                and abs(last.hi - pos) <= _EPS * self.user_bytes and last.share >= 1.0 - 1e-12):
            group = last  # the blocks this write is filling
        else:
            group = Group(0.0, {owner: 0.0}, ordered, pos, pos)
            self.groups.append(group)
        group.mass += nbytes
        group.valid[owner] += nbytes
        group.hi += nbytes
        self.written[owner] = pos + nbytes
        self.free -= nbytes
        self.host_bytes += nbytes
        self.nand_bytes += nbytes

    def _kill(self, owner: str, nbytes: float, ordered: bool) -> None:
        """`nbytes` of `owner` die.  Ordered: its ordered blocks from the lowest position up, whole
        blocks; whatever is left dies spread over all of the owner's blocks."""
        need = min(nbytes, self.owner_bytes(owner))
        if need <= _EPS * self.user_bytes:
            return
        if ordered:
            front = sorted((g for g in self.groups if g.ordered and g.valid.get(owner, 0.0) > _EPS), key=lambda x: x.lo)
            for g in front:
                if need <= _EPS * self.user_bytes:
                    break
                part = g.cut(min(1.0, need / g.valid[owner]))
                need -= part.valid[owner]
                self.free += part.mass  # the blocks died whole: erased without copying
        if need > _EPS * self.user_bytes:
            held = [g for g in self.groups if g.valid.get(owner, 0.0) > _EPS]
            total = sum(g.valid[owner] for g in held)
            if total > _EPS:
                factor = max(0.0, 1.0 - need / total)
                for g in held:
                    g.valid[owner] *= factor

    def _collect(self, needed: float) -> None:
        """Greedy GC until `needed` bytes are free: the smallest-share blocks (lowest position first among
        equals) are copied and erased; the copies keep their data's kind and position."""
        while self.free < needed - _EPS * self.physical_bytes:
            candidates = [g for g in self.groups if g.mass > _EPS * self.user_bytes]
            if not candidates:
                raise RuntimeError("garbage collection found no block to reclaim")
            victim = min(candidates, key=lambda g: (round(g.share, 9), g.lo))
            share = victim.share
            if share >= 1.0 - 1e-9:
                raise RuntimeError(
                    f"garbage collection: every block is full of valid data ({self.valid_bytes:.4g} of {self.physical_bytes:.4g} NAND bytes)"
                )
            mass = min(victim.mass, (needed - self.free) / (1.0 - share))
            copy = victim.cut(mass / victim.mass)
            moved = copy.valid_bytes
            copy.mass = moved
            self.groups.append(copy)
            self.free += mass - moved
            self.nand_bytes += moved
            self.relocated_bytes += moved

    def _tidy(self) -> None:
        """Drop emptied groups; merge neighbouring ordered groups and dispersed groups of nearly one share."""
        kept: list[Group] = []
        for g in self.groups:
            g.valid = {o: v for o, v in g.valid.items() if v > _EPS * self.user_bytes}
            if g.mass <= _EPS * self.user_bytes or not g.valid:
                self.free += g.mass  # nothing valid left: erased without copying
                continue
            kept.append(g)
        merged: list[Group] = []
        for g in sorted(kept, key=lambda x: (x.ordered, tuple(sorted(x.valid)), x.lo if x.ordered else x.share)):
            last = merged[-1] if merged else None
            if last is not None and g.ordered == last.ordered and set(g.valid) == set(last.valid):
                touching = abs(g.lo - last.hi) <= 1e-9 * self.user_bytes and abs(g.share - last.share) < 1e-9
                similar = not g.ordered and abs(g.share - last.share) < MERGE_SHARE
                if touching or similar:
                    for o, v in g.valid.items():
                        last.valid[o] += v
                    last.mass += g.mass
                    last.hi = max(last.hi, g.hi)
                    continue
            merged.append(g)
        self.groups = merged


def steady_state_population(utilisation: float, physical_bytes: float, groups: int = PRECONDITION_GROUPS) -> list[tuple[float, float]]:
    """(mass, valid bytes) of block groups in the greedy steady state of uniform random overwrites.

    Block density proportional to 1 / share on [x0, 1] (module docstring), cut into `groups`
    equal-mass quantiles: share v_k = x0^(1 - k / groups); a quantile's valid bytes are its mass
    times the mean share over it, (v_{k+1} - v_k) / ln(v_{k+1} / v_k).  Valid bytes add up to
    utilisation x physical_bytes (the x0 equation 1 - x0 = u ln(1 / x0))."""
    if not 0.0 < utilisation < 1.0:
        raise ValueError(f"utilisation: expected in (0, 1), found {utilisation!r}")
    x0 = 1.0 - 1.0 / nand.greedy_write_amplification(utilisation)
    # ln x0 = -(1 - x0) / u (the x0 equation), kept in logs: x0 underflows below u ~ 0.0015
    log_x0 = math.log(x0) if x0 > 1e-300 else -(1.0 - x0) / utilisation
    mass = physical_bytes / groups
    step = -log_x0 / groups  # ln(v_{k+1} / v_k)
    out = []
    for k in range(groups):
        lo, hi = math.exp(log_x0 * (1.0 - k / groups)), math.exp(log_x0 * (1.0 - (k + 1) / groups))
        out.append((mass, mass * (hi - lo) / step))
    return out
