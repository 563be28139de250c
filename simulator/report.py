"""Render result documents: JSON (one document), CSV (one row of metrics), human tables."""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

FORMATS = ("table", "json", "csv")


def to_json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, allow_nan=False, default=_jsonable) + "\n"


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def to_csv(rows: list[dict[str, Any]]) -> str:
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return out.getvalue()


def metrics_row(document: dict[str, Any]) -> dict[str, Any]:
    return {"name": document.get("name", ""), **document["metrics"]}


def format_number(value: Any) -> str:
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


def render_table(document: dict[str, Any]) -> str:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=io.StringIO(), width=100, force_terminal=False, color_system=None)
    title = document.get("name") or "iowatt result"
    table = Table(title=f"{title}: metrics", show_lines=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for key, value in document["metrics"].items():
        table.add_row(key, format_number(value))
    console.print(table)
    storage = document.get("storage", {})
    if "binding_constraint" in storage:
        paths = "; ".join(storage.get("erasure_paths", []))
        console.print(f"binding constraint: {storage['binding_constraint']}" + (f"; erasure path: {paths}" if paths else ""))
    energy = document.get("energy", {}).get("components", {})
    if energy:
        etable = Table(title="energy by component")
        for column in ("component", "group", "energy_J", "energy_Wh", "mean_power_W", "peak_power_W"):
            etable.add_column(column, justify="left" if column in ("component", "group") else "right")
        for name, row in energy.items():
            etable.add_row(
                name, row["group"], format_number(row["energy_J"]), format_number(row["energy_J"] / 3600.0),
                format_number(row["mean_power_W"]), format_number(row["peak_power_W"]),
            )
        console.print(etable)
    return console.file.getvalue()  # type: ignore[attr-defined]
