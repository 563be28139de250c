"""NAND flash translation layer laws: garbage collection, pSLC cache, endurance.

Pure functions, no simulation state.

Write amplification under greedy garbage collection (uniform random
overwrites, large number of blocks): with utilisation u = valid data /
physical NAND and a = 1/u, the victim block's valid share x0 solves
x0 = exp(-a (1 - x0)), whose closed form is
    x0 = -W0(-a exp(-a)) / a,      WA = 1 / (1 - x0)
(Desnoyers, "Analytic modeling of SSD write performance", SYSTOR 2012;
Hu et al., "Write amplification analysis in flash-based SSDs", SYSTOR 2009
give the same limit; Bux & Iliadis 2010 show greedy converges to it for
large blocks).  tests/test_ssd_laws.py checks it against a small
greedy-GC simulation.

The simulator's drives run the fluid model of models.ftl (what each write
kills, greedy GC over block groups); its steady state under uniform random
overwrites is this law, and models.ssd's closed forms use it directly.

Effective utilisation: a drive with over-provisioning op (spare NAND as a
share of user capacity) holding a share `fill` of its user LBAs as valid
data has u = fill / (1 + op).  Trimmed / never-written LBAs hold no data,
so they act as extra over-provisioning.

pSLC cache (dynamic): free blocks are programmed one bit per cell, so the
free NAND U (1 + op - fill) holds U (1 + op - fill) / bits_per_cell bytes in
SLC mode, capped by the firmware maximum.  Client reference: Solidigm P41
Plus 1 TB QLC writes ~3,000 MB/s for the first ~12 % of capacity, then
~262 MB/s (docs/sources.md W05); P44 Pro 2 TB TLC ~5 GB/s until 289 GB
(W06, W07); no reclaim while writing (W08).  No enterprise pSLC figure was
found (devices.yaml fill_and_steady_state), so catalog drives default to none.
"""

from __future__ import annotations

import math

BITS_PER_CELL = {"slc": 1, "mlc": 2, "tlc": 3, "qlc": 4}


def effective_utilisation(fill: float, over_provisioning: float) -> float:
    """Valid data / physical NAND for a drive holding `fill` of its user capacity."""
    if not 0.0 <= fill <= 1.0:
        raise ValueError(f"fill must be in [0, 1], found {fill!r}")
    if over_provisioning < 0.0:
        raise ValueError(f"over-provisioning must be >= 0, found {over_provisioning!r}")
    return fill / (1.0 + over_provisioning)


def greedy_write_amplification(utilisation: float) -> float:
    """Steady-state WA of greedy GC under uniform random overwrites (Lambert-W form).

    1 at utilisation 0 (nothing valid to move), growing without bound as the
    utilisation approaches 1 (no spare space)."""
    if not 0.0 <= utilisation < 1.0:
        raise ValueError(f"utilisation must be in [0, 1), found {utilisation!r}")
    if utilisation < 1e-6:
        return 1.0
    a = 1.0 / utilisation
    from scipy.special import lambertw  # lazy: scipy costs ~0.3 s of every CLI start

    x0 = -float(lambertw(-a * math.exp(-a), 0).real) / a
    return 1.0 / (1.0 - x0)


def steady_state_wa(fill: float, over_provisioning: float) -> float:
    """Greedy WA at the effective utilisation of a drive `fill` full."""
    return greedy_write_amplification(effective_utilisation(fill, over_provisioning))


def slc_cache_bytes(
    capacity_bytes: float, fill: float, over_provisioning: float, nand: str, max_fraction: float
) -> float:
    """Dynamic pSLC cache size: free NAND in one-bit mode, capped at max_fraction x capacity."""
    if max_fraction <= 0.0:
        return 0.0
    free = capacity_bytes * max(0.0, 1.0 + over_provisioning - fill)
    return min(max_fraction * capacity_bytes, free / BITS_PER_CELL[nand])


def rated_nand_bytes(capacity_bytes: float, dwpd: float, warranty_years: float, rating_wa: float = 1.0) -> float:
    """NAND bytes the rating allows: DWPD x capacity x 365 x years x the rating workload's WA.

    Ratings quoted for 128 KiB sequential writes (Micron 6550, S10) have WA ~1."""
    return dwpd * capacity_bytes * 365.0 * warranty_years * rating_wa


def endurance(
    capacity_bytes: float,
    host_bytes: float,
    nand_bytes: float,
    seconds: float,
    dwpd: float | None,
    warranty_years: float,
    rating_wa: float = 1.0,
) -> dict[str, float]:
    """Drive writes per day at the simulated rate and years to the rated endurance."""
    days = seconds / 86400.0
    dwpd_rate = host_bytes / capacity_bytes / days if days > 0 else 0.0
    nand_dwpd = nand_bytes / capacity_bytes / days if days > 0 else 0.0
    years = math.inf
    if dwpd is not None and nand_dwpd > 0:
        budget = rated_nand_bytes(capacity_bytes, dwpd, warranty_years, rating_wa)
        years = max(0.0, budget - nand_bytes) / (nand_dwpd * capacity_bytes * 365.0)
    return {"dwpd_at_rate": dwpd_rate, "nand_dwpd_at_rate": nand_dwpd, "years_to_rated_endurance": years}
