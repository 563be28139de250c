"""Units and number forms in what `iowatt run` prints and writes (issue 36 item 22).

Oracles: the naming convention every metric follows (docs/architecture.md: the unit is in the name) and fio(1)
(`bw_bytes` is bytes per second); the scenario's own whole-number inputs (one checkpoint, 8 writer ranks); the
study files present in scenarios/studies/ for the README's count.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from iowatt.scenarios.reproduce import study_files
from typer.testing import CliRunner

from iowatt.cli import app
from iowatt.output.serialize import to_csv
from iowatt.output.units import unit_of

REPO = Path(__file__).resolve().parent.parent
runner = CliRunner()


def _table_units(*args: str) -> dict[str, str]:
    result = runner.invoke(app, ["run", *args, "--format", "table"])
    assert result.exit_code == 0, result.output
    rows = [re.split(r"\s*│\s*", line.strip("│ ")) for line in result.stdout.splitlines() if line.startswith("│")]
    return {row[0]: row[2] if len(row) > 2 else "" for row in rows if len(row) >= 2}


def test_the_dlio_table_names_a_unit_for_every_quantity():
    """Item 22: the DLIO table's unit column was empty but for the MiB/s rows."""
    units = _table_units("unet3d_max_h100_6550")
    assert units["epoch_time_mean_seconds"] == "s" and units["ssd_energy_J"] == "J" and units["bytes_read_GB"] == "GB"
    assert units["train_au_percentage"] == "%" and units["accelerators"] == "count" and units["samples_read"] == "count"
    assert units["train_io_mean_MB_per_second"] == "MiB/s (DLIO's MB)"  # the result's own unit wins over the name's
    unitless = [name for name, unit in units.items() if not unit]
    assert unitless == ["train_au_meet_expectation"]  # a yes/no flag


def test_fio_bw_bytes_has_its_unit():
    """Item 22: `bw_bytes` was printed as 1.842e+09 with no unit; fio(1): bytes per second."""
    units = _table_units(str(REPO / "scenarios" / "library" / "amax" / "fio_9200.yaml"))
    assert units["bw_bytes"] == "B/s" and units["read_bw_MBps"] == "MB/s" and units["read_clat_p99_us"] == "us"


def test_csv_writes_counts_as_integers():
    """Item 22: counts came out as `1.0`; the checkpoint scenario writes one checkpoint from 8 ranks."""
    result = runner.invoke(app, ["run", "checkpoint_llama405b_8gpu", "--format", "csv"])
    assert result.exit_code == 0, result.output
    row = next(csv.DictReader(io.StringIO(result.stdout)))
    assert row["checkpoint_count"] == "1" and row["checkpoint_writer_ranks_count"] == "8"
    assert float(row["save_checkpoint_duration_mean_seconds"]) > 0


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_csv_numbers_read_back_to_the_same_value(value):
    """Writing whole floats as integers changes no number: every float reads back equal."""
    text = to_csv([{"x": value}])
    assert float(next(csv.DictReader(io.StringIO(text)))["x"]) == value


@pytest.mark.parametrize(("name", "unit"), [("storage_energy_per_GB_J", "J/GB"), ("ssd_mean_power_W_per_drive", "W per drive"),
                                            ("read_bw_MBps", "MB/s"), ("save_checkpoint_io_mean_GB_per_second", "GB/s"),
                                            ("checkpoint_count", "count"), ("latency_shape_k", "")])
def test_unit_of_reads_the_name_ending(name, unit):
    assert unit_of(name) == unit


def test_run_help_names_every_format():
    """Item 22: `run --help` omitted --format dlio (and now fio, fio-terse)."""
    result = runner.invoke(app, ["run", "--help"], terminal_width=200)
    text = " ".join(result.stdout.split())
    assert all(word in text for word in ("dlio", "fio-terse", "fio's JSON"))


def test_the_readme_counts_the_studies_reproduce_writes():
    """Item 22: the README said five studies, `reproduce all` writes six (scenarios/studies/)."""
    readme = (REPO / "README.md").read_text()
    words = {5: "five", 6: "six", 7: "seven"}
    assert f"the {words[len(study_files())]} studies" in readme and "the five studies" not in readme
