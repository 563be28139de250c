"""Issue 36, items 4-8 and 13-17: inputs that ended in a traceback, or ran when they should not, now end in one
`error: ...` naming the field, what was expected and what was found, with exit status 2 and nothing written.

Oracle: the command-line contract in README.md ("Bad input ... ends in one message naming the field, what was
expected and what was found, with exit status 2"), and for the goodput bound IEEE-754's largest double.
Each test names its item in the docstring; each failed on the main branch it was written against.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from iowatt.models import goodput as gp
from iowatt.models.units import UnitError, parse_bytes, parse_bytes_per_second
from typer.testing import CliRunner

from iowatt.cli import app

ROOT = Path(__file__).resolve().parent.parent
LIBRARY = ROOT / "scenarios" / "library"
DEMO = str(LIBRARY / "checkpoint_llama405b_8gpu.yaml")
TIERED = str(LIBRARY / "checkpoint_designs" / "llama405b_64x8_cluster_tiered.yaml")
SMALL = ["--set", "workload.size=4 GB"]
runner = CliRunner()


def refused(args: list[str], *phrases: str, env: dict[str, str] | None = None) -> str:
    """Exit 2, one `error:` message holding every phrase, no traceback; returns the message.  Progress lines before it
    (compare's "N cases" line) are stderr's business too; the error is the one line that starts with `error: `."""
    result = runner.invoke(app, [str(a) for a in args], env=env)
    assert result.exit_code == 2, (args, result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.stderr
    message = result.stderr[result.stderr.index("error: "):]
    for phrase in phrases:
        assert phrase in message, (phrase, result.stderr)
    return message


@pytest.mark.parametrize("mtbf", ["inf", "1e308"])
def test_item4_a_node_mtbf_without_failures_is_refused_in_compare_and_designs(mtbf):
    """Item 4: `--node-mtbf-hours inf` (or 1e308, infinite in seconds) gave `ValueError: goodput ... nan`."""
    refused(["compare", DEMO, "--vary", "storage.fill=0,0.5", *SMALL, "--nodes", "8", "--node-mtbf-hours", mtbf], "--node-mtbf-hours", "finite")
    refused(["designs", TIERED, "--nodes", "8", "--node-mtbf-hours", mtbf], "--node-mtbf-hours", "finite")


def test_item4_a_plan_with_an_infinite_node_mtbf_is_refused(tmp_path):
    """Item 4: `node_mtbf_hours: .inf` in a plan spec."""
    spec = tmp_path / "plan.yaml"
    spec.write_text(f"scenario: {DEMO}\nchoices: {{storage.count: [1, 2]}}\nfailure: {{nodes: 8, node_mtbf_hours: .inf}}\n")
    refused(["plan", spec, "--jobs", "0"], "node_mtbf_hours", "finite")


def test_item5_failures_too_frequent_to_complete_any_work_are_one_message():
    """Item 5: `designs --node-mtbf-hours 1e-9` raised OverflowError (e^(P/M) beyond a double)."""
    refused(["designs", TIERED, "--nodes", "8", "--node-mtbf-hours", "1e-9"], "MTBF", "no work")
    refused(["compare", DEMO, "--vary", "storage.fill=0,0.5", *SMALL, "--nodes", "8", "--node-mtbf-hours", "1e-9"], "MTBF", "no work")


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(tau=st.floats(1e-3, 1e7), delta=st.floats(0, 1e5), mtbf=st.floats(1e-12, 1e300), restart=st.floats(0, 1e5))
def test_item5_goodput_is_a_share_of_wall_time_or_a_refusal_never_an_overflow(tau, delta, mtbf, restart):
    """Item 5, over inputs: Daly's goodput is useful time over wall time, so 0 < g <= 1 (a share; conservation of
    time) wherever a double holds the expected wall time; beyond that (P/M past ln(DBL_MAX)) NoProgressError."""
    try:
        g = gp.goodput(tau, delta, mtbf, restart)
        designed = gp.design_goodput(tau, delta, mtbf, [gp.Recovery(1.0, restart, delta)])
    except gp.NoProgressError:
        assert (tau + delta + restart) / mtbf > gp.MAX_EXPONENT
        return
    assert 0.0 <= g <= 1.0 + 1e-12 and 0.0 <= designed <= 1.0 + 1e-12
    assert designed == pytest.approx(g, rel=1e-9, abs=1e-300)  # one path with ready-after = stall is Daly's (its docstring)


def test_item6_a_binary_plan_file_is_refused(tmp_path):
    """Item 6: `plan <binary file>` raised UnicodeDecodeError."""
    spec = tmp_path / "plan.yaml"
    spec.write_bytes(bytes(range(256)) * 4)
    refused(["plan", spec], str(spec), "cannot read")


def test_item7_an_integer_longer_than_python_reads_is_refused_in_set_and_yaml(tmp_path):
    """Item 7: a 5000-digit integer ended in "Exceeds the limit (4300 digits)"."""
    digits = "9" * 5000
    refused(["run", DEMO, "--set", f"workload.ranks={digits}", "--dry-run"], "workload.ranks", "5000 digits", "4300")
    data = yaml.safe_load(Path(DEMO).read_text())
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(data).replace("ranks: 8", f"ranks: {digits}"))
    assert digits in scenario.read_text()
    refused(["run", scenario, "--dry-run"], "line", "5000 digits")


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\x00\xff", b"{}", b'{"address": 7}', b"[1, 2]"])
def test_item8_a_scheduler_file_without_an_address_is_refused(tmp_path, content):
    """Item 8: `sweep --scheduler-file` with garbage or `{}` ended in dask's AssertionError."""
    scheduler = tmp_path / "scheduler.json"
    scheduler.write_bytes(content)
    out = tmp_path / "s.csv"
    refused(["sweep", DEMO, "--grid", "storage.fill=0,0.5", *SMALL, "--scheduler-file", scheduler, "-o", out], "--scheduler-file", "address")
    assert not out.exists()


