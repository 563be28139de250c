"""A run's result document as tables (`iowatt run` on a terminal): metrics, what bound the storage, energy.

Apart from output.tables so that the interval view (output.intervals, which builds on tables) is imported one way."""

from __future__ import annotations

from collections.abc import Mapping

from iowatt.output.intervals import metrics_table
from iowatt.output.tables import Table, format_number
from iowatt.output.units import unit_of


def result_tables(document: Mapping[str, object]) -> list[Table | str]:
    """A run's result document (`iowatt run -f json`): its metrics, what bound its storage, its energy by component."""
    title = str(document.get("name") or "iowatt result")
    metrics = document.get("metrics")
    units = document.get("units")
    stated = units if isinstance(units, Mapping) else {}  # names that do not say their unit (DLIO's MB/s is MiB/s)
    rows = [[str(k), format_number(v), unit_of(str(k), str(stated.get(k, "")))] for k, v in metrics.items()] if isinstance(metrics, Mapping) else []
    block = document.get("uncertainty")
    if isinstance(block, Mapping) and isinstance(metrics, Mapping):  # --uncertainty: median [low, high] and what moves it
        tables: list[Table | str] = metrics_table(title, metrics, block, {row[0]: row[2] for row in rows})
    else:
        tables = [Table(["metric", "value", "unit"], rows, title=f"{title}: metrics", right=frozenset({"value"}))]
    storage = document.get("storage")
    if isinstance(storage, Mapping) and "binding_constraint" in storage:  # a volume that names its binding station
        paths = storage.get("erasure_paths")
        erasure = f"; erasure path: {'; '.join(map(str, paths))}" if isinstance(paths, list) and paths else ""
        tables.append(f"binding constraint: {storage['binding_constraint']}{erasure}")
    energy = document.get("energy")
    components = energy.get("components") if isinstance(energy, Mapping) else None
    if isinstance(components, Mapping) and components:
        columns = ("component", "group", "energy_J", "energy_Wh", "mean_power_W", "peak_power_W")
        erows = []
        for name, row in components.items():
            joules = float(row["energy_J"])
            erows.append([str(name), str(row["group"]), format_number(joules), format_number(joules / 3600.0),
                          format_number(row["mean_power_W"]), format_number(row["peak_power_W"])])
        tables.append(Table(columns, erows, title="energy by component", right=frozenset(columns[2:])))
    return tables
