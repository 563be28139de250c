"""Every library scenario's results before and after an engine change, compared at 1e-9 relative (issue 33).

    /work/main/.venv/bin/python benchmarks/library_diff.py snapshot before.json   # the old code (that checkout's venv)
    .venv/bin/python benchmarks/library_diff.py snapshot after.json                 # the new code
    .venv/bin/python benchmarks/library_diff.py compare before.json after.json

The scenarios are this file's checkout's scenarios/library; the code is whatever `iowatt` the interpreter imports
(an editable install points at its own checkout), so both snapshots run the same inputs through two engines.

A snapshot runs every scenarios/library/**/*.yaml through run_scenario and keeps what a user reads (metrics, the
workload's detail, energy, storage, units); the engine's own block (wall time, event and recompute counts) and the
provenance stamp are left out, since a faster engine is meant to change them.  `compare` prints every number
that differs by more than `--rel` (default 1e-9) relative, every key or scenario present on one side only, and
exits 1 if there is any, 0 if none.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "scenarios" / "library"
SKIPPED_KEYS = ("engine", "provenance", "scenario", "result_schema", "mode", "name")


def snapshot() -> dict[str, Any]:
    from iowatt.scenarios.loader import load
    from iowatt.scenarios.run import run_scenario

    out: dict[str, Any] = {}
    for path in sorted(LIBRARY.rglob("*.yaml")):
        name = str(path.relative_to(LIBRARY))
        try:
            document, _ = run_scenario(load(str(path), []))
        except Exception as error:  # a scenario that fails must fail the same way on both sides
            out[name] = {"error": f"{type(error).__name__}: {error}"}
            continue
        out[name] = {k: v for k, v in document.items() if k not in SKIPPED_KEYS}
    return out


def differences(a: Any, b: Any, rel: float, where: str = "") -> list[str]:
    """Every place where a and b differ: numbers beyond `rel` relative, other values unequal, keys on one side."""
    if isinstance(a, dict) and isinstance(b, dict):
        found: list[str] = []
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                found.append(f"{where}/{key}: only in {'after' if key not in a else 'before'}")
            else:
                found += differences(a[key], b[key], rel, f"{where}/{key}")
        return found
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items before, {len(b)} after"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, rel, f"{where}[{i}]")]
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        x, y = float(a), float(b)
        if x == y or (math.isnan(x) and math.isnan(y)):
            return []
        if abs(x - y) <= rel * max(abs(x), abs(y)):
            return []
        return [f"{where}: {a!r} before, {b!r} after"]
    return [] if a == b else [f"{where}: {a!r} before, {b!r} after"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    snap = sub.add_parser("snapshot", help="run every library scenario and write its results")
    snap.add_argument("out", type=Path)
    comp = sub.add_parser("compare", help="compare two snapshots")
    comp.add_argument("before", type=Path)
    comp.add_argument("after", type=Path)
    comp.add_argument("--rel", type=float, default=1e-9, help="relative tolerance on numbers (default 1e-9)")
    args = parser.parse_args(argv)
    if args.command == "snapshot":
        data = snapshot()
        args.out.write_text(json.dumps(data, indent=1, sort_keys=True, allow_nan=True))
        print(f"{len(data)} scenarios -> {args.out}")
        return 0
    before = json.loads(args.before.read_text())
    after = json.loads(args.after.read_text())
    found = differences(before, after, args.rel)
    for line in found:
        print(line)
    print(f"{len(before)} scenarios before, {len(after)} after: {len(found)} differences beyond {args.rel:g} relative")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
