"""Workloads: SimPy processes that start flows on the modelled hardware.

Each workload module defines a pydantic `Params` model whose `kind` literal
names it in scenario files, and a `run(ctx, params)` function that starts its
processes on `ctx.env` and returns a `WorkloadOutcome` once the environment
has run.  A module named after its kind (checkpoint.py for kind "checkpoint")
is found automatically; that is what makes a kind reachable from scenarios.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import simpy
from iowatt.simulator.flows import FlowEngine
from iowatt.simulator.system import SystemRuntime
from pydantic import BaseModel

if TYPE_CHECKING:
    import numpy as np


class WorkloadConfigError(ValueError):
    """A scenario whose parts do not fit together (found while running); shown to the user as is."""


class RunContext:
    """What a workload runs on.  The seeded generator is made on first use: numpy costs ~0.1 s of start-up, and most
    runs (a checkpoint without jitter) draw nothing; made late or early from the same seed, it draws the same numbers."""

    __slots__ = ("_rng", "engine", "env", "seed", "system")

    def __init__(self, env: simpy.Environment, engine: FlowEngine, system: SystemRuntime, rng: np.random.Generator | None = None,
                 *, seed: int = 0) -> None:
        self.env = env
        self.engine = engine
        self.system = system
        self.seed = seed
        self._rng = rng

    @property
    def rng(self) -> np.random.Generator:
        if self._rng is None:
            import numpy as np

            self._rng = np.random.default_rng(self.seed)
        return self._rng


@dataclass
class WorkloadOutcome:
    metrics: dict[str, float]                            # flat scalars, units in names (DLIO names where DLIO has one)
    detail: dict[str, Any] = field(default_factory=dict)  # lists and tables, under the workload's kind
    units: dict[str, str] = field(default_factory=dict)   # metric name -> unit, where the name does not say


@dataclass(frozen=True)
class Workload:
    kind: str
    params: type[BaseModel]
    run: Callable[[RunContext, Any], WorkloadOutcome]


def _discover() -> dict[str, str]:
    """kind -> module: every module in this package that defines WORKLOAD.

    Modules are found by name without importing them (a module's kind is its
    file name), so `iowatt --help` stays fast; they are imported on first use.
    """
    import pkgutil

    return {info.name: f"{__name__}.{info.name}" for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")}


_MODULES = _discover()


def kinds() -> list[str]:
    return sorted(_MODULES)


def get(kind: str) -> Workload:
    module = importlib.import_module(_MODULES[kind])
    workload: Workload = module.WORKLOAD
    if workload.kind != kind:
        raise RuntimeError(f"{module.__name__} defines workload kind {workload.kind!r}; the file must be named after it")
    return workload


def all_workloads() -> list[Workload]:
    return [get(k) for k in kinds()]
