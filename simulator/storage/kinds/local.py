"""`kind: local` (the default): drives in the server; more than one are striped (RAID 0)."""

from __future__ import annotations

from typing import Literal

from iowatt.simulator.storage.contract import Volume
from iowatt.simulator.storage.drive_fields import DriveFields, drives_bought
from iowatt.simulator.storage.host_interface import HostInterfaceConfig, attach
from iowatt.simulator.storage.registry import BuildContext, StorageKind
from iowatt.simulator.storage.striped import StripedVolume
from pydantic import Field


class LocalStorageConfig(DriveFields):
    """`kind: local` (the default): drives in the server; more than one are striped (RAID 0)."""

    kind: Literal["local"] = "local"
    count: int = Field(default=1, ge=1, le=256, description="drives; more than one are striped (RAID 0)")
    attach: HostInterfaceConfig | None = Field(
        default=None, description="where the drives attach: `hba`, `expander_lanes`, `switch_uplink` (default: the CPU's own lanes)"
    )


def build(ctx: BuildContext, config: LocalStorageConfig) -> Volume:
    return attach(ctx.engine, StripedVolume(config.build_drives(ctx.engine, ctx.prefix, config.count)), config.attach, ctx.prefix)


KIND = StorageKind(
    name="local",
    config=LocalStorageConfig,
    build=build,
    drives_bought=drives_bought,
    usable_fraction=lambda _config: 1.0,  # striped: every byte holds user data
)
