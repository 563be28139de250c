"""How a training saves its checkpoints: the `workload.save` section of a checkpoint scenario.

blocking  training stops until every rank's save returns (torch.save from the GPU state).
async     training stops only for the device-to-host copy of each rank's state into pinned host
          memory (PyTorch DCP `async_save`, NVIDIA Resiliency Extension's async writer); a
          background writer per rank then serializes and writes it to `system.storage` while
          training goes on.  A new checkpoint waits until the rank's previous write has
          released its buffer.
tiered    the same copy into host memory, then the stage: `memory` (the host copy is the
          stage, as Gemini's in-memory checkpoints) or a per-host storage config (`kind: local`
          or `raid`: NVMe drives in every host, as NVRx local checkpointing or DataStates-LLM),
          then a drain from the stage to `system.storage` in the background.  The checkpoint
          is durable when its drain ends.

`system.storage` is always the durable target (the cluster or NFS every host mounts), so the
three designs compare on one system; the stage is a workload field because it is part of the
design, and it reuses the storage registry (any per-host kind, built once per host with its
own name prefix).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from iowatt.models.units import BytesPerSecond, Seconds
from iowatt.simulator.storage import registry
from pydantic import BaseModel, ConfigDict, Field, field_validator

STAGE_KINDS = ("local", "raid")  # kinds that live inside one host (no server or fabric of their own)

StageStorage = Annotated[registry.config_union(STAGE_KINDS), Field(description="drives in every host")]  # type: ignore[valid-type]


class SaveDesign(BaseModel):
    """`workload.save`: the save design (blocking, async, tiered), its stage and what a restore reads."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["blocking", "async", "tiered"] = Field(
        default="blocking", description="blocking: training waits for the save; async: only for the copy to host memory; "
        "tiered: copy to host memory, stage, drain to system.storage in the background"
    )
    stage: Literal["memory"] | StageStorage = Field(  # type: ignore[valid-type]
        default="memory",
        description="tiered: where the checkpoint is staged before the drain: 'memory' (the host copy) or drives in every "
        "host ({kind: local, device: ..., count: N} or kind: raid)",
    )
    drain_weight: float = Field(
        default=1.0, gt=0.0, le=1.0,
        description="tiered: max-min weight of the drain against other streams (1: an ordinary copy; lower: an ionice'd drain)",
    )
    restore_from: Literal["durable", "local"] = Field(
        default="durable", description="with workload.restore: read system.storage, or the stage copies (tiered)"
    )
    rank_jitter: Seconds = Field(
        default=0.0, ge=0.0,
        description="each rank starts its save this much later at most (uniform, drawn per checkpoint from the seed): "
        "file creation, metadata, stragglers; the slowest rank decides",
    )
    loader_rate: BytesPerSecond = Field(
        default=0.0, ge=0.0,
        description="the training's data loader reads this from system.storage during compute (all hosts together); "
        "a step cannot end before its data are read, so background writes that slow the loader slow training",
    )

    @field_validator("stage", mode="before")
    @classmethod
    def _stage_kind(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return registry.check_kind(value, STAGE_KINDS)
        if value != "memory" and not isinstance(value, BaseModel):
            raise ValueError(f"expected 'memory' or drives in every host such as {{kind: local, device: NAME, count: N}}, found {value!r}")
        return value
