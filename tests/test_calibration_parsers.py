"""fio output and log parsers, on real fio outputs (tests/fixtures/fio, made by fio 3.33; see its README).

Oracles are fio's own identities: bandwidth = bytes moved / runtime, IOPS x
block size = bandwidth, the 100 ms log windows average to the summary
bandwidth and latency, and a 70/30 random mix issues ~70 % reads.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from iowatt.calibration.fioparse import FioParseError, load_document, parse, parse_file, read_log, size_bytes

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "fio"


def raw(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def test_randread_record_matches_fio_identities():
    record = parse_file(FIXTURES / "randread-4k-qd4-j1.json")
    document = raw("randread-4k-qd4-j1.json")
    job = document["jobs"][0]
    assert (record["rw"], record["bs"], record["iodepth"], record["numjobs"], record["rwmixread"]) == ("randread", 4096, 4, 1, 100)
    # conservation: bandwidth = bytes / runtime (fio rounds bw_bytes to an integer, runtime to ms)
    assert record["read_bytes"] / (job["read"]["runtime"] / 1e3) == pytest.approx(record["bw_Bps"], rel=2e-3)
    # IOPS x block = bandwidth
    assert record["iops"] * 4096 == pytest.approx(record["bw_Bps"], rel=1e-3)
    assert record["write_bytes"] == 0 and record["write_bw_Bps"] == 0
    # the mean latency is fio's lat_ns mean (total latency = submission + completion)
    assert record["lat_mean_us"] == pytest.approx(job["read"]["lat_ns"]["mean"] / 1e3)
    assert 0 < record["read_clat_p50_us"] <= record["read_clat_p99_us"]
    # Little's law on a closed loop of 4 requests: IOPS x latency = 4 outstanding (within fio's submit gaps)
    assert record["iops"] * record["lat_mean_us"] * 1e-6 == pytest.approx(4.0, rel=0.1)
    assert record["fio_version"].startswith("fio-3")


def test_mixed_numjobs_record_weights_latency_by_iops():
    record = parse_file(FIXTURES / "randrw-m70-16k-qd8-j2.json")
    job = raw("randrw-m70-16k-qd8-j2.json")["jobs"][0]
    assert (record["rw"], record["bs"], record["iodepth"], record["numjobs"], record["rwmixread"]) == ("randrw", 16384, 8, 2, 70)
    assert record["bw_Bps"] == pytest.approx(record["read_bw_Bps"] + record["write_bw_Bps"])
    share = record["read_iops"] / record["iops"]
    assert share == pytest.approx(0.70, abs=0.03)  # binomial: thousands of I/Os, sd < 1 %
    expected = (job["read"]["lat_ns"]["mean"] * job["read"]["iops"] + job["write"]["lat_ns"]["mean"] * job["write"]["iops"]) / (
        job["read"]["iops"] + job["write"]["iops"]
    )
    assert record["lat_mean_us"] == pytest.approx(expected / 1e3)
    # 2 jobs x QD8 = 16 outstanding (Little's law, group_reporting sums both jobs)
    assert record["iops"] * record["lat_mean_us"] * 1e-6 == pytest.approx(16.0, rel=0.15)


def test_plain_json_write_record():
    record = parse_file(FIXTURES / "write-1m-qd2-j1.json")
    assert (record["rw"], record["bs"], record["rwmixread"]) == ("write", 1 << 20, 0)
    assert record["read_bytes"] == 0
    assert record["iops"] * (1 << 20) == pytest.approx(record["bw_Bps"], rel=1e-3)


def test_bw_and_lat_logs_average_to_the_summary():
    record = parse_file(FIXTURES / "randread-4k-qd4-j1.json")
    bw = read_log(FIXTURES / "randread-4k-qd4-j1_bw.1.log")
    lat = read_log(FIXTURES / "randread-4k-qd4-j1_lat.1.log")
    assert len(bw) >= 5 and len(lat) >= 5
    times = [t for t, _ in bw]
    assert times == sorted(times) and times[-1] <= 1.1  # seconds since the job start, 1 s job
    # fio logs bandwidth in KiB/s and latency in ns per 100 ms window; their means are the summary's within 15 %
    assert statistics.fmean(v for _, v in bw) * 1024 == pytest.approx(record["bw_Bps"], rel=0.15)
    assert statistics.fmean(v for _, v in lat) / 1e3 == pytest.approx(record["lat_mean_us"], rel=0.15)


def test_notes_printed_before_the_document_are_skipped():
    text = (FIXTURES / "write-1m-qd2-j1.json").read_text()
    noisy = "fio: file hash not empty on exit\nnote: both iodepth >= 1 and synchronous I/O engine are selected\n" + text
    assert parse(load_document(noisy)) == parse(load_document(text))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no JSON document"),
        ("fio: pid=1, err=2/file:filesetup.c", "no JSON document"),
        ('{"fio version": "fio-3.33", "jobs": []}', "has no jobs"),
        ('{"jobs": [', "not valid JSON"),
    ],
)
def test_broken_outputs_are_refused_with_a_reason(text: str, message: str):
    with pytest.raises(FioParseError, match=message):
        load_document(text, "x.json")


def test_truncated_fixture_is_refused():
    text = (FIXTURES / "randread-4k-qd4-j1.json").read_text()
    with pytest.raises(FioParseError, match="not valid JSON"):
        load_document(text[: len(text) // 2])


def test_job_that_failed_is_refused():
    document = raw("write-1m-qd2-j1.json")
    document["jobs"][0]["error"] = 5
    with pytest.raises(FioParseError, match="error 5"):
        parse(document)


@pytest.mark.parametrize(("text", "value"), [("4k", 4096), ("1M", 1 << 20), ("128KiB", 128000), ("131072", 131072), (512, 512), ("1g", 1 << 30)])
def test_fio_sizes_follow_fios_default_kb_base(text, value):
    """Oracle: fio(1), kb_base=1024 (the default compatibility mode): SI-looking prefixes are powers of
    two and IEC prefixes powers of ten, so '128KiB' in fio output is 128,000 bytes."""
    assert size_bytes(text) == value


def test_unknown_size_suffix_is_refused():
    with pytest.raises(FioParseError, match="cannot read the size"):
        size_bytes("4 parsecs")
