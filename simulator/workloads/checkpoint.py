"""Checkpoint save: every rank writes its shard through the filesystem to the volume.

Each rank's shard is one flow that crosses, per byte written:
  - its GPU's device-to-host link, when the state is copied from the GPU
    (copy_from_gpu; the copy is pipelined with the write, as asynchronous
    checkpointers stage it in chunks);
  - host DRAM twice (written by the copy or the serializer, read by the
    block layer's DMA to the drive);
  - the volume's write path (link, drive service time, power budget).
All ranks start together; the checkpoint ends when the last rank's data is
durable (torch.save + fsync), as DLIO times `save_checkpoint`.
"""

from __future__ import annotations

from typing import Literal

import simpy
from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.units import Bytes, Seconds
from simulator.workloads import RunContext, Workload, WorkloadOutcome

# MLPerf Storage checkpointing table (fp16 model + fp32 optimizer), total bytes
# per checkpoint across all ranks: ../shared/reference/published_results.yaml
# dlio_workloads.llm_checkpoint.
MODEL_PRESETS_BYTES = {
    "llama3_8b": 105e9,
    "llama3_70b": 912e9,
    "llama3_405b": 5.29e12,
    "llama3_1t": 18e12,
}


class CheckpointParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["checkpoint"] = "checkpoint"
    model: Literal["llama3_8b", "llama3_70b", "llama3_405b", "llama3_1t"] | None = Field(
        default=None, description="MLPerf Storage model preset; sets the size unless `size` is given"
    )
    size: Bytes | None = Field(default=None, gt=0, description="bytes per checkpoint, all ranks together")
    ranks: int = Field(default=8, ge=1, le=100_000, description="writer processes, one per GPU when GPUs are present")
    count: int = Field(default=1, ge=1, le=100_000, description="checkpoints to save")
    interval: Seconds = Field(default=0.0, ge=0, description="training compute time before each checkpoint")
    block_size: Bytes = Field(default=2**20, ge=512, description="write request size")
    copy_from_gpu: bool = Field(default=False, description="stage the state from GPU memory (DLIO emulation does not)")
    fsync_latency: Seconds = Field(default=0.0, ge=0, description="time to make a rank's file durable after its last write")

    @model_validator(mode="after")
    def _sized(self) -> CheckpointParams:
        if self.size is None and self.model is None:
            raise ValueError("give the checkpoint `size` (e.g. '415 GB') or a `model` preset")
        return self

    @property
    def size_bytes(self) -> float:
        if self.size is not None:
            return self.size
        assert self.model is not None
        return MODEL_PRESETS_BYTES[self.model]


def run(ctx: RunContext, params: CheckpointParams) -> WorkloadOutcome:
    env, engine, system = ctx.env, ctx.engine, ctx.system
    if params.copy_from_gpu and not system.gpus:
        raise ValueError("workload.copy_from_gpu needs GPUs in system.gpus")
    shard = params.size_bytes / params.ranks
    durations: list[float] = []
    starts: list[float] = []
    volume_usage = system.volume.write_usage(params.block_size)

    def save_rank(index: int, rank_usage: list):
        yield engine.transfer(f"ckpt.rank{index}", shard, rank_usage)
        if params.fsync_latency > 0.0:
            yield env.timeout(params.fsync_latency)

    def training():
        for number in range(params.count):
            if params.interval > 0.0 and system.gpus:
                compute = [engine.transfer(f"step.{g.name}", params.interval, [(g.compute, 1.0)]) for g in system.gpus]
                yield simpy.AllOf(env, compute)
            elif params.interval > 0.0:
                yield env.timeout(params.interval)
            start = env.now
            ranks = []
            for r in range(params.ranks):
                usage = [*list(volume_usage), (system.host.memory, 2.0)]
                if params.copy_from_gpu:
                    usage.append((system.gpus[r % len(system.gpus)].link_d2h, 1.0))
                ranks.append(env.process(save_rank(r, usage)))
            yield simpy.AllOf(env, ranks)
            starts.append(start)
            durations.append(env.now - start)
            del number

    env.process(training())
    env.run()
    size = params.size_bytes
    total_time = sum(durations)
    mean = total_time / len(durations)
    metrics = {
        "checkpoint_size_GB": size / 1e9,
        "checkpoint_count": float(len(durations)),
        "save_checkpoint_duration_mean_seconds": mean,
        "save_checkpoint_duration_max_seconds": max(durations),
        "save_checkpoint_io_mean_GB_per_second": size * len(durations) / total_time / 1e9,
        "bytes_written_total_GB": size * len(durations) / 1e9,
    }
    detail = {"durations_seconds": durations, "start_seconds": starts, "shard_GB": shard / 1e9}
    return WorkloadOutcome(metrics, detail)


WORKLOAD = Workload("checkpoint", CheckpointParams, run)
