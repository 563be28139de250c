"""The drives of a volume, as a scenario names them: which device, its NVMe power state, how full, and the
filesystem on them (what it tells the drives: models.filesystem)."""

from __future__ import annotations

from typing import Annotated, Any, Protocol

from iowatt.models import catalog, ssd_power
from iowatt.models.filesystem import PRESETS, Allocator, Discard, FilesystemName, FilesystemSpec, Replace
from iowatt.models.ftl import Precondition
from iowatt.models.hdd import HDDSpec
from iowatt.models.ssd import SSDSpec
from iowatt.models.ssd_states import power_cap_W
from iowatt.models.units import Fraction, Seconds
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.machine import POWER_STATE_SCHEMA, CatalogRef, check_catalog_ref, parse_power_state
from iowatt.simulator.storage.contract import Drive
from iowatt.simulator.storage.hdd import HddDrive
from iowatt.simulator.storage.power_policy import PowerPolicy
from iowatt.simulator.storage.ssd import SsdDrive
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator


class DriveFields(BaseModel):
    """The drives of a volume: which device, its NVMe power state, how full it is and the filesystem on it."""

    model_config = ConfigDict(extra="forbid")

    device: CatalogRef = Field(description="SSD (or HDD) catalog name or inline spec; SSDs are looked up first")
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
        try:
            return check_catalog_ref("ssd", value)
        except ValueError as ssd_error:
            try:
                return check_catalog_ref("hdd", value)
            except ValueError:
                raise ssd_error from None

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
        spec = self.device_spec()
        if isinstance(spec, HDDSpec):
            if self.power_state != 0:
                raise ValueError(f"{spec.name} is a hard disk; it has no NVMe power states, found PS{self.power_state}")
            if self.power_policy != PowerPolicy():
                raise ValueError(f"power_policy: {spec.name} is a hard disk; expected no NVMe power policy, found {self.power_policy.kind}")
            return self
        cap = power_cap_W(spec, self.power_state)  # raises with the valid range
        if ssd_power.dynamic_budget_W(ssd_power.power_model(spec), cap) <= 0.0:
            raise ValueError(f"power_state: {spec.name} PS{self.power_state} caps at {cap} W, no more than its idle power and "
                             f"busy floor; expected a state with room for I/O")
        self.power_policy.check(spec, self.power_state)
        return self

    def filesystem_spec(self) -> FilesystemSpec:
        """The filesystem's preset with the fields given here overriding it."""
        preset = PRESETS[self.filesystem]
        changes = {k: v for k, v in (("discard", self.discard), ("allocator", self.allocator), ("replace", self.replace),
                                     ("fstrim_interval_s", self.fstrim_interval)) if v is not None}
        return preset.model_copy(update=changes)

    def device_spec(self) -> SSDSpec | HDDSpec:
        """The one catalog lookup of a drive: SSDs first, then hard disks."""
        return catalog.drive_spec(self.device)

    def build_drives(self, engine: FlowEngine, prefix: str, count: int) -> list[Drive]:
        """`count` drive runtimes named PREFIXssdN / PREFIXhddN."""
        spec = self.device_spec()
        if isinstance(spec, HDDSpec):
            return [HddDrive(engine, f"{prefix}hdd{i}", spec, self.fill, data_clusters=self.layout_clusters) for i in range(count)]
        fs = self.filesystem_spec()
        return [SsdDrive(engine, f"{prefix}ssd{i}", spec, self.power_state, self.fill, fs, self.ftl_valid, self.precondition, self.power_policy)
                for i in range(count)]


class CountedDrives(Protocol):
    """A storage config that buys `count` drives of one `device` (local, raid)."""

    device: CatalogRef
    count: int


def drives_bought(config: CountedDrives) -> tuple[CatalogRef, int]:
    """The drives a kind of `count` identical drives buys (its planning fact)."""
    return config.device, config.count
