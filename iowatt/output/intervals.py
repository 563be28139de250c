"""Intervals for people: `value [low, high]` cells and the unknowns that move a result most (docs/uncertainty.md).

Reads the `uncertainty` block a command adds to its JSON (scenarios.uncertainty.Summary.as_dict): plain data in,
text out, like the rest of this package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from iowatt.output.tables import Table, format_number


def interval_cell(median: object, low: object, high: object) -> str:
    """'8.26 [7.91, 8.43]'."""
    return f"{format_number(median)} [{format_number(low)}, {format_number(high)}]"


def _shares(block: Mapping[str, object]) -> list[tuple[str, str, float]]:
    items = block.get("sensitivity")
    out = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, Mapping):
            share = item.get("share")
            out.append((str(item.get("parameter")), str(item.get("metric")), float(share) if isinstance(share, int | float) else 0.0))
    return out


def top_unknowns(block: Mapping[str, object], n: int = 3) -> list[tuple[str, str, float]]:
    """The n inputs with the largest share of any metric's spread: (input path, that metric, share)."""
    best: dict[str, tuple[str, float]] = {}
    for path, metric, share in _shares(block):
        if share > best.get(path, ("", -1.0))[1]:
            best[path] = (metric, share)
    ranked = sorted(best.items(), key=lambda item: -item[1][1])[:n]
    return [(path, metric, share) for path, (metric, share) in ranked]


def what_to_do(path: str) -> str:
    """How a user pins an input down: a constant is measured or calibrated, a field is set."""
    if path.startswith("constant:"):
        return "a model constant: measure it (`iowatt calibrate` on your own traces) or accept its range"
    return f"set it (--set {path.removeprefix('system.')}=VALUE) or measure it"


def metrics_table(title: str, metrics: Mapping[str, object], block: Mapping[str, object],
                  units: Mapping[str, object] | None = None) -> list[Table | str]:
    """The metrics as `median [low, high]` with the input that moves each most; then the top three unknowns."""
    intervals = block.get("metrics")
    intervals = intervals if isinstance(intervals, Mapping) else {}
    shares = _shares(block)
    rows = []
    for name, value in metrics.items():
        found = intervals.get(name)
        cell = interval_cell(found["median"], found["low"], found["high"]) if isinstance(found, Mapping) else format_number(value)
        mover = next(((p, s) for p, m, s in shares if m == name), None)
        row = [str(name), cell, f"{mover[0]} ({mover[1]:.0%})" if mover else ""]
        if units:
            row.append(str(units.get(name, "")))
        rows.append(row)
    columns = ["metric", f"median [{_pct(block.get('level'))} interval]", "moved most by (share)"]
    if units:
        columns.append("unit")
    blocks: list[Table | str] = [Table(columns, rows, title=f"{title}: metrics", right=frozenset({columns[1]}))]
    blocks.append(f"{block.get('samples')} samples, {block.get('failed')} failed; {len(_list(block.get('varied')))} of "
                  f"{block.get('inputs')} uncertain inputs varied (the rest moved no metric by 0.5 % or more)")
    top = top_unknowns(block)
    if top:
        blocks.append("unknowns that move the result most:")
        blocks += [f"  {path}: {share:.0%} of {metric}'s spread; {what_to_do(path)}" for path, metric, share in top]
    return blocks


def _list(value: object) -> Sequence[object]:
    return value if isinstance(value, list) else []


def _pct(value: object) -> str:
    return f"{value:.0%}" if isinstance(value, int | float) else "?"
