"""Service-time spread of one request: lognormal factors of mean one, from the datasheet QoS or a fit.

A read's time at its flash unit is its mean (the concurrency law's L0, so the
mean law is untouched: the units are processor-sharing, see units.py) times a
factor F = exp(sigma Z - sigma^2 / 2), Z standard normal, E[F] = 1.  At QD1 a
4 KiB read is alone at its unit, so its latency is L0 x F and the datasheet
QoS figures pin sigma:  p_q = L0 exp(sigma z_q - sigma^2 / 2)  for the
published quantiles q (99 %, 99.99 %), solved by least squares in log when both
are given.  A write's acknowledgement latency from the power-protected buffer
gets the same kind of factor with its own sigma.  `iowatt calibrate` fits both
from a fio bundle's clat histograms (calibration.latency) into the profile.

Where nothing is published or fitted the spreads are assumed:
  read_sigma 0.25 (READ_SIGMA below, with its range): NAND array reads take a fixed tR, so the spread
    comes from read retries, plane conflicts and ECC; 0.25 puts the QD1
    p99 at 1.7 x and p99.99 at 2.5 x the mean, the order of the QoS ratios
    enterprise NVMe datasheets quote (e.g. ~0.2 ms at 99.99 % against
    ~80 us typical); no catalog drive publishes its own.
  write_sigma 0.15 (WRITE_SIGMA): a buffered write is a DMA into DRAM and a
    completion, with less variation than a NAND read; assumed smaller.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from iowatt.models.ssd import SSDSpec
from iowatt.models.uncertainty import assumed_constant, constant

READ_SIGMA = assumed_constant(
    "simulator.per_request.latency.read_sigma", 0.25, low=0.1, high=0.45,
    note="module docstring: NAND reads take a fixed tR, so the spread comes from read retries, plane conflicts and "
    "ECC; 0.25 puts the QD1 p99 at 1.7 x and p99.99 at 2.5 x the mean",
    range_note="low: 0.1, p99.99 at 1.4 x the mean, a drive whose reads almost never retry; high: 0.45, p99.99 at "
    "4.8 x the mean, a 99.99 % QoS of ~0.4 ms on an ~80 us read, the loose end of the figures enterprise NVMe "
    "datasheets quote")
WRITE_SIGMA = assumed_constant(
    "simulator.per_request.latency.write_sigma", 0.15, low=0.05, high=0.25,
    note="module docstring: a buffered write is a DMA into DRAM and a completion, with less variation than a NAND read",
    range_note="low: 0.05, a DMA and a completion with almost no variation; high: 0.25, as much spread as the read "
    "default (a buffered write is not taken to vary more than a NAND read)")
BATCH = 8192  # factors drawn at once (numpy), then handed out one by one
_Z = NormalDist()


class Factors:
    """An endless stream of lognormal factors of mean one with log standard deviation `sigma` (1.0 when sigma = 0)."""

    __slots__ = ("_buffer", "_i", "rng", "sigma")

    def __init__(self, rng: np.random.Generator, sigma: float) -> None:
        self.rng = rng
        self.sigma = float(sigma)
        self._buffer: list[float] = []
        self._i = 0

    def next(self) -> float:
        if self.sigma == 0.0:
            return 1.0
        if self._i >= len(self._buffer):
            s = self.sigma
            self._buffer = np.exp(s * self.rng.standard_normal(BATCH) - 0.5 * s * s).tolist()
            self._i = 0
        value = self._buffer[self._i]
        self._i += 1
        return value


def lognormal_quantile(sigma: float, q: float) -> float:
    """The q-quantile (0 < q < 1) of a mean-one lognormal factor."""
    return math.exp(sigma * _Z.inv_cdf(q) - 0.5 * sigma * sigma)


def sigma_from_quantiles(mean_s: float, quantiles: list[tuple[float, float]]) -> float:
    """sigma whose mean-`mean_s` lognormal passes closest (in log) through the (q, latency_s) points."""
    points = [(q, t) for q, t in quantiles if t > 0.0]
    if not points:
        raise ValueError("sigma_from_quantiles: no quantile given")

    def cost(sigma: float) -> float:
        return sum((math.log(mean_s * lognormal_quantile(sigma, q)) - math.log(t)) ** 2 for q, t in points)

    low, high = 0.0, 3.0
    for _ in range(100):  # golden-section search: the cost is unimodal in sigma on [0, 3]
        a = high - (high - low) * 0.6180339887
        b = low + (high - low) * 0.6180339887
        if cost(a) <= cost(b):
            high = b
        else:
            low = a
    return 0.5 * (low + high)


def read_sigma(spec: SSDSpec) -> tuple[float, str]:
    """(sigma of a read's unit time, where it comes from): fitted > datasheet QoS > assumed."""
    if spec.read_latency_sigma is not None:
        return spec.read_latency_sigma, "profile (read_latency_sigma)"
    qos = [(q, v * 1e-6) for q, v in ((0.99, spec.read_latency_p99_us), (0.9999, spec.read_latency_p9999_us)) if v is not None]
    if qos:
        return sigma_from_quantiles(spec.read_latency_us * 1e-6, qos), "datasheet QoS (read_latency_p99_us / p9999_us)"
    return constant(READ_SIGMA.name), "assumed (simulator/per_request/latency.py)"


def write_sigma(spec: SSDSpec) -> tuple[float, str]:
    if spec.write_latency_sigma is not None:
        return spec.write_latency_sigma, "profile (write_latency_sigma)"
    return constant(WRITE_SIGMA.name), "assumed (simulator/per_request/latency.py)"
