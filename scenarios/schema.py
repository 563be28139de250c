"""The scenario file: `system` + `workload` + `seed`, validated with extra="forbid"."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Union

from iowatt.models.provenance import Provenance, numbers_in
from iowatt.simulator import workloads
from iowatt.simulator.system import SystemConfig
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, create_model, model_validator

if TYPE_CHECKING:
    from iowatt.scenarios.ranges import UserRange


class ScenarioBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", description="short name shown in tables")
    description: str = Field(default="", description="what the scenario models and where its numbers come from")
    seed: int = Field(default=0, ge=0, description="random seed; same scenario + seed = identical result")
    system: SystemConfig
    provenance: dict[str, Provenance] = Field(
        default_factory=dict,
        description="where inputs of this file come from, by field path (workload.cpu_seconds_per_sample: {p: calibrated, "
        "src, note, fitted_on: [validation row ids]}); every calibrated input names the rows it was fitted on",
    )

    # inputs the user wrote as ranges (scenarios.ranges): the scenario holds each at its median
    _user_ranges: tuple[UserRange, ...] = PrivateAttr(default=())

    @property
    def user_ranges(self) -> tuple[UserRange, ...]:
        return self._user_ranges

    def set_user_ranges(self, ranges: tuple[UserRange, ...]) -> None:
        self._user_ranges = ranges

    @model_validator(mode="after")
    def _provenance_paths(self) -> ScenarioBase:
        if not self.provenance:
            return self
        data = self.model_dump()
        for path in self.provenance:
            node: object = data
            for part in path.split("."):
                if not isinstance(node, dict) or part not in node:
                    raise ValueError(f"provenance: {path!r} is not a field of this scenario (e.g. workload.cpu_seconds_per_sample)")
                node = node[part]
            # as in the catalog, an assumed number carries its plausible range (a value outside it is not refused here:
            # --set may override the file's value, and the sampler then takes it as known)
            prov = self.provenance[path]
            if prov.p == "assumed" and not prov.has_range and numbers_in(node):
                raise ValueError(f"provenance: {path}: an assumed value needs its plausible range (low, high, shape, "
                                 "range_note with the evidence for each end), found none")
        return self


@cache
def scenario_model() -> type[ScenarioBase]:
    """The Scenario model, with a workload union over every registered kind."""
    params = tuple(w.params for w in workloads.all_workloads())
    union = params[0] if len(params) == 1 else Union[params]  # noqa: UP007 - built at run time
    workload_type = Annotated[union, Field(discriminator="kind", description="what runs: see `kind`")]
    return create_model("Scenario", __base__=ScenarioBase, workload=(workload_type, ...))


DIALECT = "https://json-schema.org/draft/2020-12/schema"
# pydantic writes a field's gt/ge/lt/le under these names when the field's type brings its own schema (the unit types)
_BOUNDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}
_NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
# a decimal number written as a string: YAML 1.1 reads `405.85e9` (no sign in the exponent) as a string, and the loader accepts it
NUMERIC_STRING = {"type": "string", "pattern": r"^\s*[-+]?([0-9][0-9_]*\.?[0-9_]*|\.[0-9_]+)([eE][-+]?[0-9]+)?\s*$"}
# a value the user does not know, as a range (scenarios.ranges): `8..128`, `0.6..0.9`, `400 GB..450 GB`, `8..128 log`; the
# loader checks each end against the field's own bounds
_RANGE_END = r"[-+]?([0-9][0-9_]*(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?(\s*[A-Za-z%][A-Za-z%/]*)?"
RANGE_STRING = {"type": "string", "pattern": rf"^\s*{_RANGE_END}\s*\.\.\s*{_RANGE_END}(\s+(uniform|log|log-uniform|normal))?\s*$"}


def _standard(node: Any, any_string: bool = False) -> Any:
    """The node with pydantic's extensions rewritten as JSON Schema 2020-12: bounds on the number branch, no `discriminator`,
    and numbers that may also be written as numeric strings (as the loader reads them), unless a sibling branch takes any string."""
    if isinstance(node, list):
        return [_standard(item, any_string) for item in node]
    if not isinstance(node, dict):
        return node
    bounds = {_BOUNDS[k]: node[k] for k in node if k in _BOUNDS}
    branches = node.get("anyOf")
    if bounds:
        numbers = [b for b in branches or [] if isinstance(b, dict) and b.get("type") in ("number", "integer")]
        if not numbers:
            raise ValueError(f"a bound {sorted(bounds)} on a schema without a number: {node}")
        for branch in numbers:
            branch.update(bounds)
    takes_strings = isinstance(branches, list) and any(b == {"type": "string"} for b in branches)
    out = {}
    for key, value in node.items():
        if key in _BOUNDS or key == "discriminator":  # `discriminator` is OpenAPI's; oneOf over `const` kinds says the same
            continue
        out[key] = _standard(value, takes_strings) if key == "anyOf" else _standard(value)
    if out.get("type") in ("number", "integer") and not any_string:
        number = {"type": out["type"], **{k: out.pop(k) for k in _NUMBER_KEYWORDS if k in out}}
        del out["type"]
        out["anyOf"] = [number, NUMERIC_STRING, RANGE_STRING] if number["type"] == "number" else [number, RANGE_STRING]
    return out


def json_schema() -> dict[str, Any]:
    """The scenario file's JSON Schema (draft 2020-12): what `iowatt schema` prints and editors can validate against."""
    schema = _standard(scenario_model().model_json_schema())
    return {"$schema": DIALECT, **schema, "title": "iowatt scenario"}
