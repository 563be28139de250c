"""`kind: cluster`: N storage nodes x M drives, k+m erasure coding, storage software as service stations, many clients.

The configuration is simulator.storage.cluster_config; the volume (service
stations per node and per client, erasure coding by request size, the closed
loop solved by MVA) is simulator.storage.cluster_volume, and its laws are
models.erasure, models.cluster_service, models.mva and models.incast.
"""

from __future__ import annotations

from iowatt.models import erasure
from iowatt.simulator.machine import CatalogRef
from iowatt.simulator.storage.cluster_config import PROFILE_FORMAT, ClusterClient, ClusterSoftware, ClusterStorageConfig, read_profile
from iowatt.simulator.storage.cluster_volume import build_cluster
from iowatt.simulator.storage.contract import Volume
from iowatt.simulator.storage.registry import BuildContext, StorageKind

__all__ = ["KIND", "PROFILE_FORMAT", "ClusterClient", "ClusterSoftware", "ClusterStorageConfig", "read_profile"]


def build(ctx: BuildContext, config: ClusterStorageConfig) -> Volume:
    return build_cluster(ctx, config)


def _drives_bought(config: ClusterStorageConfig) -> tuple[CatalogRef, int]:
    return config.device, config.nodes * config.drives_per_node


KIND = StorageKind(
    name="cluster",
    config=ClusterStorageConfig,
    build=build,
    drives_bought=_drives_bought,
    usable_fraction=lambda config: erasure.usable_fraction(*config.ec),  # k / (k + m)
    client_nodes=lambda config: config.clients,
    servers=lambda config: [("system.storage.node", config.node)],
)
