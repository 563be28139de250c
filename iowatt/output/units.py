"""The unit a metric's name states (docs/architecture.md: the unit is in the name, `_seconds`, `_GBps`, `_J`, ...).

Tables print it beside the value; a result's own `units` (names that do not say their unit, such as DLIO's MB/s,
which is MiB/s) take precedence.  Decimal prefixes are decimal (MB = 1e6 B), as in the README.
"""

from __future__ import annotations

# (name ending, unit), the longer and more specific endings first
_ENDINGS: tuple[tuple[str, str], ...] = (
    ("_MiB_per_second", "MiB/s"), ("_MB_per_second", "MB/s"), ("_GiB_per_second", "GiB/s"), ("_GB_per_second", "GB/s"),
    ("_MBps", "MB/s"), ("_GBps", "GB/s"), ("_GiBps", "GiB/s"),
    ("_samples_per_second", "samples/s"), ("iterations_per_second", "iterations/s"),
    ("_per_GB_J", "J/GB"), ("_per_io_uJ", "uJ/IO"), ("_W_per_drive", "W per drive"),
    ("_seconds", "s"), ("_ms", "ms"), ("_us", "us"),
    ("_kJ", "kJ"), ("_uJ", "uJ"), ("_J", "J"), ("_Wh", "Wh"), ("_W", "W"),
    ("_percentage", "%"), ("_percent", "%"),
    ("_TB", "TB"), ("_GB", "GB"), ("_GiB", "GiB"), ("_MB", "MB"),
    ("bw_bytes", "B/s"), ("_bytes", "B"), ("iops", "IO/s"),
    # counts (DLIO's and iowatt's names for them)
    ("_count", "count"), ("accelerators", "count"), ("_au90", "count"), ("_at_au_target", "count"), ("epochs", "count"),
    ("steps_per_epoch", "count"), ("simulated_steps_per_epoch", "count"),
    ("samples_read", "count"), ("drives", "count"), ("_reads", "count"), ("_ios", "count"),
)


def unit_of(name: str, stated: str = "") -> str:
    """`stated` (the result's own unit for the name) when given, else the unit the name ends in, else ''."""
    if stated:
        return stated
    return next((unit for ending, unit in _ENDINGS if name.endswith(ending)), "")
