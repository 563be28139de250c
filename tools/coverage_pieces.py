"""Score the 90 % intervals of the visible table's predicted rows in pieces, then sum the pieces.

`iowatt validate TABLE --uncertainty` over the whole table takes half an hour or more on a shared machine; this
runs it on small tables of a few rows each (the same format, scenario paths made absolute), keeps each piece's
JSON so an interrupted scoring resumes where it stopped, and prints the coverage with the per-row list (id, point,
low, high, measured, covered).  Rows that restate another row are left out (they are not predicted rows).

    .venv/bin/python tools/coverage_pieces.py --out /tmp/cov            # every predicted row
    .venv/bin/python tools/coverage_pieces.py --out /tmp/cov --ids 'mlps1\\.mn\\.'  # some of them
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "scenarios" / "validation" / "published.yaml"


def _absolute(entry: dict[str, object], base: Path) -> dict[str, object]:
    out = dict(entry)
    if isinstance(out.get("scenario"), str):
        out["scenario"] = str((base / str(out["scenario"])).resolve())
    return out


def pieces(rows: list[dict[str, object]], size: int) -> list[list[dict[str, object]]]:
    return [rows[i:i + size] for i in range(0, len(rows), size)]


def write_piece(rows: list[dict[str, object]], tolerance: object, path: Path) -> None:
    fixed = []
    for row in rows:
        row = _absolute(row, TABLE.parent)
        ratio = row.get("ratio")
        if isinstance(ratio, dict):
            row["ratio"] = {k: _absolute(v, TABLE.parent) for k, v in ratio.items()}
        fixed.append(row)
    path.write_text(yaml.safe_dump({"description": "a piece of the visible table", "tolerance": tolerance,
                                    "measurements": fixed}, sort_keys=False))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the pieces and their JSON")
    parser.add_argument("--ids", default="", help="regular expression on row ids (default: every row)")
    parser.add_argument("--size", type=int, default=4, help="rows per piece")
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--score-only", action="store_true", help="sum the pieces already run")
    parser.add_argument("--also", type=Path, action="append", default=[], help="more folders of pieces to sum")
    args = parser.parse_args()
    table = yaml.safe_load(TABLE.read_text())
    rows = [r for r in table["measurements"] if "restates" not in r and re.search(args.ids, r["id"])]
    if args.score_only:
        return score([args.out, *args.also], {r["id"] for r in rows})
    args.out.mkdir(parents=True, exist_ok=True)
    iowatt = ROOT / ".venv" / "bin" / "iowatt"
    for n, piece in enumerate(pieces(rows, args.size)):
        done = args.out / f"piece{n:02d}.json"
        ids = [r["id"] for r in piece]
        if (done.exists() and json.loads(done.read_text()).get("ids") == ids):
            continue
        source = args.out / f"piece{n:02d}.yaml"
        write_piece(piece, table.get("tolerance"), source)
        run = subprocess.run([str(iowatt), "validate", str(source), "--uncertainty", "--samples", str(args.samples),
                              "--method", "oat", "-f", "json", "-j", str(args.jobs)], capture_output=True, text=True)
        if not run.stdout.strip():
            print(f"piece {n} ({ids[0]}..) produced no output: {run.stderr[-400:]}", file=sys.stderr)
            continue
        done.write_text(json.dumps({"ids": ids, "result": json.loads(run.stdout)}))
        print(f"piece {n}: {len(ids)} rows", file=sys.stderr, flush=True)
    return score([args.out, *args.also], {r["id"] for r in rows})


def _fmt(value: object) -> str:
    return f"{value:12.4g}" if isinstance(value, int | float) else f"{'-':>12s}"


def score(folders: list[Path], wanted: set[str]) -> int:
    found = {}
    for done in sorted(d for folder in folders for d in folder.glob("piece*.json")):
        for row in json.loads(done.read_text())["result"]["rows"]:
            if row["id"] in wanted:
                found[row["id"]] = row
    predicted = [r for r in found.values() if r["role"] == "predicted"]
    print(f"{'id':48s} {'point':>12s} {'low':>12s} {'high':>12s} {'measured':>12s} covered")
    widths, point_err, median_err, covered = [], [], [], 0
    for r in predicted:
        iv = r.get("uncertainty") or r
        low, high = iv.get("interval") or (None, None)
        hit = bool(iv.get("covered"))
        covered += hit
        if low is not None and iv.get("median"):
            widths.append(iv["relative_half_width"])
            median_err.append(abs(iv["median"] - r["measured"]) / abs(r["measured"]))
        if r.get("predicted") is not None:
            point_err.append(abs(r["error"]))
        print(f"{r['id']:48s} {_fmt(r.get('predicted'))} {_fmt(low)} {_fmt(high)} {_fmt(r['measured'])} {hit}")
    n = len(predicted)
    if n:
        print(f"predicted rows scored: {n}; covered {covered} ({covered / n:.1%}); median relative half-width "
              f"{statistics.median(widths):.1%}; median |error| of points {statistics.median(point_err):.1%}, "
              f"of medians {statistics.median(median_err):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