@pytest.mark.parametrize("size", ["415 Gb", "415Gb", "3 Tb", "12 Mbit", "2 kbits"])
def test_item13_a_size_in_bits_is_refused_where_bytes_are_meant(size):
    """Item 13: `workload.size=415 Gb` was read as 415e9 bytes while rates read Gb/s as bits (8x)."""
    with pytest.raises(UnitError, match="bits"):
        parse_bytes(size)
    refused(["run", DEMO, "--set", f"workload.size={size}", "--dry-run"], "workload.size", "bits")
    assert parse_bytes_per_second("100 Gb/s") == 100e9 / 8  # rates keep their bits


def test_item14_fio_and_dlio_together_are_refused(tmp_path):
    """Item 14: `run --fio a.fio --dlio b.yaml` ignored --dlio without a word."""
    job = tmp_path / "a.fio"
    job.write_text("[global]\nrw=read\nbs=128k\nsize=1g\n[job]\n")
    dlio = ROOT / "tests" / "fixtures" / "dlio"
    workload = next(iter(sorted(dlio.rglob("*.yaml"))))
    refused(["run", "--fio", job, "--dlio", workload, "--set", "storage.device=micron-7450-pro", "--dry-run"], "--fio", "--dlio", "both")


DLIO = """model:
  name: unet3d
framework: {framework}
workflow:
  train: true
dataset:
  num_files_train: 10
  record_length: 1000
reader:
  data_loader: pytorch
  batch_size: 4
"""


def test_item14_a_dlio_framework_iowatt_does_not_model_is_refused(tmp_path):
    """Item 14: `framework: jax` beside `data_loader: pytorch` ran as pytorch."""
    path = tmp_path / "jax.yaml"
    path.write_text(DLIO.format(framework="jax"))
    refused(["run", "--dlio", path, "--set", "storage.device=micron-7450-pro", "--dry-run"], "framework", "jax")


def test_item14_a_dlio_file_with_a_section_twice_is_refused(tmp_path):
    """Item 14: a DLIO file with two `reader:` blocks took the last."""
    path = tmp_path / "twice.yaml"
    path.write_text(DLIO.format(framework="pytorch") + "reader:\n  batch_size: 8\n")
    refused(["run", "--dlio", path, "--set", "storage.device=micron-7450-pro", "--dry-run"], "duplicate key 'reader'", "line 12")


def test_item15_compare_and_sweep_refuse_a_field_given_twice(tmp_path):
    """Item 15: the same path in two --vary, and `sweep --grid X --set X`, ran and exited 0."""
    refused(["compare", DEMO, "--vary", "storage.fill=0,0.5", "--vary", "storage.fill=0.1,0.2", *SMALL], "storage.fill", "twice")
    refused(["compare", DEMO, "--vary", "storage.fill=0,0.5", "--set", "system.storage.fill=0.3", *SMALL], "--set", "--vary", "storage.fill")
    out = tmp_path / "s.csv"
    refused(["sweep", DEMO, "--grid", "storage.fill=0,0.5", "--set", "storage.fill=0.3", *SMALL, "-o", out, "--jobs", "0"], "--set", "--grid")
    assert not out.exists()


