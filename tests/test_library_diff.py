"""benchmarks/library_diff.py, the before/after check of every library scenario (issue 33), finds what differs.

Oracle: hand-made pairs of result documents whose differences are known by construction.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("library_diff", ROOT / "benchmarks" / "library_diff.py")
assert _spec is not None and _spec.loader is not None
library_diff = importlib.util.module_from_spec(_spec)
sys.modules["library_diff"] = library_diff
_spec.loader.exec_module(library_diff)


def test_numbers_within_the_tolerance_are_equal_and_beyond_it_are_reported():
    before = {"a.yaml": {"metrics": {"t_seconds": 1.0, "e_J": 5.0, "n": 3}, "list": [1.0, 2.0], "note": "x"}}
    same = {"a.yaml": {"metrics": {"t_seconds": 1.0 + 5e-10, "e_J": 5.0, "n": 3}, "list": [1.0, 2.0], "note": "x"}}
    assert library_diff.differences(before, same, 1e-9) == []
    moved = {"a.yaml": {"metrics": {"t_seconds": 1.0 + 1e-6, "e_J": 5.0}, "list": [1.0], "note": "y"}}
    found = library_diff.differences(before, moved, 1e-9)
    assert any(line.startswith("/a.yaml/metrics/t_seconds") for line in found)
    assert "/a.yaml/metrics/n: only in before" in found
    assert "/a.yaml/list: 2 items before, 1 after" in found
    assert "/a.yaml/note: 'x' before, 'y' after" in found


def test_compare_exits_1_on_a_difference_and_0_without(tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"s.yaml": {"metrics": {"x": 1.0}}}))
    b.write_text(json.dumps({"s.yaml": {"metrics": {"x": 1.0}}}))
    assert library_diff.main(["compare", str(a), str(b)]) == 0
    b.write_text(json.dumps({"s.yaml": {"metrics": {"x": 2.0}}}))
    assert library_diff.main(["compare", str(a), str(b)]) == 1
