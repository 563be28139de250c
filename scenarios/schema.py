"""The scenario file: `system` + `workload` + `seed`, validated with extra="forbid"."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Union

from iowatt.simulator import workloads
from iowatt.simulator.system import SystemConfig
from pydantic import BaseModel, ConfigDict, Field, create_model


class ScenarioBase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", description="short name shown in tables")
    description: str = Field(default="", description="what the scenario models and where its numbers come from")
    seed: int = Field(default=0, ge=0, description="random seed; same scenario + seed = identical result")
    system: SystemConfig


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
