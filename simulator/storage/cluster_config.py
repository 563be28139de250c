"""The configuration of `kind: cluster` (simulator/storage/kinds/cluster.py): nodes, drives, erasure coding, software, clients.

Kept apart from the kind's module so that the volume (simulator.storage.cluster_volume)
imports its config type without importing the kind, and the kind imports both: no cycle.
The volume (service stations per node and per
client, erasure coding by request size, the closed loop solved by MVA) is
simulator.storage.cluster_volume, and its laws are models.erasure,
models.cluster_service, models.mva and models.incast.

The software's parameters (cores per process type, per-core rates, the client
stack) default to a WEKA-like design with the sources models.cluster_service
gives; `profile: PATH` takes them from a profile written by `iowatt calibrate
--kind cluster` (values given here explicitly still win).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from iowatt.models import cluster_service as svc
from iowatt.models import erasure
from iowatt.models.cluster_service import ClientStack, CoreRates
from iowatt.models.erasure import ErasureAt, SmallWrites
from iowatt.models.fabric import FabricName
from iowatt.models.incast import IncastConfig
from iowatt.models.provenance import unwrap
from iowatt.models.uncertainty import assumed_field
from iowatt.models.units import Bytes, Seconds
from iowatt.simulator.machine import ServerConfig
from iowatt.simulator.storage.drive_fields import DriveFields
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

PROFILE_FORMAT = "iowatt-cluster-profile"


def _rates_over(defaults: CoreRates, value: Any) -> Any:
    """A partial mapping of per-core rates fills in from the process type's defaults (so --set can change one)."""
    return {**defaults.model_dump(), **value} if isinstance(value, dict) else value


class ClusterSoftware(BaseModel):
    """The storage software on every node: dedicated cores per process type and what one core serves."""

    model_config = ConfigDict(extra="forbid")

    compute_cores: int | None = Field(default=None, ge=1, le=512, description="compute-process cores per node (default 2 per drive core, WEKA)")
    drive_cores: int | None = Field(
        default=None, ge=1, le=512, description="drive-process cores per node (default 1 per SSD up to 6, then 1 per 2 SSDs, WEKA)")
    compute: CoreRates | None = Field(
        default=None, description="per reference core: requests and bytes the compute processes serve (default: "
        "models.cluster_service's assumed compute costs, read when the volume is built)")
    drive: CoreRates = Field(default=svc.DRIVE_RATES, description="per reference core: pieces and bytes the drive processes serve")
    stripe_unit: Bytes = Field(default=erasure.STRIPE_UNIT_BYTES, ge=512, description="data per chunk of a stripe (Ceph's default 4 KiB)")
    small_writes: SmallWrites = Field(
        default="journal", description="partial-stripe writes: journal (redirect-on-write, destaged later: WEKA, DAOS) or rmw (in place: Ceph)")
    erasure_at: ErasureAt = Field(default="server", description="who computes the code: server (WEKA, Ceph) or client (DAOS)")
    hop: Seconds | None = Field(
        default=None, ge=0, description="one-way network hop between nodes, protocol processing included (default: "
        "models.cluster_service's assumed DPDK hop, 13 us)")

    @field_validator("compute", mode="before")
    @classmethod
    def _compute(cls, value: Any) -> Any:
        return _rates_over(svc.compute_rates(), value)

    @field_validator("drive", mode="before")
    @classmethod
    def _drive(cls, value: Any) -> Any:
        return _rates_over(svc.DRIVE_RATES, value)

    def compute_rates(self) -> CoreRates:
        return self.compute if self.compute is not None else svc.compute_rates()

    @property
    def hop_s(self) -> float:
        return self.hop if self.hop is not None else svc.dpdk_hop_s()


class ClusterClient(BaseModel):
    """Each client node's storage stack: a DPDK frontend on dedicated cores, or a kernel (or FUSE) client on the host's CPU."""

    model_config = ConfigDict(extra="forbid")

    stack: ClientStack = Field(default="dpdk", description="dpdk (user-space frontend on dedicated cores), kernel (UDP/NFS client), fuse")
    frontend_cores: int = assumed_field(
        1, low=1, high=6, shape="log-uniform", point="documented default", ge=1, le=256,
        description="dedicated frontend cores per client (dpdk; WEKA's default 1)",
        note="WEKA's client takes one physical core by default (docs.weka.io, planning-a-weka-system-installation)",
        range_note="low: that default; high: 6, the frontend cores of the clients in WEKA's own performance tests "
        "(docs.weka.io testing-weka-system-performance, SuperMicro rows; models.cluster_service)")
    frontend: CoreRates = Field(default=svc.FRONTEND_RATES, description="per reference core: requests and bytes a frontend core serves")
    hop: Seconds | None = Field(default=None, ge=0, description="one-way hop client <-> node (default by stack: dpdk 13 us, kernel 30 us)")

    @field_validator("frontend", mode="before")
    @classmethod
    def _frontend(cls, value: Any) -> Any:
        return _rates_over(svc.FRONTEND_RATES, value)

    @property
    def hop_s(self) -> float:
        return self.hop if self.hop is not None else svc.client_hop_s(self.stack)


