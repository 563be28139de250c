"""The `--uncertainty` options every command shares (docs/uncertainty.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from iowatt.scenarios.uncertainty import Settings

UncertaintyOption = Annotated[
    bool,
    typer.Option("--uncertainty", help="Predict an interval, not a point: sample what is not known (ranges given as LOW..HIGH, "
                 "assumed defaults, catalog values' ranges, model constants) and name the unknowns that move the result most."),
]
SamplesOption = Annotated[
    int, typer.Option("--samples", help="With --uncertainty: base points of the sampling design (runs: about samples x (inputs ranked + 2)).")
]
LevelOption = Annotated[float, typer.Option("--level", help="With --uncertainty: the central interval reported, e.g. 0.9 for 5 %..95 %.")]
MethodOption = Annotated[
    str, typer.Option("--method", help="With --uncertainty: sobol (screen, then a sampled design: interactions included) or oat "
                      "(screening runs only, summed as an additive surrogate: fast, blind to interactions); docs/uncertainty.md.")
]


def settings(samples: int, level: float, method: str = "sobol") -> Settings:
    """The sampler's settings, checked (a bad value exits 2 naming the option)."""
    from iowatt.scenarios.uncertainty import Settings

    return Settings(samples=samples, level=level, method=method).check()  # type: ignore[arg-type]  # checked here
