"""Latencies the way fio reports them: its log-linear histogram, its percentiles and its json+ bins.

fio keeps completion latencies (ns) in buckets of 64 per power of two: a value
below 128 ns is its own bucket; above, with msb the index of its highest set
bit and e = msb - 6, it falls in bucket (e + 1) x 64 + ((v >> e) & 63), whose
representative value is 2^(e + 6) + (k + 0.5) 2^e (k = bucket mod 64), 29
groups in all (fio's stat.h: FIO_IO_U_PLAT_BITS = 6, FIO_IO_U_PLAT_GROUP_NR =
29), i.e. better than 1 % resolution.  A percentile p is the representative of
the first bucket where the running count reaches p / 100 of all samples, and
json+ lists every non-empty bucket as {representative ns: count}.  Reporting
through the same buckets lets simulated and measured percentiles be compared
bucket for bucket.
"""

from __future__ import annotations

import numpy as np

PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
GROUPS = 29
BUCKETS = GROUPS * PLAT_VAL
DEFAULT_PERCENTILES = [1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99]


def bucket_index(values_ns: np.ndarray) -> np.ndarray:
    """fio's bucket of each latency (ns, >= 0)."""
    v = np.maximum(np.asarray(values_ns, dtype=np.int64), 0)
    out = v.copy()
    big = v >= 2 * PLAT_VAL
    msb = np.frexp(v[big].astype(np.float64))[1] - 1
    # float rounding can push a value just below a power of two up one exponent: check against the integer
    msb = np.where((v[big] >> msb) == 0, msb - 1, msb)
    error_bits = msb - PLAT_BITS
    out[big] = ((error_bits + 1) << PLAT_BITS) + ((v[big] >> error_bits) & (PLAT_VAL - 1))
    return np.minimum(out, BUCKETS - 1)


def bucket_value(index: np.ndarray) -> np.ndarray:
    """The representative latency (ns) of each bucket, as fio prints it (integer part)."""
    idx = np.asarray(index, dtype=np.int64)
    out = idx.astype(np.float64)
    big = idx >= 2 * PLAT_VAL
    error_bits = (idx[big] >> PLAT_BITS) - 1
    base = np.left_shift(np.int64(1), error_bits + PLAT_BITS).astype(np.float64)
    out[big] = base + ((idx[big] % PLAT_VAL) + 0.5) * np.left_shift(np.int64(1), error_bits).astype(np.float64)
    return np.floor(out)


def counts(latencies_s: np.ndarray) -> np.ndarray:
    """Bucket counts of latencies given in seconds."""
    ns = np.rint(np.asarray(latencies_s, dtype=np.float64) * 1e9)
    return np.bincount(bucket_index(ns), minlength=BUCKETS)


def percentiles_ns(bucket_counts: np.ndarray, percentiles: list[float]) -> dict[float, float]:
    """fio's percentiles from bucket counts."""
    total = int(bucket_counts.sum())
    if total == 0:
        return {p: 0.0 for p in percentiles}
    running = np.cumsum(bucket_counts)
    out = {}
    for p in percentiles:
        index = int(np.searchsorted(running, p / 100.0 * total, side="left"))
        out[p] = float(bucket_value(np.array([min(index, BUCKETS - 1)]))[0])
    return out


def bins(bucket_counts: np.ndarray) -> dict[str, int]:
    """json+ bins: {representative ns: count} of the non-empty buckets."""
    nonzero = np.nonzero(bucket_counts)[0]
    values = bucket_value(nonzero)
    return {str(int(v)): int(c) for v, c in zip(values, bucket_counts[nonzero], strict=True)}


def percentile_key(p: float) -> str:
    """fio's JSON key of a percentile: '99.000000'."""
    return f"{p:.6f}"
