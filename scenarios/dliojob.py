"""Read a DLIO workload YAML (argonne-lcf/dlio_benchmark's format, as MLPerf Storage ships its workloads) into a
`workload:` mapping: `dlio` for `workflow.train`, `checkpoint` (with the MLPerf procedure when it fsyncs) for
`workflow.checkpoint`.

Every key of the file is one of three things: mapped onto a workload field (MAPPED, the converters below);
accepted with no effect on what the storage sees, with the reason (NO_EFFECT: paths, seeds, shuffling, the
array handed to the emulated accelerator); or not modelled.  A key that is not modelled (a DLIO option iowatt
does not know, or a value iowatt cannot follow such as data generation or compression) is an error naming it,
or with `lenient` a warning; it is never dropped without a word.

What the file cannot say comes from the scenario or `--set`: the accelerator count (DLIO's MPI process count,
`--set workload.accelerators=N`) and the emulated accelerator's name (`--set workload.accelerator=b200`: only a
label when the file gives batch_size and computation_time).  Checkpointing: DLIO derives data parallelism from
the process count; for the models of MLPerf Storage's Table 2 (llama_8b, llama_70b, llama_405b, llama_1t) the
Table's is taken, otherwise `model.parallelism.data` (`--set workload.dp=N`).  Parameters are counted from the
transformer's dimensions as DLIO counts them (models.host_io.dlio_transformer_parameters).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from iowatt.models import host_io, strict_yaml
from iowatt.scenarios.loader import ScenarioError, load, read_yaml, resolve_path
from iowatt.scenarios.schema import ScenarioBase

# accepted, no effect on the model (with the reason)
NO_EFFECT = {
    "model.type": "a label", "model.model_size": "the unet3d model's checkpoint size, used only with training checkpoints",
    "dataset.data_folder": "a path", "dataset.num_subfolders_train": "directory layout", "dataset.num_files_eval": "no evaluation is run",
    "dataset.num_subfolders_eval": "directory layout", "dataset.record_length_resize": "the array handed to the accelerator, not read",
    "dataset.record_length_bytes_resize": "the array handed to the accelerator, not read", "dataset.parquet.use_s3dlio_gen": "data generation",
    "dataset.parquet.read_mode": "row-group reads are how the requests are modelled", "reader.file_shuffle": "order, not amount",
    "reader.sample_shuffle": "order, not amount", "reader.shuffle_size": "order, not amount", "reader.seed": "order",
    "reader.computation_threads": "TensorFlow parsing threads; parsing is CPU time either way", "reader.read_type": "on_demand is DLIO's reader",
    "reader.pin_memory": "host-to-device copies are not emulated", "train.seed": "order", "train.seed_change_epoch": "order",
    "checkpoint.checkpoint_folder": "a path", "storage.storage_root": "a path", "output.folder": "a path", "output.log_file": "a path",
    "workflow.profiling": "tracing", "workflow.generate_data": "DLIO generates the files before the timed run",
}
# checkpoint keys that belong to checkpoints taken during training (not modelled: a run trains or checkpoints)
TRAINING_CHECKPOINT_KEYS = {"checkpoint_after_epoch", "epochs_between_checkpoints", "steps_between_checkpoints", "checkpoint_after_step"}
DTYPE_BYTES = {"int8": 1, "uint8": 1, "bool": 1, "float16": 2, "bfloat16": 2, "int16": 2, "float32": 4, "int32": 4, "float64": 8, "int64": 8}
PARAM_BYTES = {"fp16": 2.0, "bf16": 2.0, "fp32": 4.0, "fp8": 1.0, "int8": 1.0}
# optimizer state per parameter (Adam: fp32 master copy + two moments = 3 x 4 B), by optimizer_datatype
OPTIMIZER_BYTES = {"fp32": 12.0, "fp16": 6.0, "bf16": 6.0}
TABLE2 = {"llama_8b": "llama3_8b", "llama_70b": "llama3_70b", "llama_405b": "llama3_405b", "llama_1t": "llama3_1t",
          "llama3_8b": "llama3_8b", "llama3_70b": "llama3_70b", "llama3_405b": "llama3_405b", "llama3_1t": "llama3_1t"}
TRAINING_MODELS = {"unet3d", "resnet50", "cosmoflow", "retinanet", "flux", "dlrm"}


@dataclass
class _Reader:
    """The file flattened to dotted keys, with what was used and what was refused."""

    where: str
    flat: dict[str, Any]
    used: set[str] = field(default_factory=set)
    refused: list[str] = field(default_factory=list)

    def get(self, key: str, default: Any = None) -> Any:
        if key in self.flat:
            self.used.add(key)
            return self.flat[key]
        return default

    def refuse(self, key: str, why: str) -> None:
        self.used.add(key)
        self.refused.append(f"{key}: {why}")


def _flatten(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{path}."))
        else:
            out[path] = value
    return out


def _number(r: _Reader, key: str, kind: Callable[[Any], Any] = float) -> Any:
    value = r.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{r.where}: {key}: expected a number, found {value!r}")
    return kind(value)


def _parquet(r: _Reader, out: dict[str, Any]) -> None:
    """Column selection: the share of each row the reader fetches, and the column chunk it requests."""
    columns = r.get("dataset.parquet.columns")
    if columns is None:
        return
    if not isinstance(columns, list) or not all(isinstance(c, dict) for c in columns):
        raise ScenarioError(f"{r.where}: dataset.parquet.columns: expected a list of {{name, dtype, size?, read?}}, found {columns!r}")
    total = selected = 0.0
    chosen = 0
    for i, column in enumerate(columns):
        unknown = set(column) - {"name", "dtype", "size", "read"}
        if unknown:
            raise ScenarioError(f"{r.where}: dataset.parquet.columns[{i}]: unknown keys {sorted(unknown)} (expected name, dtype, size, read)")
        dtype = column.get("dtype")
        if dtype not in DTYPE_BYTES:
            raise ScenarioError(f"{r.where}: dataset.parquet.columns[{i}].dtype: expected one of {', '.join(DTYPE_BYTES)}, found {dtype!r}")
        size = DTYPE_BYTES[dtype] * int(column.get("size", 1))
        total += size
        if column.get("read", True):
            selected += size
            chosen += 1
    if total <= 0 or chosen == 0:
        raise ScenarioError(f"{r.where}: dataset.parquet.columns: expected at least one column read, found none")
    out.setdefault("record_length", total)
    if selected < total:
        out["bytes_read_fraction"] = selected / total
        rows = _number(r, "dataset.parquet.row_group_size", int) or 1
        out["read_block_size"] = max(512.0, rows * selected / chosen)  # the mean selected column chunk of a row group
        out["read_pattern"] = "rand"


def _dataset(r: _Reader, out: dict[str, Any]) -> None:
    for key, name in (("num_files_train", "num_files"), ("num_samples_per_file", "samples_per_file")):
        value = _number(r, f"dataset.{key}", int)
        if value is not None:
            out[name] = value
    for keys, name in ((("record_length_bytes", "record_length"), "record_length"),
                       (("record_length_bytes_stdev", "record_length_stdev"), "record_length_stdev")):
        for key in keys:
            value = _number(r, f"dataset.{key}")
            if value is not None:
                out[name] = value
    fmt = r.get("dataset.format")
    if fmt is not None:
        out["format"] = fmt
        if fmt in ("jpeg", "png"):
            out.setdefault("read_pattern", "rand")  # one small file per sample, in shuffled order
    compression = r.get("dataset.compression")
    if compression not in (None, "none"):
        r.refuse("dataset.compression", f"compressed datasets are not modelled (found {compression!r}, expected none)")
    _parquet(r, out)
    r.get("dataset.parquet.row_group_size")


def _training(r: _Reader) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "dlio", "accelerator": "other"}
    name = str(r.get("model.name", "custom"))
    out["model"] = name if name in TRAINING_MODELS else "custom"
    # DLIO's framework (pytorch, tensorflow, jax...) and its data loader are two keys: each must be one iowatt models
    # (a `framework: jax` beside `data_loader: pytorch` must not run as pytorch without a word)
    frameworks = {key: r.get(key) for key in ("framework", "reader.data_loader") if r.get(key) is not None}
    unknown = {key: value for key, value in frameworks.items() if value not in ("pytorch", "tensorflow")}
    for key, value in unknown.items():
        r.refuse(key, f"expected pytorch or tensorflow, found {value!r}")
    if len(set(map(str, frameworks.values()))) > 1:
        r.refuse("framework", f"expected the same framework as reader.data_loader, found {frameworks['framework']!r} and "
                 f"{frameworks['reader.data_loader']!r}")
    elif frameworks and not unknown:
        out["framework"] = next(iter(frameworks.values()))
    _dataset(r, out)
    for key, name, kind in (("reader.batch_size", "batch_size", int), ("reader.read_threads", "read_threads", int),
                            ("reader.prefetch_size", "prefetch_size", int), ("reader.transfer_size", "transfer_size", float),
                            ("train.epochs", "epochs", int), ("train.computation_time", "computation_time", float),
                            ("train.total_training_steps", "total_training_steps", int), ("metric.au", "au_target", float)):
        value = _number(r, key, kind)
        if value is not None:
            out[name] = value
    odirect = r.get("reader.odirect")
    if odirect is not None and not isinstance(odirect, bool):
        r.refuse("reader.odirect", f"expected true or false, found {odirect!r}")
    elif odirect:
        out["odirect"] = True  # O_DIRECT reads: whole 4 KiB blocks, no page cache (DlioParams.odirect)
    for key in [k for k in r.flat if k.startswith("checkpoint.")]:
        r.used.add(key)  # workflow.checkpoint is False: DLIO ignores the section, so does the model
    return out


def _checkpoint(r: _Reader) -> dict[str, Any]:
    name = str(r.get("model.name", ""))
    out: dict[str, Any] = {"kind": "checkpoint"}
    framework = r.get("framework", "pytorch")
    if framework != "pytorch":
        r.refuse("framework", f"checkpoints are modelled as torch.save (pytorch), found {framework!r}")
    preset = TABLE2.get(name)
    if preset is not None:
        out["model"] = preset
    dims = [_number(r, f"model.transformer.{k}", int) for k in
            ("hidden_size", "ffn_hidden_size", "vocab_size", "num_attention_heads", "num_kv_heads")]
    layers = _number(r, "model.num_layers", int)
    if layers is not None and all(d is not None for d in dims):
        hidden, ffn, vocab, heads, kv = dims
        out["parameters"] = float(host_io.dlio_transformer_parameters(hidden, layers, ffn, vocab, heads, kv))
    elif preset is None:
        raise ScenarioError(f"{r.where}: model: expected a Table 2 model name (llama_8b ...) or model.num_layers and model.transformer "
                            f"(hidden_size, ffn_hidden_size, vocab_size, num_attention_heads, num_kv_heads), found model.name {name!r}")
    for key, table, target in (("model.model_datatype", PARAM_BYTES, "weight_bytes_per_param"),
                               ("model.optimizer_datatype", OPTIMIZER_BYTES, "optimizer_bytes_per_param")):
        value = r.get(key)
        if value is not None:
            if value not in table:
                raise ScenarioError(f"{r.where}: {key}: expected one of {', '.join(table)}, found {value!r}")
            out[target] = table[value]
    for key, target in (("tensor", "tp"), ("pipeline", "pp"), ("zero_stage", "zero_stage"), ("data", "dp")):
        value = _number(r, f"model.parallelism.{key}", int)
        if value is not None and not (target == "dp" and preset is not None):
            out[target] = value
    _checkpoint_run(r, out)
    return out


def _checkpoint_run(r: _Reader, out: dict[str, Any]) -> None:
    writes = _number(r, "checkpoint.num_checkpoints_write", int)
    reads = _number(r, "checkpoint.num_checkpoints_read", int)
    interval = _number(r, "checkpoint.time_between_checkpoints")
    if interval is not None:
        out["interval"] = interval
    for key in TRAINING_CHECKPOINT_KEYS:
        if f"checkpoint.{key}" in r.flat:
            r.refuse(f"checkpoint.{key}", "checkpoints during training are not modelled (workflow.train is False)")
    if r.get("checkpoint.fsync", False):
        # DLIO's fsync'd checkpointing is MLPerf Storage v2.0/v3.0's: one invocation is one run of the procedure
        out["mlperf"] = {"writes": 10 if writes is None else writes, "reads": 0 if reads is None else reads, "runs": 1}
    else:
        out["count"] = max(1, writes or 1)
        out["restore"] = bool(reads)


def parse_workload(data: dict[str, Any], where: str, lenient: bool = False) -> tuple[dict[str, Any], list[str]]:
    """The DLIO workload as a `workload` mapping, and the warnings (refused keys, when lenient)."""
    if isinstance(data.get("model"), str):
        data = {**data, "model": {"name": data["model"]}}  # DLIO also takes `model: NAME`
    r = _Reader(where, _flatten(data))
    train, checkpoint = bool(r.get("workflow.train", False)), bool(r.get("workflow.checkpoint", False))
    r.get("workflow.generate_data")  # DLIO writes the files before the timed run: the metrics do not include it
    for key in ("workflow.evaluation", "workflow.debug"):
        if r.get(key, False):
            r.refuse(key, "not modelled (expected False)")
    storage = r.get("storage.storage_type", "local_fs")
    if storage != "local_fs":
        r.refuse("storage.storage_type", f"the storage comes from the scenario's system; expected local_fs, found {storage!r}")
    if not train and not checkpoint:
        raise ScenarioError(f"{where}: workflow: expected train or checkpoint True (data generation alone is not modelled), found neither")
    if train and checkpoint:
        r.refuse("workflow.checkpoint", "checkpoints during training are not modelled; the training is (run the checkpoint workload apart)")
    workload = _training(r) if train else _checkpoint(r)
    for key in r.flat:
        if key not in r.used and key not in NO_EFFECT:
            r.refused.append(f"{key}: not a DLIO option iowatt models")
    if r.refused and not lenient:
        raise ScenarioError(f"{where}: keys iowatt does not model (use --dlio-lenient to run without them): {'; '.join(r.refused)}")
    return workload, [f"{where}: ignored {text}" for text in r.refused]


def read_workload_file(path: Path, lenient: bool = False) -> tuple[dict[str, Any], list[str]]:
    where = str(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ScenarioError(f"--dlio {where}: no such workload file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(f"--dlio {where}: cannot read the workload file ({error.__class__.__name__})") from None
    try:
        data = strict_yaml.load(text)  # a key given twice (two `reader:` blocks) is refused, as in scenario files
    except yaml.YAMLError as error:
        raise ScenarioError(f"--dlio {where}: {strict_yaml.describe(error)}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"--dlio {where}: expected a DLIO workload mapping (model, framework, workflow, dataset, ...), found {type(data).__name__}")
    data = data.get("workload", data) if isinstance(data.get("workload"), dict) else data  # a hydra config.yaml nests it
    return parse_workload(data, where, lenient)


def load_with_dlio(scenario: str | None, path: Path, overrides: list[str], lenient: bool = False) -> tuple[ScenarioBase, list[str]]:
    """The scenario (or a bare system from --set) with its workload replaced by the DLIO workload file."""
    workload, warnings = read_workload_file(path, lenient)
    if scenario is not None:
        data = read_yaml(resolve_path(scenario))
    else:
        if not any(o.split("=", 1)[0].strip() in ("storage.device", "system.storage.device") for o in overrides):
            raise ScenarioError(f"--dlio {path}: the workload needs a system: give a scenario file, or --set storage.device=NAME "
                                "(see `iowatt catalog list`)")
        data = {"name": f"dlio_{path.stem}", "system": {"storage": {}}}
    data["workload"] = workload
    return load(data, overrides), warnings
