"""What `iowatt collect fio --target PATH` would measure, and whether it may.

The target is a directory (a test file is created inside it and removed
afterwards), a file path (created and removed when new; an existing file is
overwritten only with --destructive), or a block device, refused unless
--destructive and --serial SERIAL match the device and no filesystem on it is
mounted.

Before anything runs, the target's filesystem and backing device are resolved
(/proc/self/mountinfo for the mount, /sys/dev/block and /sys/class/block for
the device).  A memory-backed target is refused: fio would measure RAM and
calibrate would fit that as a disk.  That covers tmpfs, ramfs and devtmpfs
(a mistyped `/dev/nvme9n9` is a new file in devtmpfs), RAM block devices
(zram, brd), and any path under /dev that is not an existing block device.
A virtual device (virtio, loop, nbd) is measured, recorded, and warned about
by `calibrate`: it measures the hypervisor's or the file's storage path.
"""

from __future__ import annotations

import os
import stat
from dataclasses import asdict, dataclass
from pathlib import Path

from iowatt.calibration import inventory

TEST_FILE = "iowatt-fio.testfile"
MEMORY_FILESYSTEMS = ("tmpfs", "ramfs", "devtmpfs")
MEMORY_DEVICES = ("zram", "ram")  # /sys/block names of RAM-backed block devices (zram, brd)
VIRTUAL_DEVICES = ("virtio", "loop", "nbd")
PROC_MOUNTINFO = Path("/proc/self/mountinfo")
SYS = Path("/sys")


class CollectError(ValueError):
    pass


@dataclass(frozen=True)
class Backing:
    """Where the target's bytes end up: its filesystem (None for a raw device) and the block device under it."""

    filesystem: str | None
    mount_point: str | None
    source: str | None  # what is mounted (mountinfo's source field)
    device: str | None  # /sys/block name of the whole disk, when there is one
    device_kind: str | None  # virtio, loop, nbd, memory, or block; None without a device

    @property
    def memory(self) -> bool:
        return self.filesystem in MEMORY_FILESYSTEMS or self.device_kind == "memory"

    @property
    def virtual(self) -> bool:
        return self.device_kind in VIRTUAL_DEVICES

    def describe(self) -> str:
        fs = f"{self.filesystem} mounted at {self.mount_point}" if self.filesystem else "a raw block device"
        dev = f"device {self.device} ({self.device_kind})" if self.device else "no block device"
        return f"{fs}, {dev}"

    def record(self) -> dict[str, str | None]:
        return asdict(self)


@dataclass(frozen=True)
class Target:
    path: Path  # what the user named
    fio_filename: Path  # the file or device fio opens
    created: bool  # we created fio_filename and remove it afterwards
    raw_device: bool
    backing: Backing


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def mountinfo(path: Path = PROC_MOUNTINFO) -> list[tuple[str, str, str, str]]:
    """(major:minor, mount point, filesystem type, source) of every mount (proc(5), /proc/pid/mountinfo)."""
    found = []
    try:
        text = path.read_text()
    except OSError:
        return found
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if sep and len(fields) >= 5 and len(tail) >= 2:
            found.append((fields[2], _unescape(fields[4]), tail[0], _unescape(tail[1])))
    return found


def _mount_of(real: Path, mounts: list[tuple[str, str, str, str]]) -> tuple[str, str, str, str] | None:
    """The mount holding `real`: the last-mounted of the longest mount points above it (later mounts hide earlier ones)."""
    best: tuple[str, str, str, str] | None = None
    for entry in mounts:
        point = Path(entry[1])
        if (real == point or real.is_relative_to(point)) and (best is None or len(entry[1]) >= len(best[1])):
            best = entry
    return best


def _disk_of(major_minor: str, sys_root: Path) -> str | None:
    """/sys/block name of the whole disk for a device number (a partition's parent disk)."""
    try:
        real = (sys_root / "dev" / "block" / major_minor).resolve(strict=True)
    except OSError:
        return None
    return real.parent.name if (real / "partition").exists() else real.name


def device_kind(name: str, sys_root: Path | None = None) -> str:
    """virtio, loop, nbd, memory (zram, brd) or block (anything else: a disk, or dm/md over disks)."""
    sys_root = sys_root or SYS
    if name.startswith(MEMORY_DEVICES):
        return "memory"
    for kind in ("loop", "nbd"):
        if name.startswith(kind):
            return kind
    try:
        where = str((sys_root / "class" / "block" / name).resolve(strict=True))
    except OSError:
        where = ""
    return "virtio" if "/virtio" in where or name.startswith("vd") else "block"


def backing_of(path: Path, proc_mountinfo: Path | None = None, sys_root: Path | None = None) -> Backing:
    """The filesystem and device holding `path` (or, for a path not yet created, its nearest existing folder)."""
    proc_mountinfo = proc_mountinfo or PROC_MOUNTINFO
    sys_root = sys_root or SYS
    existing = Path(os.path.realpath(path))
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    st = os.stat(existing)
    if stat.S_ISBLK(st.st_mode):
        name = _disk_of(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}", sys_root)
        return Backing(None, None, str(existing), name, device_kind(name, sys_root) if name else None)
    mount = _mount_of(existing, mountinfo(proc_mountinfo))
    number = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    name = _disk_of(number, sys_root)
    if name is None and mount is not None and mount[3].startswith("/dev/"):
        try:  # btrfs, overlay and others report an anonymous device number; the mounted source names the disk
            source = os.stat(mount[3])
            if stat.S_ISBLK(source.st_mode):
                name = _disk_of(f"{os.major(source.st_rdev)}:{os.minor(source.st_rdev)}", sys_root)
        except OSError:
            pass
    if mount is None:
        return Backing(None, None, None, name, device_kind(name, sys_root) if name else None)
    return Backing(mount[2], mount[1], mount[3], name, device_kind(name, sys_root) if name else None)


