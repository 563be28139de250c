"""Power sampling during a job, from whatever the machine has; each missing source is recorded as absent.

Sources: NVMe power state (nvme-cli get-feature 2), RAPL package energy
(/sys/class/powercap/*/energy_uj), IPMI DCMI system power (ipmitool) and GPU
power (nvidia-smi).  Samples carry the wall-clock time (epoch seconds); the
runner turns them into seconds since the fio job start so they line up with
fio's bw/lat logs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from pathlib import Path

POWERCAP = Path("/sys/class/powercap")


def _run(args: list[str], timeout: float = 3.0) -> str | None:
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


class Source(ABC):
    """One optional power reading of the machine (RAPL, NVMe power state, IPMI DCMI, nvidia-smi)."""

    name = ""

    @abstractmethod
    def probe(self) -> str | None:
        """None when available, else why not."""

    @abstractmethod
    def read(self) -> dict[str, float]:
        """The current readings, by column name."""


class Rapl(Source):
    name = "rapl"

    def __init__(self) -> None:
        self.files = sorted(POWERCAP.glob("intel-rapl:*/energy_uj")) if POWERCAP.is_dir() else []

    def probe(self) -> str | None:
        if not self.files:
            return f"no RAPL counters ({POWERCAP}/intel-rapl:*/energy_uj absent)"
        try:
            self.files[0].read_text()
        except OSError as error:
            return f"RAPL counters not readable ({error.strerror}); run as root"
        return None

    def read(self) -> dict[str, float]:
        values = {}
        for path in self.files:
            try:
                values[f"rapl_{path.parent.name}_uj"] = float(path.read_text())
            except (OSError, ValueError):
                pass
        return values


class NvmePowerState(Source):
    name = "nvme_ps"

    def __init__(self, device: str | None, states_W: list[float] | None = None) -> None:
        self.device = device
        self.states_W = states_W or []

    def probe(self) -> str | None:
        if not self.device or not self.device.startswith("nvme"):
            return "target is not an NVMe device"
        if shutil.which("nvme") is None:
            return "nvme-cli not installed (apt-get install nvme-cli)"
        return None if self.read() else "nvme get-feature -f 2 failed (needs root)"

    def read(self) -> dict[str, float]:
        out = _run(["nvme", "get-feature", f"/dev/{self.device}", "-f", "2"])
        match = re.search(r"(?:Current value|value):\s*(0x[0-9a-fA-F]+|\d+)", out or "")
        if not match:
            return {}
        ps = int(match.group(1), 0) & 0x1F
        values = {"nvme_ps": float(ps)}
        if ps < len(self.states_W):
            values["nvme_ps_max_W"] = self.states_W[ps]
        return values


class IpmiDcmi(Source):
    name = "ipmi_dcmi"

    def probe(self) -> str | None:
        if shutil.which("ipmitool") is None:
            return "ipmitool not installed (apt-get install ipmitool)"
        return None if self.read() else "ipmitool dcmi power reading failed (no BMC, or needs root)"

    def read(self) -> dict[str, float]:
        match = re.search(r"Instantaneous power reading:\s*([\d.]+)\s*Watts", _run(["ipmitool", "dcmi", "power", "reading"]) or "")
        return {"ipmi_system_W": float(match.group(1))} if match else {}


class NvidiaSmi(Source):
    name = "nvidia_smi"

    def probe(self) -> str | None:
        if shutil.which("nvidia-smi") is None:
            return "nvidia-smi not found"
        return None if self.read() else "nvidia-smi gave no power reading"

    def read(self) -> dict[str, float]:
        out = _run(["nvidia-smi", "--query-gpu=power.draw", "--format=csv,noheader,nounits"])
        values = []
        for line in (out or "").splitlines():
            try:
                values.append(float(line.strip()))
            except ValueError:
                pass
        return {"gpu_total_W": sum(values)} if values else {}


def detect(device: str | None, nvme_states_W: list[float] | None = None) -> tuple[list[Source], dict[str, dict[str, object]]]:
    """The sources that work here, and a record of every source (available or why not)."""
    usable: list[Source] = []
    record: dict[str, dict[str, object]] = {}
    for source in (NvmePowerState(device, nvme_states_W), Rapl(), IpmiDcmi(), NvidiaSmi()):
        why = source.probe()
        record[source.name] = {"available": why is None, "detail": why or "sampled"}
        if why is None:
            usable.append(source)
    return usable, record


class Sampler:
    """Samples every source on a thread every `interval_s` while a job runs."""

    def __init__(self, sources: list[Source], interval_s: float = 0.25) -> None:
        self.sources = sources
        self.interval_s = interval_s
        self.samples: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            row: dict[str, float] = {"epoch_s": time.time()}
            for source in self.sources:
                row.update(source.read())
            self.samples.append(row)
            self._stop.wait(self.interval_s)

    def __enter__(self) -> Sampler:
        if self.sources:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


def mean_power(samples: list[dict[str, float]], start_s: float, end_s: float) -> dict[str, float]:
    """Average power per column over [start_s, end_s] (seconds since job start); RAPL energy becomes watts."""
    window = [s for s in samples if start_s <= s["t_s"] <= end_s]
    result: dict[str, float] = {}
    if len(window) < 1:
        return result
    columns = {k for s in window for k in s if k not in ("t_s", "epoch_s")}
    for column in sorted(columns):
        points = [(s["t_s"], s[column]) for s in window if column in s]
        if column.endswith("_uj"):
            if len(points) >= 2 and points[-1][0] > points[0][0] and points[-1][1] >= points[0][1]:
                result[column[:-3] + "_W"] = (points[-1][1] - points[0][1]) / 1e6 / (points[-1][0] - points[0][0])
        elif points:
            result[column] = sum(v for _, v in points) / len(points)
    return result
