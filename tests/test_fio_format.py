"""`iowatt run --format fio | fio-terse`: a fio job's prediction in fio's own output formats (issue 36, "also build").

Oracles: calibration.fioparse, the parser iowatt reads real fio's JSON with (written against fio's output, not
this writer); the field names of fio's terse v3 line as fio(1) lists them ("TERSE OUTPUT", fio 3.33); and, where
fio is installed, a real fio terse line: every field of ours has the same form as fio's field at that position.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from iowatt.calibration.fioparse import parse_file
from typer.testing import CliRunner

from iowatt.cli import app

FIO_SCENARIO = str(Path(__file__).resolve().parent.parent / "scenarios" / "library" / "amax" / "fio_9200.yaml")
# fio(1), TERSE OUTPUT: the names of fields 1-121 (the 9 disk-utilisation fields after them are not written)
TERSE_V3_NAMES = (
    "terse_version_3;fio_version;jobname;groupid;error;read_kb;read_bandwidth_kb;read_iops;read_runtime_ms;read_slat_min_us;"
    "read_slat_max_us;read_slat_mean_us;read_slat_dev_us;read_clat_min_us;read_clat_max_us;read_clat_mean_us;read_clat_dev_us;"
    + "".join(f"read_clat_pct{i:02d};" for i in range(1, 21))
    + "read_tlat_min_us;read_lat_max_us;read_lat_mean_us;read_lat_dev_us;read_bw_min_kb;read_bw_max_kb;read_bw_agg_pct;"
    "read_bw_mean_kb;read_bw_dev_kb;write_kb;write_bandwidth_kb;write_iops;write_runtime_ms;write_slat_min_us;write_slat_max_us;"
    "write_slat_mean_us;write_slat_dev_us;write_clat_min_us;write_clat_max_us;write_clat_mean_us;write_clat_dev_us;"
    + "".join(f"write_clat_pct{i:02d};" for i in range(1, 21))
    + "write_tlat_min_us;write_lat_max_us;write_lat_mean_us;write_lat_dev_us;write_bw_min_kb;write_bw_max_kb;write_bw_agg_pct;"
    "write_bw_mean_kb;write_bw_dev_kb;cpu_user;cpu_sys;cpu_csw;cpu_mjf;cpu_minf;iodepth_1;iodepth_2;iodepth_4;iodepth_8;"
    "iodepth_16;iodepth_32;iodepth_64;lat_2us;lat_4us;lat_10us;lat_20us;lat_50us;lat_100us;lat_250us;lat_500us;lat_750us;"
    "lat_1000us;lat_2ms;lat_4ms;lat_10ms;lat_20ms;lat_50ms;lat_100ms;lat_250ms;lat_500ms;lat_750ms;lat_1000ms;lat_2000ms;"
    "lat_over_2000ms"
).split(";")
runner = CliRunner()


def _run(*args: str) -> str:
    result = runner.invoke(app, ["run", FIO_SCENARIO, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_fio_json_is_read_by_the_parser_of_real_fio_output(tmp_path):
    """The fluid prediction as fio's JSON: calibration.fioparse (written for real fio output) reads the same bandwidth,
    IOPS, mean latency and percentiles as the run's metrics; `bw` is KiB/s as fio(1) says."""
    metrics = json.loads(_run("--format", "json"))["metrics"]
    path = tmp_path / "fio.json"
    path.write_text(_run("--format", "fio"))
    parsed = parse_file(path)
    assert parsed["read_bw_Bps"] == pytest.approx(metrics["read_bw_bytes"], abs=1)
    assert parsed["read_iops"] == pytest.approx(metrics["read_iops"])
    assert parsed["read_lat_mean_us"] == pytest.approx(metrics["read_lat_mean_us"])
    assert parsed["read_clat_p99_us"] == pytest.approx(metrics["read_clat_p99_us"], abs=1e-3)
    job = json.loads(path.read_text())["jobs"][0]
    assert job["read"]["bw"] == int(metrics["read_bw_bytes"]) // 1024 and job["write"]["total_ios"] == 0


@pytest.mark.parametrize("mode", ["fluid", "per-request"])
def test_terse_line_has_fio_v3_fields_in_fio_order(mode):
    """Every field by its fio(1) name: 121 fields, bandwidth in KiB/s as in the JSON, percentiles as 'P%=usec',
    the latency distribution a share of all requests (per-request: from its json+ bins)."""
    extra = ["--mode", "per-request", "--set", "workload.runtime=0.2"] if mode == "per-request" else []
    fio = json.loads(_run("--format", "fio", *extra))["jobs"][0]
    line = _run("--format", "fio-terse", *extra).strip()
    fields = dict(zip(TERSE_V3_NAMES, line.split(";"), strict=True))
    assert fields["terse_version_3"] == "3" and fields["jobname"] == fio["jobname"]
    assert int(fields["read_bandwidth_kb"]) == fio["read"]["bw"] and int(fields["read_kb"]) == fio["read"]["io_bytes"] >> 10
    assert float(fields["read_clat_mean_us"]) == pytest.approx(fio["read"]["clat_ns"]["mean"] / 1e3, rel=1e-6)
    assert fields["read_clat_pct01"].startswith("50.000000%=") and fields["write_kb"] == "0"
    assert fields["iodepth_32"] == "100.0%"
    shares = [float(fields[name].rstrip("%")) for name in TERSE_V3_NAMES[-22:]]
    assert sum(shares) == pytest.approx(100.0 if mode == "per-request" else 0.0, abs=0.05)


def _form(field: str) -> str:
    """A field's form: P%=N, a percentage, a decimal with 6 places, an integer, or text."""
    for name, pattern in (("pct=", r"\d+(\.\d{6})?%=\d+"), ("pct", r"\d+\.\d+%"), ("float", r"\d+\.\d{6}"), ("int", r"\d+")):
        if re.fullmatch(pattern, field):
            return name
    return "text"


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_terse_line_has_the_form_of_a_real_fio_terse_line(tmp_path):
    """A real fio 3.x terse line of a small read job: each of its first 121 fields has the form of ours at that position."""
    done = subprocess.run(["fio", "--name=t", f"--filename={tmp_path / 'f'}", "--size=1M", "--bs=4k", "--rw=randread", "--runtime=100ms",
                           "--time_based", "--ioengine=psync", "--output-format=terse"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    real = done.stdout.strip().splitlines()[-1].split(";")[:121]
    ours = _run("--format", "fio-terse").strip().split(";")
    assert [_form(f) for f in ours[5:]] == [_form(f) for f in real[5:]]


def test_a_workload_that_is_not_fio_is_one_clear_message():
    result = runner.invoke(app, ["run", "checkpoint_llama405b_8gpu", "--format", "fio-terse"])
    assert result.exit_code == 2 and "--format fio" in result.stderr and "'checkpoint'" in result.stderr, result.output
    assert result.stdout == "" and "Traceback" not in result.output
