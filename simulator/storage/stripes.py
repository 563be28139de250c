"""The striping law, once for both faces: how a request of b bytes over n striped drives is split.

p = min(n, floor(b / 4 KiB)) pieces (at least one) of b / p bytes each: a request covers one drive per page it
holds, up to all n, and a request smaller than two pages is one piece of its own size on one drive (a 6 KiB
request over 4 drives is one 6 KiB piece, a 2 KiB request one 2 KiB piece: the drive's own law prices a request
smaller than a page).  The fluid face (striped.StripedVolume) gives every drive 1/n of every byte at block b / p
and p / n of the outstanding requests; the per-request face (simulator/per_request/volume.py) sends the p pieces to
p consecutive drives and joins them.
"""

from __future__ import annotations

from iowatt.simulator.storage.contract import PAGE_BYTES


def split(width: int, block_bytes: float) -> tuple[int, float]:
    """(pieces per request, bytes per piece) of a request of `block_bytes` striped over `width` drives."""
    if width <= 1:
        return 1, block_bytes
    count = int(min(width, max(1.0, block_bytes // PAGE_BYTES)))
    return count, block_bytes / count
