"""One benchmark target line, shared by benchmarks/run.py and the rows that live in their own modules."""

from __future__ import annotations

from typing import Any


def check(metric: str, value: float, unit: str, op: str, target: float | None) -> dict[str, Any]:
    """One target line: op is '<=', '>=' or 'info' (no target in the issue)."""
    if op == "info" or target is None:
        status = "INFO"
    elif op == "<=":
        status = "PASS" if value <= target else "MISS"
    elif op == ">=":
        status = "PASS" if value >= target else "MISS"
    else:
        raise ValueError(f"unknown comparison {op!r}")
    return {"metric": metric, "value": float(value), "unit": unit, "op": op, "target": target, "status": status}