def test_item15_a_zero_interval_and_a_set_save_mode_are_refused():
    """Item 15: `compare --interval 0` and `designs --set workload.save.mode=teleport` exited 0."""
    refused(["compare", DEMO, "--vary", "storage.fill=0,0.5", *SMALL, "--interval", "0"], "--interval", "> 0")
    refused(["designs", TIERED, "--set", "workload.save.mode=teleport"], "workload.save.mode", "--modes")


def test_item15_a_plot_into_a_text_file_is_refused_before_any_run(tmp_path):
    """Item 15: `designs --plot t.txt` wrote a PNG into a .txt file."""
    text = tmp_path / "t.txt"
    refused(["designs", TIERED, "--plot", text], "--plot", ".png")
    assert not text.exists()


def test_item16_a_boolean_is_not_a_count(tmp_path):
    """Item 16: YAML `count: true` was accepted as 1."""
    data = yaml.safe_load(Path(DEMO).read_text())
    data["system"]["storage"]["count"] = True
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(data))
    refused(["run", scenario, "--dry-run"], "system.storage.count", "found true")
    refused(["run", DEMO, "--set", "gpus.count=true", "--dry-run"], "system.gpus.count", "found true")


def test_item16_impossible_sizes_and_memory_are_refused():
    """Item 16: `workload.size=1e-300 B` and `resident_memory: 10 TB` on a 256 GB host were accepted."""
    refused(["run", DEMO, "--set", "workload.size=1e-300 B", "--dry-run"], "workload.size", "at least 1 byte")
    refused(["run", DEMO, "--set", "workload.resident_memory=10 TB", "--dry-run"], "workload.resident_memory", "256 GB", "10 TB")


def test_item16_a_catalog_folder_that_does_not_exist_is_refused(tmp_path):
    """Item 16: `IOWATT_CATALOG_DIR=/nonexistent` was accepted without a word."""
    missing = tmp_path / "nonexistent"
    refused(["run", DEMO, "--dry-run"], "IOWATT_CATALOG_DIR", "no such folder", env={"IOWATT_CATALOG_DIR": str(missing)})


def test_item17_a_random_fraction_axis_draws_fractions_and_counts_no_phantom_rows(tmp_path):
    """Item 17: `--range storage.fill=0:1` drew integers for a fraction (2 distinct rows) and claimed the rest
    were "already in" a fresh file."""
    import csv

    out = tmp_path / "new.csv"
    result = runner.invoke(app, ["sweep", DEMO, "--random", "30", "--range", "storage.fill=0:1", *SMALL, "-o", str(out), "--jobs", "0"])
    assert result.exit_code == 0, result.output
    fills = [float(row["storage.fill"]) for row in csv.DictReader(out.open())]
    assert len(set(fills)) == 30 and all(0.0 <= f <= 1.0 for f in fills)
    assert "0 already in" in result.stderr
    counts = tmp_path / "counts.csv"
    result = runner.invoke(app, ["sweep", DEMO, "--random", "20", "--range", "storage.count=1:2", *SMALL, "-o", str(counts), "--jobs", "0"])
    assert result.exit_code == 0, result.output
    assert "0 already in" in result.stderr and "18 repeating an earlier case" in result.stderr


def test_item17_oversized_sweeps_and_alias_bombs_are_refused_before_any_work(tmp_path):
    """Item 17: `--random 1000000000` grew to GBs with no output; a YAML alias bomb took 27 s and 2.3 GB."""
    out = tmp_path / "big.csv"
    refused(["sweep", DEMO, "--random", "1000000000", "--range", "storage.fill=0:1", "-o", out], "--random", "1,000,000")
    assert not out.exists()
    letters = "abcdefghij"
    bomb = f"{letters[0]}: &{letters[0]} [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{letters[i]}: &{letters[i]} [{', '.join([f'*{letters[i - 1]}'] * 9)}]\n" for i in range(1, 10))
    scenario = tmp_path / "bomb.yaml"
    scenario.write_text(bomb)
    refused(["run", scenario, "--dry-run"], "aliases", "line 1")
    assert math.isfinite(parse_bytes("1 TB"))
