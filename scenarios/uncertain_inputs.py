"""What one resolved scenario does not know: its uncertain inputs, each with its range and how a draw is applied.

Four kinds (DESIGN.md section 8, models.uncertainty):
  range     an input the user wrote as a range (scenarios.ranges)
  field     an `assumed_field` the scenario leaves unset (its default stands for what nobody stated)
  catalog   a value of a catalog device the scenario uses, with the range of its provenance record
            (models.uncertainty.range_of); a draw becomes the spec override `{base: NAME, FIELD: value}`
  constant  an assumed model constant the run read (models.uncertainty.recording_reads), overridden per draw

An input's `key` is its identity across scenarios: two scenarios of one validation ratio that share a key share the
draw (common random numbers).  Its `path` is what a user sets or measures (`system.storage.device.idle_W`,
`system.storage.server_threads`, `constant:models.fabric.nfs_tcp_latency_seconds`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from iowatt.models import catalog
from iowatt.models.provenance import Provenance
from iowatt.models.uncertainty import ConditionalRanges, Range, declared_constants, field_range, point_quantile, range_of
from iowatt.scenarios.ranges import Path, dotted, get_at, set_at
from iowatt.scenarios.schema import ScenarioBase
from iowatt.simulator.machine import CatalogOf
from pydantic import BaseModel

InputKind = Literal["range", "field", "catalog", "constant"]
CONSTANT_PREFIX = "constant:"

# Catalog values that are facts of the product or the conditions of its test, not performance a device may fall short
# of: the source's spread (models.uncertainty.SOURCE_SPREAD, for "up to" figures and run-to-run spread) does not apply
# to what a device is sold as (capacity, clock, warranty, price) or to the queue depth a datasheet measured at.  Whole
# numbers (counts: batch sizes, ports, blocks per SM) are exact unless their record gives a range of its own.
EXACT_FIELDS = frozenset({"capacity_TB", "warranty_years", "endurance_dwpd", "base_clock_GHz", "price_usd_per_TB",
                          "rand_read_iops_outstanding", "memory_GB"})


@dataclass(frozen=True)
class UncertainInput:
    key: str
    path: str
    range: Range
    kind: InputKind
    integer: bool = False
    nominal: float | None = None  # the value a plain run uses (a user range's median; else the stated value)
    source: str = ""              # a catalog input's entry (two devices of a ratio share a path, not a value)
    correlated: tuple[tuple[str, float], ...] = ()  # (another input's key, the correlation of their fit's log values)

    def nominal_quantile(self) -> float:
        """Where the plain run's value sits in the range (its CDF), 0.5 where it has none."""
        return 0.5 if self.nominal is None else point_quantile(self.nominal, self.range)


@dataclass(frozen=True)
class Applier:
    """How a drawn value enters one scenario's data.  `at`: the field's path (range, field), or the catalog reference's
    path (catalog: `field` names the spec's field, `original` its value in the catalog, `factor` whether the draw
    multiplies every number in a list/mapping value).  Constants need no applier (see Subject.constants)."""

    key: str
    at: Path
    integer: bool = False
    field: tuple[str, ...] = ()
    base: str = ""
    original: Any = None
    factor: bool = False

    def apply(self, data: dict[str, Any], value: float) -> None:
        if not self.field:
            set_at(data, self.at, round(value) if self.integer else value)
            return
        ref = get_at(data, self.at)
        spec: dict[str, Any] = dict(ref) if isinstance(ref, dict) else {"base": self.base}
        top, inner = self.field[0], self.field[1:]
        current = copy.deepcopy(spec.get(top, self.original))
        drawn = round(value) if self.integer else value
        if not inner:
            spec[top] = _scale(current, value) if self.factor else drawn
        else:
            set_at(current, inner, _scale(get_at(current, inner), value) if self.factor else drawn)
            spec[top] = current
        set_at(data, self.at, spec)