class ClusterStorageConfig(DriveFields):
    """`kind: cluster`: N storage nodes x M drives, k+m erasure coding, its software, `clients` client nodes."""

    kind: Literal["cluster"]
    nodes: int = Field(ge=1, le=1024, description="storage nodes")
    drives_per_node: int = Field(ge=1, le=64, description="drives in each storage node (striped)")
    erasure_coding: str = Field(default="4+2", description="k+m: data and parity chunks per stripe, e.g. '4+2'")
    node: ServerConfig = Field(default_factory=ServerConfig, description="each storage node's CPU, DRAM and base power")
    node_nics: int = Field(default=2, ge=1, le=16, description="NIC ports per storage node")
    fabric: FabricName = Field(default="200gbe", description="NIC ports of nodes and clients")
    protocol: Literal["tcp", "rdma"] = Field(default="tcp", description="transport on the wire (framing; rdma also lets a DPDK client skip data copies)")
    mtu: int | None = Field(default=None, ge=576, le=9216, description="Ethernet/IP MTU (default 1500 for tcp, 4096 for RDMA)")
    nic_ports_per_card: int = Field(
        default=1, ge=1, le=4, description="NIC ports sharing one card's PCIe x16 host link (ConnectX-6: 2 x 200 GbE on one Gen4 x16)")
    clients: int = Field(default=1, ge=1, le=4096, description="identical client nodes, modelled as one aggregate")
    client_nics: int = Field(default=1, ge=1, le=16, description="NIC ports per client node")
    failed_nodes: int = Field(default=0, ge=0, description="storage nodes down (degraded reads rebuild their chunks)")
    software: ClusterSoftware = Field(default_factory=ClusterSoftware, description="the storage software on the nodes")
    client: ClusterClient = Field(default_factory=ClusterClient, description="the clients' storage stack")
    incast: IncastConfig | None = Field(default=None, description="TCP incast at the clients' switch ports (Phanishayee et al., FAST 2008); off by default")
    profile: str | None = Field(default=None, description="a profile from `iowatt calibrate --kind cluster`: its software and client values are the defaults")

    @model_validator(mode="before")
    @classmethod
    def _profile(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("profile") is None:
            return data
        fitted = read_profile(str(data["profile"]))
        merged = dict(data)
        for section in ("software", "client"):
            given = data.get(section) or {}
            if not isinstance(given, dict):
                continue
            merged[section] = _merge(fitted.get(section, {}), given)
        return merged

    @field_validator("erasure_coding", mode="before")
    @classmethod
    def _ec(cls, value: Any) -> str:
        return erasure.parse_k_plus_m("erasure_coding", value)

    @property
    def ec(self) -> tuple[int, int]:
        k, _, m = self.erasure_coding.partition("+")
        return int(k), int(m)

    @model_validator(mode="after")
    def _fits(self) -> ClusterStorageConfig:
        k, m = self.ec
        try:
            erasure.check_erasure(k, m, self.nodes, self.failed_nodes)
        except ValueError as error:
            raise ValueError(f"nodes/erasure_coding/failed_nodes: {error}") from None
        cores = self.node.cpu_spec().cores * self.node.sockets
        if self.compute_cores + self.drive_cores > cores - 1:
            raise ValueError(f"software: {self.compute_cores} compute + {self.drive_cores} drive cores do not fit a node of {cores} cores "
                             "with one left to the operating system (docs.weka.io planning); give fewer, or a bigger node.cpu")
        if self.incast is not None and self.protocol != "tcp":
            raise ValueError(f"incast: TCP incast needs protocol tcp (RDMA fabrics are lossless), found protocol {self.protocol!r}")
        return self

    @property
    def count(self) -> int:
        """Drives in the whole cluster (what `storage.count` means for the other kinds)."""
        return self.nodes * self.drives_per_node

    @property
    def drive_cores(self) -> int:
        return self.software.drive_cores or svc.drive_processes(self.drives_per_node)

    @property
    def compute_cores(self) -> int:
        return self.software.compute_cores or svc.compute_processes(self.drive_cores)

    def layout(self) -> erasure.Layout:
        k, m = self.ec
        s = self.software
        return erasure.Layout(k, m, self.nodes, self.failed_nodes, s.stripe_unit, s.small_writes, s.erasure_at)


def _merge(base: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """`given` over `base`, one level of nested mappings deep (per-core rates merge field by field)."""
    out = dict(base)
    for key, value in given.items():
        out[key] = {**base[key], **value} if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return out


def read_profile(path: str) -> dict[str, Any]:
    """The software and client values of a cluster profile (provenance wrappers removed)."""
    file = Path(path)
    try:
        document = yaml.safe_load(file.read_text())
    except OSError:
        raise ValueError(f"profile: expected a cluster profile YAML file (from `iowatt calibrate --kind cluster`), found no file {path!r}") from None
    except yaml.YAMLError as error:
        raise ValueError(f"profile: {path} is not valid YAML ({error})") from None
    if not isinstance(document, dict) or document.get("format") != PROFILE_FORMAT:
        found = document.get("format") if isinstance(document, dict) else type(document).__name__
        raise ValueError(f"profile: expected format {PROFILE_FORMAT!r} in {path}, found {found!r}")
    try:
        return {section: unwrap(document.get(section) or {})[0] for section in ("software", "client")}
    except ValueError as error:
        raise ValueError(f"profile: {path}: {error}") from None
