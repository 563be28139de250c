"""models.host_io: page-cache thresholds, the buffered-write tank, DLIO's parameter count.

Oracles: the kernel's threshold arithmetic (mm/page-writeback.c), the closed
form of the fluid tank against its piecewise integration (two independent
computations), conservation of bytes, and Meta's published parameter counts.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import host_io

GB = 1e9


def test_dirty_thresholds_follow_the_kernel_arithmetic():
    """100 GB dirtyable, 20 % / 10 %: limit 20, background 10, freerun 15, setpoint 17.5 GB."""
    t = host_io.dirty_thresholds(100 * GB)
    assert t["limit"] == pytest.approx(20 * GB)
    assert t["background"] == pytest.approx(10 * GB)
    assert t["freerun"] == pytest.approx(15 * GB)
    assert t["setpoint"] == pytest.approx(17.5 * GB)
    # background at or above the limit is halved, as domain_dirty_limits() does
    assert host_io.dirty_thresholds(100 * GB, 0.10, 0.30)["background"] == pytest.approx(5 * GB)


def test_dirty_budget_excludes_the_memory_the_application_holds():
    """StorageReview's R760: 1,024 GB with the 824 GB optimizer state resident -> 17.5 % of 200 GB."""
    assert host_io.dirty_buffer_bytes(1024 * GB, 824 * GB) == pytest.approx(0.175 * 200 * GB)
    assert host_io.dirty_buffer_bytes(256 * GB, 415 * GB) == 0.0


def test_bad_inputs_name_the_field():
    with pytest.raises(ValueError, match="dirty_ratio"):
        host_io.dirty_thresholds(GB, 0.0)
    with pytest.raises(ValueError, match="rate"):
        host_io.serial_seconds_per_byte(0.0)


def test_serial_stages_add_their_times():
    """Two stages in one thread: 1/(1/a + 1/b); an infinite rate costs nothing."""
    assert 1.0 / host_io.serial_seconds_per_byte(4e9, 4e9) == pytest.approx(2e9)
    assert host_io.serial_seconds_per_byte(2e9, float("inf")) == pytest.approx(0.5e-9)


@settings(max_examples=50, deadline=None)
@given(
    size=st.floats(1 * GB, 5000 * GB), host=st.floats(0.1 * GB, 50 * GB), drive=st.floats(0.1 * GB, 20 * GB),
    buffer=st.floats(0.0, 500 * GB),
)
def test_closed_form_matches_the_piecewise_tank(size, host, drive, buffer):
    """max(S/H, (S-B)/D) for one phase equals the integration of the tank from empty."""
    closed = host_io.buffered_write_seconds(size, host, drive, buffer)
    integrated, dirty = host_io.phased_write_seconds([(size, host)], drive, buffer)
    assert integrated == pytest.approx(closed, rel=1e-9)
    # conservation: what the drive wrote plus what is still dirty is what was written
    if host > drive:
        assert drive * integrated + dirty == pytest.approx(size, rel=1e-6)  # the drive wrote from the first byte on
    else:
        assert dirty == 0.0  # the drive kept up: nothing is left dirty
    assert dirty <= buffer * (1 + 1e-9) + 1.0


@settings(max_examples=50, deadline=None)
@given(
    a=st.floats(1 * GB, 2000 * GB), b=st.floats(1 * GB, 2000 * GB), ha=st.floats(0.1 * GB, 30 * GB),
    hb=st.floats(0.1 * GB, 30 * GB), drive=st.floats(0.5 * GB, 15 * GB), buffer=st.floats(0.0, 200 * GB),
)
def test_phased_tank_is_bounded_by_host_and_drive(a, b, ha, hb, drive, buffer):
    """The save takes at least the host time and at least (bytes - buffer) / drive, and fsync takes all bytes / drive."""
    t, dirty = host_io.phased_write_seconds([(a, ha), (b, hb)], drive, buffer)
    assert t >= (a / ha + b / hb) * (1 - 1e-9)
    assert t >= (a + b - buffer) / drive * (1 - 1e-9)
    assert 0.0 <= dirty <= buffer * (1 + 1e-9) + 1.0
    # no more than the buffer can be left behind, and the drive never writes faster than its rate
    assert (a + b - dirty) <= drive * t * (1 + 1e-9) + 1.0


def test_fsync_waits_for_every_byte():
    assert host_io.buffered_write_seconds(100 * GB, 10 * GB, 2 * GB, 30 * GB, fsync=True) == pytest.approx(50.0)
    assert host_io.buffered_write_seconds(100 * GB, 10 * GB, 2 * GB, 30 * GB) == pytest.approx(35.0)
    assert host_io.buffered_write_seconds(100 * GB, 1 * GB, 2 * GB, 30 * GB) == pytest.approx(100.0)


@pytest.mark.parametrize(
    ("dims", "published"),
    [
        ((16384, 126, 53248, 128256, 128, 8), 405e9),  # Llama 3.1 405B model card
        ((4096, 32, 14336, 128256, 32, 8), 8.03e9),  # Llama 3 8B model card (8.03 B)
        ((8192, 80, 28672, 128256, 64, 8), 70.6e9),  # Llama 3 70B model card (70.6 B)
    ],
)
def test_dlio_parameter_count_matches_the_published_model_sizes(dims, published):
    assert host_io.dlio_transformer_parameters(*dims) == pytest.approx(published, rel=0.01)
