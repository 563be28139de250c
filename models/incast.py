"""TCP incast: the fan-in of a striped read into one client's switch port (Phanishayee et al., FAST 2008).

A client reads a block striped over S storage nodes and asks for the next
block only when every node has answered (a synchronized read).  The S answers
of SRU bytes each arrive at once at the client's switch port; when they
overflow its buffer, some flow loses the tail of its window, cannot recover by
fast retransmit, and waits for TCP's retransmission timeout, at least RTOmin =
200 ms on Linux, while the link idles (Phanishayee, Krevat, Vasudevan,
Andersen, Ganger, Gibson & Seshan, "Measurement and Analysis of TCP Throughput
Collapse in Cluster-based Storage Systems", FAST 2008; pdl.cmu.edu/Incast).
Goodput collapses once S x SRU exceeds the port's buffer.

Law (assumed shape around the paper's threshold): a block whose answers hold
S x SRU bytes loses, on average, the share 1 - buffer / (S x SRU) of them when
that is positive; the chance that the block waits one RTO is that share (no
overflow: no timeout; an answer far above the buffer: a timeout nearly
always).  The expected stall RTO x P is added to the request's latency, so a
client with one block in flight loses the paper's goodput,
B / (B / C + P x RTOmin), and a client with many in flight loses less (other
blocks use the link meanwhile), by Little's law.
"""

from __future__ import annotations

import math

from iowatt.models.uncertainty import assumed_field
from pydantic import BaseModel, ConfigDict, Field

# Linux TCP_RTO_MIN = HZ / 5 = 200 ms (the minimum the paper measures the collapse with).
RTO_MIN_S = 0.2
# Buffer per switch port: a shared-buffer data-centre ASIC's pool spread over its ports (an assumed_field below).
SWITCH_BUFFER_BYTES_PER_PORT = 2.0**20


class IncastConfig(BaseModel):
    """TCP incast at the clients' switch ports (models.incast); only TCP fabrics lose packets this way."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    switch_buffer_bytes_per_port: float = assumed_field(
        SWITCH_BUFFER_BYTES_PER_PORT, low=2.0**18, high=2.0**22, shape="log-uniform", gt=0,
        description="buffer a client's switch port holds (1 MiB: Trident4's 64 MB shared over 64 ports)",
        note="a shared-buffer data-centre ASIC's pool spread over its ports: Broadcom Trident4, 64 MB shared "
        "(aicplight.com on switch buffer management) over 64 ports",
        range_note="low: 256 KiB, the per-port share of a 32 MB shared buffer over 128 ports (a Trident3-class 25 GbE "
        "switch); high: 4 MiB, what a dynamic-threshold pool lets one congested port take of Trident4's 64 MB when "
        "16 ports are busy at once")
    rto_min_s: float = Field(default=RTO_MIN_S, gt=0, description="TCP minimum retransmission timeout (Linux: 200 ms)")


def timeout_probability(senders: float, sru_bytes: float, buffer_bytes: float) -> float:
    """Chance that a synchronized block of `senders` answers of `sru_bytes` each waits one RTO (module docstring)."""
    if senders <= 0.0 or sru_bytes <= 0.0:
        return 0.0
    burst = senders * sru_bytes
    return max(0.0, 1.0 - buffer_bytes / burst) if math.isfinite(burst) else 1.0


def stall_s(senders: float, sru_bytes: float, config: IncastConfig) -> float:
    """Expected time a block waits on retransmission timeouts."""
    return timeout_probability(senders, sru_bytes, config.switch_buffer_bytes_per_port) * config.rto_min_s


def goodput_Bps(block_bytes: float, senders: float, link_Bps: float, config: IncastConfig) -> float:
    """The paper's goodput of one client with one synchronized block in flight."""
    return block_bytes / (block_bytes / link_Bps + stall_s(senders, block_bytes / senders, config))
