"""The drives of a volume, as a scenario names them: which device, its NVMe power state, how full, and the
filesystem on them (what it tells the drives: models.filesystem)."""

from __future__ import annotations

from typing import Annotated, Any, Protocol

from iowatt.models import catalog
from iowatt.models.filesystem import PRESETS, Allocator, Discard, FilesystemName, FilesystemSpec, Replace
from iowatt.models.ftl import Precondition
from iowatt.models.units import Fraction, Seconds
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.machine import POWER_STATE_SCHEMA, CatalogOf, CatalogRef, check_catalog_ref, parse_power_state
from iowatt.simulator.storage import families
from iowatt.simulator.storage.contract import Drive
from iowatt.simulator.storage.power_policy import PowerPolicy
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator


class DriveFields(BaseModel):
    """The drives of a volume: which device, its NVMe power state, how full it is and the filesystem on it."""

    model_config = ConfigDict(extra="forbid")

    device: CatalogRef = Field(description="drive catalog name or inline spec, looked up in the device families' order "
                               "(NVMe SSDs, SATA SSDs, hard disks: models.catalog.DRIVE_FAMILIES)",
                               json_schema_extra=CatalogOf("drive"))
    power_state: Annotated[int, WithJsonSchema(POWER_STATE_SCHEMA)] = Field(default=0, description="NVMe power state, 'PS0'..'PS31'")
    fill: Fraction = Field(default=0.0, ge=0.0, le=1.0, description="share of user capacity the filesystem's files hold at the start")
    ftl_valid: Fraction | None = Field(
        default=None, ge=0.0, le=1.0,
        description="SSDs: share of user capacity the drive holds as valid at the start (at least `fill`; more = deleted "
        "data never discarded).  Default: `fill`",
    )
    precondition: Precondition = Field(
        default="random",
        description="SSDs: how the data on the drive at the start were written.  'random': SNIA PTS-E steady state of random "
        "writes, free space scattered over partly valid blocks (a drive in use); 'sequential': one sequential pass",
    )
    filesystem: FilesystemName = Field(
        default="ext4", description="filesystem on the volume: its defaults for discard, allocator and replace (models.filesystem)"
    )
    discard: Discard | None = Field(
        default=None,
        description="SSDs: 'on_delete' (mount -o discard), 'periodic' (fstrim every fstrim_interval) or 'none'.  "
        "Default: the filesystem's (ext4, xfs: none, their mount default)",
    )
    fstrim_interval: Seconds | None = Field(default=None, gt=0, description="period of fstrim with discard: periodic (default 1 week, fstrim.timer)")
    allocator: Allocator | None = Field(
        default=None,
        description="SSDs: where new files go: 'next_fit' (never-written space first, then the oldest freed; ext4's default) "
        "or 'reuse' (the space freed last; xfs's default)",
    )
    replace: Replace | None = Field(
        default=None,
        description="SSDs: how a file is replaced: 'delete_then_create' (default) or 'truncate_rewrite' (its own blocks first)",
    )
    power_policy: PowerPolicy = Field(default_factory=PowerPolicy, description="how the drives rest between bursts (fixed, apst, between_phases; aspm)")
    layout_clusters: int = Field(
        default=1, ge=1, le=1024,
        description="hard disks: equal pieces the data lie in, spread evenly over the disk (filesystem allocation groups); "
        "1 = contiguous from the outer edge",
    )

    @field_validator("device")
    @classmethod
    def _device(cls, value: CatalogRef) -> CatalogRef:
        first: ValueError | None = None
        for kind in catalog.DRIVE_FAMILIES:
            try:
                return check_catalog_ref(kind, value)
            except ValueError as error:
                first = first or error
        assert first is not None
        raise first

    @field_validator("power_state", mode="before")
    @classmethod
    def _power_state(cls, value: Any) -> int:
        return parse_power_state(value)

    @model_validator(mode="after")
    def _held(self) -> DriveFields:
        if self.ftl_valid is not None and self.ftl_valid < self.fill:
            raise ValueError(f"ftl_valid: expected at least fill ({self.fill:g}), found {self.ftl_valid:g}")
        return self

    @model_validator(mode="after")
    def _state_exists(self) -> DriveFields:
        kind, spec = catalog.drive_family(self.device)
        families.runtime(kind).check(spec, self)  # the fields its family does not take (power states on a disk)
        return self

    def filesystem_spec(self) -> FilesystemSpec:
        """The filesystem's preset with the fields given here overriding it."""
        preset = PRESETS[self.filesystem]
        changes = {k: v for k, v in (("discard", self.discard), ("allocator", self.allocator), ("replace", self.replace),
                                     ("fstrim_interval_s", self.fstrim_interval)) if v is not None}
        return preset.model_copy(update=changes)

    def device_spec(self) -> BaseModel:
        """The one catalog lookup of a drive (models.catalog.drive_family)."""
        return catalog.drive_family(self.device)[1]

    def build_drives(self, engine: FlowEngine, prefix: str, count: int) -> list[Drive]:
        """`count` drive runtimes of the device's family, named PREFIX + the family's prefix + N (ssd0, hdd3)."""
        kind, spec = catalog.drive_family(self.device)
        family = families.runtime(kind)
        return [family.build(engine, f"{prefix}{family.prefix}{i}", spec, self) for i in range(count)]


class CountedDrives(Protocol):
    """A storage config that buys `count` drives of one `device` (local, raid)."""

    device: CatalogRef
    count: int


def drives_bought(config: CountedDrives) -> tuple[CatalogRef, int]:
    """The drives a kind of `count` identical drives buys (its planning fact)."""
    return config.device, config.count
