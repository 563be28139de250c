"""The scenario file: `system` + `workload` + `seed`, validated with extra="forbid"."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Union

from iowatt.models.provenance import Provenance
from iowatt.simulator import workloads
from iowatt.simulator.system import SystemConfig
from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator


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
        return self


@cache
def scenario_model() -> type[ScenarioBase]:
    """The Scenario model, with a workload union over every registered kind."""
    params = tuple(w.params for w in workloads.all_workloads())
    union = params[0] if len(params) == 1 else Union[params]  # noqa: UP007 - built at run time
    workload_type = Annotated[union, Field(discriminator="kind", description="what runs: see `kind`")]
    return create_model("Scenario", __base__=ScenarioBase, workload=(workload_type, ...))


def json_schema() -> dict[str, Any]:
    schema = scenario_model().model_json_schema()
    schema["title"] = "iowatt scenario"
    return schema
