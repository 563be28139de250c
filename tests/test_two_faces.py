"""Both faces of one runtime on the same requests (issue 29): the fluid face (flows over the drives' constraints)
and the per-request face (Drive/Volume.request_server) read one striping law and one set of drive laws.

Oracle: the per-request face is an independent simulation of the same devices, one request at a time (flash units
as processor-sharing servers, an actuator drawing seek and rotation per command); where the fluid law claims to be
exact (requests of one piece) the two must agree within the referee's 3 % (tests/test_per_request_referee.py).
The cases are the two the striping law got wrong twice before it lived in one place (simulator/storage/stripes.py):
a 6 KiB request over 4 drives (the fluid face took 1.5 pieces of 4 KiB, the per-request face one piece of 6 KiB)
and a 2 KiB request (priced as 4 KiB by the fluid face, as 2 KiB by the per-request face).
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.simulator.storage import PAGE_BYTES
from iowatt.simulator.storage.stripes import split

from tests.test_per_request_referee import TOLERANCE, compare


@pytest.mark.parametrize(("block", "depth"), [(6144, 1), (6144, 32), (2048, 1), (2048, 32)])
def test_sub_stripe_requests_agree_on_both_faces(block: int, depth: int) -> None:
    gaps = compare("micron-7450-pro", 4, "randread", block, depth)
    for name, gap in gaps.items():
        assert abs(gap) <= TOLERANCE, (block, depth, name, gaps)


@settings(max_examples=200, deadline=None)
@given(width=st.integers(1, 64), block=st.floats(512.0, 64 * 2**20))
def test_the_striping_law_conserves_bytes_and_drives(width: int, block: float) -> None:
    """Conservation: the pieces add up to the request, there is at least one and never more than the drives, and
    each piece but a lone one holds at least a page (oracle: the law's own statement, stripes.split's docstring)."""
    count, piece = split(width, block)
    assert 1 <= count <= width
    assert count * piece == pytest.approx(block)
    if count > 1:
        assert piece >= PAGE_BYTES
