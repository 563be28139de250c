"""Human number formatting, kept here for `scenarios/validation.py` only.

Presentation lives in `iowatt.output` (a leaf package the command line uses);
`scenarios.validation` still renders its own table and cannot import upwards.
Delete this module when that rendering moves to `iowatt.output`.
"""

from __future__ import annotations

import math


def format_number(value: object) -> str:
    """Four significant digits, thousands separators from 100 up, scientific notation outside [1e-3, 1e6)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if value == 0 or math.isnan(value):
        return f"{value:g}"
    magnitude = abs(value)
    if magnitude >= 1e6 or magnitude < 1e-3:
        return f"{value:.4g}"
    if magnitude >= 100:
        return f"{value:,.1f}"
    return f"{value:.4g}"
