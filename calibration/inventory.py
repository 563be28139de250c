"""What the machine and the target are: CPU, memory, kernel, block device, NVMe identify, filesystem."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any

SYS_BLOCK = Path("/sys/block")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _cpu() -> dict[str, Any]:
    model = None
    text = _read(Path("/proc/cpuinfo")) or ""
    for line in text.splitlines():
        if line.lower().startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {"model": model or platform.processor() or "unknown", "logical_cpus": os.cpu_count(), "machine": platform.machine()}


def _memory() -> dict[str, Any]:
    text = _read(Path("/proc/meminfo")) or ""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            return {"total_bytes": int(line.split()[1]) * 1024}
    return {"total_bytes": None}


def block_device_of(path: Path) -> str | None:
    """Name under /sys/block of the whole disk holding `path` (a file, directory or block device)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    import stat as stat_mod

    dev = st.st_rdev if stat_mod.S_ISBLK(st.st_mode) else st.st_dev
    link = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    try:
        real = link.resolve(strict=True)
    except OSError:
        return None
    if (real / "partition").exists():
        real = real.parent
    return real.name


def device_info(name: str | None) -> dict[str, Any]:
    if not name:
        return {"name": None}
    base = SYS_BLOCK / name
    serial = _read(base / "serial") or _read(base / "device" / "serial")
    rotational = _read(base / "queue" / "rotational")
    size = _read(base / "size")
    return {
        "name": name,
        "path": f"/dev/{name}",
        "model": _read(base / "device" / "model"),
        "serial": serial,
        "firmware": _read(base / "device" / "firmware_rev"),
        "rotational": None if rotational is None else rotational == "1",
        "size_bytes": int(size) * 512 if size and size.isdigit() else None,
        "scheduler": _read(base / "queue" / "scheduler"),
        "logical_block_bytes": _read(base / "queue" / "logical_block_size"),
    }


def device_serial(name: str) -> str | None:
    return device_info(name).get("serial")


def mounts() -> list[tuple[str, str, str]]:
    """(device, mount point, filesystem type) from /proc/mounts."""
    found = []
    for line in (_read(Path("/proc/mounts")) or "").splitlines():
        fields = line.split()
        if len(fields) >= 3:
            found.append((fields[0], fields[1].replace("\\040", " "), fields[2]))
    return found


def filesystem_of(path: Path) -> dict[str, Any]:
    path = path.resolve()
    best: tuple[str, str, str] | None = None
    for device, point, fstype in mounts():
        if (path == Path(point) or path.is_relative_to(point)) and (best is None or len(point) > len(best[1])):
            best = (device, point, fstype)
    if best is None:
        return {"mount_point": None, "type": None, "source": None}
    return {"mount_point": best[1], "type": best[2], "source": best[0]}


def nvme_identify(name: str | None) -> dict[str, Any]:
    """nvme id-ctrl (model, firmware, power-state table) when nvme-cli exists and the device is NVMe."""
    if not name or not name.startswith("nvme"):
        return {"available": False, "detail": "target is not an NVMe device"}
    if shutil.which("nvme") is None:
        return {"available": False, "detail": "nvme-cli not installed (apt-get install nvme-cli)"}
    controller = f"/dev/{name}"  # id-ctrl accepts a namespace and answers for its controller
    try:
        out = subprocess.run(["nvme", "id-ctrl", controller, "-o", "json"], capture_output=True, text=True, timeout=10, check=True).stdout
        data = json.loads(out)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as error:
        return {"available": False, "detail": f"nvme id-ctrl failed: {error}"}
    states = []
    for i, psd in enumerate(data.get("psds", [])):
        scale = 0.0001 if psd.get("max_power_scale", 0) else 0.01
        states.append(
            {
                "ps": i,
                "max_W": psd.get("max_power", 0) * scale,
                "entry_lat_us": psd.get("entry_lat"),
                "exit_lat_us": psd.get("exit_lat"),
                "non_operational": bool(psd.get("flags", 0) & 2),
            }
        )
    return {
        "available": True,
        "model": str(data.get("mn", "")).strip(),
        "serial": str(data.get("sn", "")).strip(),
        "firmware": str(data.get("fr", "")).strip(),
        "power_states": states,
    }


def collect(target: Path) -> dict[str, Any]:
    name = block_device_of(target)
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "cpu": _cpu(),
        "memory": _memory(),
        "target": str(target),
        "block_device": device_info(name),
        "nvme": nvme_identify(name),
        "filesystem": filesystem_of(target),
    }