def _mounted_partitions(device: str) -> list[str]:
    names = {device}
    base = inventory.SYS_BLOCK / device
    if base.is_dir():
        names |= {p.name for p in base.iterdir() if (p / "partition").exists()}
    found = []
    for source, point, _ in inventory.mounts():
        if source.startswith("/dev/") and Path(source).name in names:
            found.append(f"{source} on {point}")
        elif source.startswith("/dev/") and os.path.exists(source):
            real = Path(source).resolve().name
            if real in names:
                found.append(f"{source} on {point}")
    return found


def _under_dev(path: Path) -> bool:
    absolute = Path(os.path.abspath(path))
    return absolute.is_relative_to("/dev") or Path(os.path.realpath(path)).is_relative_to("/dev")


def _block_device(path: Path, real: Path, destructive: bool, serial: str | None, backing: Backing) -> Target:
    name = real.name
    disk = inventory.block_device_of(real) or name
    mounted = _mounted_partitions(disk) + ([] if disk == name else _mounted_partitions(name))
    actual = inventory.device_serial(disk)
    if not destructive or serial is None:
        raise CollectError(
            f"--target {path}: a raw block device; fio would write to it directly and destroy its data. "
            f"Refused unless --destructive and --serial {actual or 'SERIAL'} (the device's serial) are both given"
            + (f"; it also holds a mounted filesystem ({', '.join(mounted)})" if mounted else "")
        )
    if actual is None or serial.strip() != actual.strip():
        raise CollectError(f"--target {path}: --serial {serial!r} does not match the device's serial {actual!r}; refused")
    if mounted:
        raise CollectError(f"--target {path}: holds a mounted filesystem ({', '.join(mounted)}); unmount it first, or give a directory on it")
    if backing.memory:
        raise CollectError(f"--target {path}: {name} is a RAM-backed block device ({backing.describe()}); fio would measure memory, not a disk")
    return Target(path, real, created=False, raw_device=True, backing=backing)


def resolve_target(path: Path, destructive: bool, serial: str | None) -> Target:
    """The file or device fio will open, after every safety check; raises CollectError naming what was found."""
    is_block = path.exists() and stat.S_ISBLK(os.stat(path).st_mode)
    backing = backing_of(path)
    if _under_dev(path) and not is_block:
        new = not path.exists() and not path.is_symlink()
        found = "nothing (a new file there would be" if new else "a path that is not a block device (it is"
        raise CollectError(
            f"--target {path}: expected an existing block device under /dev, found {found} on {backing.describe()}); "
            "fio would measure memory, not a disk. List the disks with `lsblk`; a raw device also needs --destructive and --serial"
        )
    if not path.exists():  # a new name would be measured on whatever disk holds its parent folder: say so instead
        raise CollectError(f"--target {path}: expected an existing directory (a test file is made in it), file or block device, "
                           f"found nothing there; create the folder on the disk to measure first (mkdir -p {path})")
    if backing.memory and not is_block:
        raise CollectError(
            f"--target {path}: on {backing.describe()}, which is memory-backed; fio would measure RAM, not a disk. "
            "Give a directory on the disk to measure"
        )
    real = path.resolve()
    mode = real.stat().st_mode
    if stat.S_ISDIR(mode):
        if not os.access(real, os.W_OK):
            raise CollectError(f"--target {path}: the directory is not writable")
        test_file = real / TEST_FILE
        if test_file.exists():
            raise CollectError(f"--target {path}: {test_file} already exists (left by an interrupted run?); remove it first")
        return Target(path, test_file, created=True, raw_device=False, backing=backing)
    if stat.S_ISREG(mode):
        if not destructive:
            raise CollectError(
                f"--target {path}: the file exists and write jobs would overwrite it; give a directory (a test file is made in it), or pass --destructive"
            )
        return Target(path, real, created=False, raw_device=False, backing=backing)
    if stat.S_ISBLK(mode):
        return _block_device(path, real, destructive, serial, backing)
    raise CollectError(f"--target {path}: expected a directory, a file or a block device, found another kind of file")


def virtual_device_warning(target: dict[str, object]) -> str | None:
    """What to tell a user fitting a bundle measured on a virtual device (its manifest's `target`), or None."""
    name = target.get("backing_device") or target.get("device")
    kind = target.get("backing_device_kind") or (device_kind(str(name)) if name else None)
    if kind not in VIRTUAL_DEVICES:
        return None
    return (f"the bundle was measured on {name}, a {kind} device: the fit describes the virtual storage path "
            f"({'the hypervisor and its host disk' if kind == 'virtio' else 'the file or server behind it'}), not a drive")
