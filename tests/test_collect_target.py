"""`iowatt collect fio` refuses targets that would measure memory, and says what it found (issue 18 item 1).

Oracles: the mount table and the block-device tree the kernel documents
(proc(5) mountinfo fields; /sys/dev/block/MAJ:MIN and /sys/class/block links),
built here as small fake trees where this machine has no such target; the
independent /proc/self/mounts (not mountinfo) for the filesystem a real bundle
records.  Every refusal is exit 2, one `error:` line, nothing created.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from iowatt.calibration import inventory, target
from typer.testing import CliRunner

from iowatt.cli import app

runner = CliRunner()
NO_SUCH_DISK = Path("/dev/iowatt-no-such-nvme9n9")


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def refused(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and "Traceback" not in result.output, result.output
    for needle in needles:
        assert needle in result.stderr, result.stderr


def fake_mountinfo(tmp_path: Path, point: Path, fstype: str, source: str = "none") -> Path:
    """A mountinfo with / on ext4 and `point` on `fstype` (field layout from proc(5))."""
    path = tmp_path / "mountinfo"
    path.write_text(
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        f"99 27 0:77 / {str(point).replace(' ', chr(92) + '040')} rw,relatime shared:5 - {fstype} {source} rw,size=1024k\n"
    )
    return path


def test_a_mistyped_device_path_is_refused_and_nothing_is_created(tmp_path):
    """Before: /dev/nvme9n9 (absent) became a new file in devtmpfs and fio measured RAM at 2.4 GB/s, exit 0."""
    assert not NO_SUCH_DISK.exists()
    result = invoke("collect", "fio", "--target", NO_SUCH_DISK, "--plan", "quick", "--out", tmp_path / "b", "-q")
    refused(result, f"--target {NO_SUCH_DISK}", "expected an existing block device", "memory")
    assert not NO_SUCH_DISK.exists() and not (tmp_path / "b").exists()


def test_a_directory_under_dev_is_refused():
    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm here")
    with pytest.raises(target.CollectError, match="expected an existing block device under /dev"):
        target.resolve_target(shm, destructive=True, serial=None)


@pytest.mark.parametrize("fstype", target.MEMORY_FILESYSTEMS)
def test_memory_backed_filesystems_are_refused_naming_what_was_found(tmp_path, monkeypatch, fstype):
    folder = tmp_path / "scratch dir"
    folder.mkdir()
    monkeypatch.setattr(target, "PROC_MOUNTINFO", fake_mountinfo(tmp_path, folder, fstype))
    result = invoke("collect", "fio", "--target", folder, "--plan", "quick", "--out", tmp_path / "b", "-q")
    refused(result, f"on {fstype} mounted at {folder}", "memory-backed")
    assert list(folder.iterdir()) == [] and not (tmp_path / "b").exists()


def _fake_sys(tmp_path: Path, links: dict[str, str]) -> Path:
    """/sys/class/block/NAME -> ../../devices/<where>/NAME, as the kernel lays it out."""
    root = tmp_path / "sys"
    (root / "class" / "block").mkdir(parents=True)
    for name, where in links.items():
        device = root / "devices" / where / name
        device.mkdir(parents=True)
        (root / "class" / "block" / name).symlink_to(Path("..") / ".." / "devices" / where / name)
    return root


def test_device_kinds_from_the_block_device_tree(tmp_path):
    sys_root = _fake_sys(tmp_path, {"vda": "pci0000:00/0000:00:02.0/virtio1/block", "nvme0n1": "pci0000:00/0000:00:01.0/nvme/nvme0",
                                    "loop3": "virtual/block", "nbd0": "virtual/block", "zram0": "virtual/block", "sda": "pci0000:00/ata1/block"})
    kinds = {name: target.device_kind(name, sys_root) for name in ("vda", "nvme0n1", "loop3", "nbd0", "zram0", "sda")}
    assert kinds == {"vda": "virtio", "nvme0n1": "block", "loop3": "loop", "nbd0": "nbd", "zram0": "memory", "sda": "block"}


def test_a_filesystem_on_a_ram_block_device_is_refused(tmp_path, monkeypatch):
    """zram/brd: the filesystem is a disk filesystem, the bytes live in memory."""
    folder = tmp_path / "on-zram"
    folder.mkdir()
    st = os.stat(folder)
    sys_root = _fake_sys(tmp_path, {"zram0": "virtual/block"})
    (sys_root / "dev" / "block").mkdir(parents=True)
    (sys_root / "dev" / "block" / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}").symlink_to(sys_root / "devices" / "virtual" / "block" / "zram0")
    monkeypatch.setattr(target, "SYS", sys_root)
    monkeypatch.setattr(target, "PROC_MOUNTINFO", fake_mountinfo(tmp_path, folder, "ext4", "/dev/zram0"))
    with pytest.raises(target.CollectError, match=r"device zram0 \(memory\)"):
        target.resolve_target(folder, destructive=False, serial=None)


def test_mountinfo_picks_the_innermost_mount_and_unescapes_spaces(tmp_path):
    folder = tmp_path / "a b"
    folder.mkdir()
    backing = target.backing_of(folder / "new-file", fake_mountinfo(tmp_path, folder, "xfs", "/dev/sdz1"))
    assert (backing.filesystem, backing.mount_point, backing.source) == ("xfs", str(folder), "/dev/sdz1")


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_the_bundle_records_filesystem_and_device(tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    found = target.backing_of(folder)
    if found.memory:
        pytest.skip(f"the temporary folder is memory-backed here ({found.describe()})")
    plan = tmp_path / "p.yaml"
    plan.write_text(json.dumps({"name": "one", "runtime_s": 0.1, "ramp_s": 0.0, "size": "4M", "jobs": [{"rw": "read", "bs": "1m", "iodepth": 1}]}))
    result = invoke("collect", "fio", "--target", folder, "--plan", plan, "--out", tmp_path / "b")
    assert result.exit_code == 0, result.output
    assert f"target {folder}: " in result.stderr  # says what it found before measuring
    recorded = json.loads((tmp_path / "b" / "inventory.json").read_text())["backing"]
    assert recorded["filesystem"] == inventory.filesystem_of(folder)["type"]  # /proc/self/mounts, read independently
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())["target"]
    assert manifest["filesystem"] == recorded["filesystem"] and manifest["backing_device"] == recorded["device"]
    assert manifest["backing_device_kind"] == recorded["device_kind"]


@pytest.mark.parametrize(("kind", "warned"), [("virtio", True), ("loop", True), ("nbd", True), ("block", False)])
def test_calibrate_warns_when_the_bundle_was_measured_on_a_virtual_device(kind, warned):
    message = target.virtual_device_warning({"backing_device": "x0", "backing_device_kind": kind})
    assert (message is not None) == warned
    if warned:
        assert kind in message and "x0" in message
    # bundles written before the kind was recorded: classified by the device's name
    assert target.virtual_device_warning({"device": "loop7"}) is not None
    assert target.virtual_device_warning({"device": None}) is None


def test_a_target_that_does_not_exist_is_refused_naming_it(tmp_path):
    """Issue 36 item 18: `--target ./nosuch_dir` became a new test file in the parent folder (its disk measured), exit 0.
    Now it is exit 2 naming --target, and nothing is created. Oracle: the path does not exist (os.path.exists)."""
    missing = tmp_path / "nosuch_dir"
    result = invoke("collect", "fio", "--target", missing, "--plan", "quick", "--out", tmp_path / "b", "-q")
    refused(result, f"--target {missing}", "found nothing")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def _one_job_plan(tmp_path: Path, engine: str = "psync") -> Path:
    plan = tmp_path / "p.yaml"
    plan.write_text(json.dumps({"name": "one", "runtime_s": 0.1, "ramp_s": 0.0, "size": "4M", "ioengine": engine,
                                "jobs": [{"rw": "read", "bs": "1m", "iodepth": 1}]}))
    return plan


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_a_relative_out_works_and_a_failed_run_leaves_nothing_behind(tmp_path, monkeypatch):
    """Issue 36 item 1: with a relative --out (as the README prints it) fio could not open its output ('output file open
    error') and a half-written bundle stayed, so the retry failed with 'already exists'. Now a failed run leaves no folder
    at --out nor a partial sibling, and the retry with a relative --out writes a whole bundle.
    Oracle: the filesystem after each call (what exists), and bundle.load's checksum check of every file."""
    from iowatt.calibration import bundle

    folder = tmp_path / "scratch"
    folder.mkdir()
    if target.backing_of(folder).memory:
        pytest.skip(f"the temporary folder is memory-backed here ({target.backing_of(folder).describe()})")
    monkeypatch.chdir(tmp_path)
    failed = invoke("collect", "fio", "--target", "scratch", "--plan", _one_job_plan(tmp_path, "no-such-engine"), "--out", "bundle", "-q")
    refused(failed, "fio failed on job")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.yaml", "scratch"] and list(folder.iterdir()) == []
    result = invoke("collect", "fio", "--target", "scratch", "--plan", _one_job_plan(tmp_path), "--out", "bundle", "-q")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle", "p.yaml", "scratch"]
    assert [job.id for job in bundle.load(tmp_path / "bundle").jobs] and list(folder.iterdir()) == []
