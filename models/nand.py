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
    x0 = -lambert_w0(-a * math.exp(-a)) / a
    return 1.0 / (1.0 - x0)


def greedy_utilisation(write_amplification: float) -> float:
    """The utilisation at which greedy GC has this WA: the inverse of greedy_write_amplification in closed form.

    x0 = 1 - 1/WA, and x0 = exp(-a (1 - x0)) gives a = -ln(x0) / (1 - x0), u = 1/a."""
    if not write_amplification > 1.0:
        raise ValueError(f"write amplification must be > 1, found {write_amplification!r}")
    return -1.0 / (write_amplification * math.log1p(-1.0 / write_amplification))


def lambert_w0(z: float) -> float:
    """Principal branch of the Lambert W function for z in [-1/e, 0] (w e^w = z, w in [-1, 0]).

    Halley's iteration in pure Python, so the CLI does not import scipy.special (~0.1-0.3 s per start);
    tests/test_ssd_laws.py checks it against scipy.special.lambertw."""
    if not -1.0 / math.e - 1e-15 <= z <= 0.0:
        raise ValueError(f"z must be in [-1/e, 0], found {z!r}")
    if z == 0.0:
        return 0.0
    p2 = 2.0 * (math.e * z + 1.0)
    if p2 < 0.5:  # near the branch point: its series in p = sqrt(2 (e z + 1)) (Corless et al. 1996, eq. 4.22)
        p = math.sqrt(max(p2, 0.0))
        w = -1.0 + p - p * p / 3.0 + 11.0 / 72.0 * p**3
    else:
        w = math.log1p(z)  # within ~0.3 of the root on the rest of the interval
    for _ in range(64):
        ew = math.exp(w)
        f = w * ew - z
        if f == 0.0 or w == -1.0:
            break
        step = f / (ew * (w + 1.0) - (w + 2.0) * f / (2.0 * w + 2.0))
        w -= step
        if abs(step) <= 4e-16 * max(1.0, abs(w)):
            break
    return w


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
