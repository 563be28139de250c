"""`iowatt advise SCENARIO`: the fio jobs that would shrink the scenario's widest interval most (scenarios.advise)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from iowatt.errors import UserError, user_errors
from iowatt.uncertainty_options import LevelOption, SamplesOption

if TYPE_CHECKING:
    from iowatt.models.uncertainty import Range
    from iowatt.scenarios.advise import Advice

SetOption = Annotated[list[str] | None, typer.Option("--set", "-s", metavar="PATH=VALUE", help="Override a field: PATH=VALUE (repeatable).")]


@user_errors
def advise(
    scenario: Annotated[str, typer.Argument(metavar="SCENARIO", help="Scenario file or library name.")],
    set_: SetOption = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write the advised jobs as a fio job file here "
                                                "(`iowatt collect fio --plan FILE` runs them).")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help="table or json (stdout).")] = "table",
    metric: Annotated[str | None, typer.Option("--metric", help="The metric to narrow (default: the widest interval among "
                                               "those a fio job reports: bandwidth, IOPS, latency).")] = None,
    max_jobs: Annotated[int, typer.Option("--max-jobs", help="At most this many fio jobs.")] = 4,
    noise: Annotated[float | None, typer.Option("--noise", help="A fio job's run-to-run relative spread on the machine that will "
                                                "run them (0.03 quiet .. 0.3 shared); default: as the bundle behind the "
                                                "scenario's calibrated profile measured it, else 0.10.")] = None,
    repeat: Annotated[int | None, typer.Option("--repeat", help="Runs of each job (`collect fio --repeat`): the noise of a job's "
                                               "mean is noise / sqrt(repeat); default: the profile's bundle's, else 3.")] = None,
    runtime: Annotated[float, typer.Option("--runtime", help="Seconds each job runs, in the job file.")] = 2.0,
    size: Annotated[str, typer.Option("--size", help="Test file size in the job file (fio units: 256M, 1G).")] = "256M",
    samples: SamplesOption = 32,
    level: LevelOption = 0.9,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", help="Worker processes (default: all cores; 0: this process).")] = None,
) -> None:
    """Name the unknowns behind the scenario's widest interval and the fio jobs to measure them, in the order to run them."""
    from iowatt.calibration.plan import Plan, PlanError, fio_job_file
    from iowatt.output import serialize, write_text
    from iowatt.scenarios.advise import advise as make_advice
    from iowatt.scenarios.executors import open_executor
    from iowatt.scenarios.loader import load
    from iowatt.uncertainty_options import settings

    if fmt not in ("table", "json"):
        raise UserError(f"--format: expected table or json, found {fmt!r}")
    if max_jobs < 1:
        raise UserError(f"--max-jobs: expected at least 1, found {max_jobs}")
    if noise is not None and not 0 < noise < 1:
        raise UserError(f"--noise: expected a relative spread between 0 and 1 (e.g. 0.1), found {noise}")
    if repeat is not None and repeat < 1:
        raise UserError(f"--repeat: expected at least 1, found {repeat}")
    chosen = settings(samples, level)
    loaded = load(scenario, set_ or [])
    with open_executor(jobs) as executor:
        advice = make_advice(loaded, chosen, executor, metric=metric, max_jobs=max_jobs, noise=noise, repeat=repeat, origin=scenario)
    if output is not None:
        if not advice.steps:
            raise UserError(f"--output {output}: no fio job narrows {advice.metric}; nothing to write")
        try:
            plan = Plan.model_validate({"name": output.stem, "runtime_s": runtime, "ramp_s": min(0.5, runtime / 4), "size": size,
                                        "jobs": [s.job for s in advice.steps]})
        except ValueError as error:
            raise UserError(f"--runtime/--size: {PlanError(str(error))}") from None
        header = "\n".join([f"iowatt advise {scenario}: narrows {advice.metric}; run with", f"  iowatt collect fio --target DIR "
                            f"--plan {output} --repeat {advice.repeat} --out BUNDLE", "then `iowatt calibrate` on the bundle."]
                           + [f"{n + 1}. {s.job.id}: measures {s.unknown}" for n, s in enumerate(advice.steps)])
        write_text(fio_job_file(plan, header), output)
    if fmt == "json":
        write_text(serialize.to_json(advice.as_dict()), None)
        return
    write_text(_table(advice), None)
    if output is not None:
        print(f"wrote {output}: {len(advice.steps)} fio job(s)", file=sys.stderr)


def _span(r: Range) -> str:
    return f"{r.low:.4g}..{r.high:.4g} ({r.shape})"


def _table(advice: Advice) -> str:
    from iowatt.output.tables import Table, render

    i = advice.interval
    head = (f"{advice.scenario}: {advice.metric} {i.median:.4g} [{i.low:.4g}, {i.high:.4g}] "
            f"(+/- {i.relative_half_width():.1%}); fio noise {advice.noise:.1%} per run, {advice.repeat} runs a job, "
            f"law misfit {advice.misfit:.1%} ({advice.noise_source})")
    unknowns = Table(["unknown", "range", "share of the interval"], [[u.path, _span(u.range), f"{u.share:.0%}"] for u in advice.unknowns],
                     title="what the interval rests on", right=frozenset({"share of the interval"}))
    steps = Table(["#", "fio job", "unknown it measures", "its range", "share", "expected interval after"],
                  [[str(n + 1), s.job.id, s.unknown, _span(s.range), f"{s.share:.0%}",
                    f"{s.interval_after.median:.4g} [{s.interval_after.low:.4g}, {s.interval_after.high:.4g}] "
                    f"(+/- {s.interval_after.relative_half_width():.1%})"] for n, s in enumerate(advice.steps)],
                  title="fio jobs to run, in order", right=frozenset({"#", "share"}))
    blocks: list[Table | str] = [head, unknowns, steps if advice.steps else "no fio job on this system moves the unknowns behind it"]
    if advice.unmeasurable:
        blocks.append("not measurable with a fio job's bandwidth here: " + ", ".join(advice.unmeasurable))
    return render(blocks, width=180)


def register(app: typer.Typer) -> None:
    app.command("advise")(advise)
