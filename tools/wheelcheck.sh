#!/usr/bin/env bash
# Build the sdist, then the wheel from the sdist (so the sdist is proven complete), install the wheel into a fresh virtual environment outside the
# checkout, and run what a user runs first: --help, a library scenario, the catalog.
# Usage: tools/wheelcheck.sh [PYTHON]   (make wheelcheck)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
python=${1:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$repo/.venv/bin/python" -m build --outdir "$work/dist" "$repo" >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/*.whl)
# one import name: every file of the wheel lies under iowatt/ or its .dist-info
"$python" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
tops = {n.split("/", 1)[0] for n in names}
bad = sorted(t for t in tops if t != "iowatt" and not t.endswith(".dist-info"))
if bad:
    sys.exit(f"wheel installs import names other than iowatt: {bad}")
for needed in ("iowatt/models/catalog/ssd.yaml", "iowatt/scenarios/library/checkpoint_llama405b_8gpu.yaml", "iowatt/cli.py"):
    if needed not in names:
        sys.exit(f"wheel lacks {needed}")
print(f"wheel ok: {len(names)} files, import names {sorted(tops)}")
PY
"$python" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet "$wheel" 2>&1 | grep -v "^WARNING: Location" || true
cd "$work"   # outside the checkout: nothing may come from the repository's folders
"$work/venv/bin/iowatt" --help >/dev/null
"$work/venv/bin/iowatt" run checkpoint_llama405b_8gpu --format json -o "$work/result.json"
"$work/venv/bin/iowatt" catalog list >/dev/null
"$work/venv/bin/python" - <<'PY'
import importlib.util, json, sys
for bare in ("models", "simulator", "scenarios", "calibration"):
    if importlib.util.find_spec(bare) is not None:
        sys.exit(f"a bare '{bare}' module is importable from the installed wheel")
import iowatt.models, iowatt.simulator, iowatt.scenarios, iowatt.calibration  # noqa: E401
r = json.load(open("result.json"))
print("installed wheel ok: iowatt", r["provenance"]["iowatt_version"], "ran", r["scenario_name"] if "scenario_name" in r else "the library scenario")
PY