def _scale(value: Any, factor: float) -> Any:
    """Every measured number in a list/mapping times the factor; whole numbers inside (a link's lanes and generation, a
    state's index) are counts and stay as they are."""
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value * factor
    if isinstance(value, list):
        return [_scale(v, factor) for v in value]
    if isinstance(value, dict):
        return {k: _scale(v, factor) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Subject:
    """One scenario a sample runs: its data (the resolved scenario, user ranges at their medians), the appliers of its
    inputs, and the constants it reads."""

    data: dict[str, Any]
    origin: str
    appliers: tuple[Applier, ...]
    constants: tuple[str, ...]


def subject_of(scenario: ScenarioBase, origin: str, constants_read: set[str]) -> tuple[Subject, list[UncertainInput]]:
    """The scenario's uncertain inputs and how to apply a draw of each."""
    inputs: list[UncertainInput] = []
    appliers: list[Applier] = []
    for user in scenario.user_ranges:
        path = _parse_dotted(user.path)
        inputs.append(UncertainInput(f"field:{user.path}", user.path, user.range, "range", user.integer, user.range.median))
        appliers.append(Applier(f"field:{user.path}", path, user.integer))
    for path, spread, integer, value in _assumed_fields(scenario):
        name = dotted(path)
        inputs.append(UncertainInput(f"field:{name}", name, spread, "field", integer, value))
        appliers.append(Applier(f"field:{name}", path, integer))
    for path, spread, integer, value in _stated_inputs(scenario):
        name = dotted(path)
        inputs.append(UncertainInput(f"field:{name}", name, spread, "field", integer, value))
        appliers.append(Applier(f"field:{name}", path, integer))
    for ref_path, kind, ref in catalog_refs(scenario):
        for item, applier in _catalog_inputs(ref_path, kind, ref):
            inputs.append(item)
            appliers.append(applier)
    declared = declared_constants()
    names = tuple(sorted(n for n in constants_read if n in declared))
    for name in names:
        inputs.append(UncertainInput(f"{CONSTANT_PREFIX}{name}", f"{CONSTANT_PREFIX}{name}", declared[name].range, "constant",
                                     nominal=declared[name].value))
    data = scenario.model_dump(mode="json", exclude_unset=True)
    return Subject(data, origin, tuple(appliers), names), inputs


def correlate(items: list[UncertainInput], quantiles: Any) -> Any:
    """Quantiles drawn independently (an n x k numpy array, one column per input) made into draws of inputs whose fit
    correlated them: through normal scores, z' = z L^T with L the Cholesky factor of the inputs' correlation matrix
    (a fit's covariance of log values: exact for the log-normal ranges a fit writes).  Columns of inputs without
    correlations are returned as they were; a matrix the pruned pairs left indefinite has its negative eigenvalues
    clipped (the nearest valid correlation in that sense)."""
    import numpy as np

    index = {item.key: i for i, item in enumerate(items)}
    pairs = [(index[item.key], index[other], rho) for item in items for other, rho in item.correlated if other in index]
    if not pairs:
        return quantiles
    from scipy.special import ndtr, ndtri

    k = len(items)
    corr = np.eye(k)
    for i, j, rho in pairs:
        corr[i, j] = corr[j, i] = rho
    values, vectors = np.linalg.eigh(corr)
    if values.min() <= 1e-9:
        corr = vectors @ np.diag(np.clip(values, 1e-9, None)) @ vectors.T
        d = np.sqrt(np.diag(corr))
        corr = corr / np.outer(d, d)
    lower = np.linalg.cholesky(corr)
    z = ndtri(np.clip(np.asarray(quantiles, dtype=float), 1e-12, 1 - 1e-12))
    return ndtr(z @ lower.T)


def _parse_dotted(text: str) -> Path:
    parts: list[str | int] = []
    for segment in text.split("."):
        name, _, index = segment.partition("[")
        parts.append(name)
        if index:
            parts.append(int(index.rstrip("]")))
    return tuple(parts)


def _walk(model: BaseModel, path: Path = ()) -> Iterator[tuple[BaseModel, str, Any, Path]]:
    """Every field of every nested model: (the model, the field's name, its value, its path)."""
    for name, value in model:
        here = (*path, name)
        yield model, name, value, here
        if isinstance(value, BaseModel):
            yield from _walk(value, here)
        elif isinstance(value, list | tuple):
            for index, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from _walk(item, (*here, index))


def _assumed_fields(scenario: ScenarioBase) -> Iterator[tuple[Path, Range, bool, float | None]]:
    for model, name, value, path in _walk(scenario):
        info = type(model).model_fields.get(name)
        spread = None if info is None else field_range(info.json_schema_extra)
        if spread is None or name in model.model_fields_set or path[:1] == ("provenance",):
            continue
        if isinstance(model, ConditionalRanges) and name in model.fields_not_drawn():
            continue
        integer = isinstance(value, int) and not isinstance(value, bool)
        yield path, spread, integer, float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _stated_inputs(scenario: ScenarioBase) -> Iterator[tuple[Path, Range, bool, float]]:
    """Inputs the scenario states with a provenance record (its `provenance` section) that carries a range: a
    calibrated value with the fit's uncertainty (stated, but only as well as the fit knows it), or an assumed value
    with its plausible range (stated because a run needs a value, not because a source gave it: the gdsio threads
    of a study that names no gdsio options).  The same path in two scenarios (the fit's value in every file that uses
    it) is one key, so both get the same draw."""
    if not scenario.provenance:
        return
    data = scenario.model_dump(mode="json")
    for text, prov in sorted(scenario.provenance.items()):
        if prov.p not in ("calibrated", "assumed"):
            continue
        path = _parse_dotted(text)
        value = get_at(data, path)
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        spread = range_of(prov, float(value))
        if spread is None or spread.low == spread.high:
            continue  # a discrete choice (a layout, a stream count) or a fit without its standard error
        if not spread.low <= value <= spread.high:
            continue  # the record does not describe this value: a user's --set replaced the file's, and is known
        yield path, spread, isinstance(value, int), float(value)


def catalog_refs(scenario: ScenarioBase) -> Iterator[tuple[Path, str, Any]]:
    """(path of the reference, catalog kind, the reference) of every catalog device the scenario names."""
    for model, name, value, path in _walk(scenario):
        # a field that names a catalog device says which catalog (simulator.machine.CatalogOf)
        info = type(model).model_fields.get(name)
        marker = info.json_schema_extra if info is not None else None
        if isinstance(marker, CatalogOf) and value is not None:
            yield path, catalog.drive_family(value)[0] if marker.kind == "drive" else marker.kind, value


def _catalog_inputs(ref_path: Path, kind: str, ref: Any) -> Iterator[tuple[UncertainInput, Applier]]:
    if isinstance(ref, str):
        base, given = ref, set()
    elif isinstance(ref, dict) and isinstance(ref.get("base"), str):
        base, given = ref["base"], set(ref) - {"base"}  # values the scenario states are known
    else:
        return  # an inline spec has no provenance to draw from
    entry = catalog.lookup(kind, base)
    spec = entry.spec.model_dump()
    for field, prov in sorted(entry.provenance.items()):
        parts = tuple(field.split("."))
        if parts[0] in given or parts[-1] in EXACT_FIELDS:
            continue
        found = _range_for(prov, get_at(spec, parts))
        if found is None:
            continue
        spread, factor, integer = found
        key = f"catalog:{kind}:{entry.name}:{field}"
        path = f"{dotted(ref_path)}.{field}"
        value = get_at(spec, parts)
        nominal = 1.0 if factor else float(value)  # a factor on a list/mapping leaves it as it is at 1
        together = tuple((f"catalog:{kind}:{entry.name}:{other}", rho) for other, rho in prov.correlation
                         if other not in given)
        yield (UncertainInput(key, path, spread, "catalog", integer, nominal, entry.name, together),
               Applier(key, ref_path, integer, parts, base, spec[parts[0]], factor))


def _range_for(prov: Provenance, value: Any) -> tuple[Range, bool, bool] | None:
    """(range, drawn as a factor on a list/mapping, whole numbers) or None when the value carries no usable range."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int) and not prov.has_range:
        return None  # a count is exact unless its record says otherwise
    if isinstance(value, int | float):
        spread = range_of(prov, float(value))
        factor = False
    elif isinstance(value, list | dict) and prov.low is not None and prov.high is not None:
        spread = Range(prov.low, prov.high, prov.shape, prov.range_note)
        factor = True
    else:
        return None
    if spread is None or spread.low == spread.high:
        return None
    return spread, factor, isinstance(value, int) and not factor
