"""Run every scenario under scenarios/library/ with `iowatt run --format json` in two checkouts and diff the metrics.

    python tools/diff_library_metrics.py /work/main /work/wt/engine [--rel 1e-9] [--jobs 2]

Each checkout runs with its own .venv/bin/iowatt.  A metric differs when |a - b| > rel x max(|a|, |b|)
(non-numbers must be equal), unless both are below --abs (default 1e-9): a spread of identical values is
rounding noise (1e-14 s), whose relative change means nothing.  Exit 0 when every scenario's metrics agree, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def _run(checkout: Path, scenario: Path) -> dict | str:
    out = subprocess.run([str(checkout / ".venv/bin/iowatt"), "run", str(scenario), "--format", "json"],
                         capture_output=True, text=True, cwd=checkout)
    if out.returncode != 0:
        return f"exit {out.returncode}: {out.stderr.strip()[-300:]}"
    return json.loads(out.stdout)


def _diff(a: object, b: object, rel: float, path: str, found: list[str], floor: float = 1e-9) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                found.append(f"{path}.{key}: only on {'the first' if key in a else 'the second'}")
            else:
                _diff(a[key], b[key], rel, f"{path}.{key}", found, floor)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, rel, f"{path}[{i}]", found, floor)
    elif isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        if not (a == b or (math.isfinite(a) and math.isfinite(b)
                           and (abs(a - b) <= rel * max(abs(a), abs(b)) or max(abs(a), abs(b)) < floor))):
            found.append(f"{path}: {a!r} vs {b!r} (rel {abs(a - b) / max(abs(a), abs(b)):.2e})")
    elif a != b:
        found.append(f"{path}: {a!r} vs {b!r}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--rel", type=float, default=1e-9)
    parser.add_argument("--abs", type=float, default=1e-9, dest="floor")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    scenarios = sorted((args.second / "scenarios/library").rglob("*.yaml"))
    with ThreadPoolExecutor(args.jobs) as pool:
        pairs = list(pool.map(lambda s: (s, _run(args.first, s), _run(args.second, s)), scenarios))
    bad = 0
    for scenario, a, b in pairs:
        name = scenario.relative_to(args.second / "scenarios/library")
        if isinstance(a, str) or isinstance(b, str):
            same = isinstance(a, str) and isinstance(b, str)
            print(f"{'SAME' if same else 'DIFF'} {name}: first {a if isinstance(a, str) else 'ran'}; second {b if isinstance(b, str) else 'ran'}")
            bad += not same
            continue
        found: list[str] = []
        _diff(a.get("metrics"), b.get("metrics"), args.rel, "metrics", found, args.floor)
        exact = a.get("metrics") == b.get("metrics")
        print(f"{'SAME' if not found else 'DIFF'} {name}{' (bit for bit)' if exact else ''}")
        for line in found[:10]:
            print("    " + line)
        bad += bool(found)
    print(f"{len(pairs) - bad} of {len(pairs)} scenarios agree to {args.rel:g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
