"""`iowatt reproduce`: the published studies, as tables and figures."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from iowatt.errors import user_errors


def register(app: typer.Typer) -> None:
    @app.command()
    @user_errors
    def reproduce(
        study: Annotated[str, typer.Argument(help="A study name (micron_6550ion_vs_p5336, micron_9550_gnn_bam, amax_5210ion_vs_hdd, "
                                                   "storagereview_ckpt_fill, mlperf_storage_v1; see scenarios/studies/), a study "
                                                   "YAML file, or `all`.")] = "all",
        out: Annotated[Path | None, typer.Option("--out", help="Write figures (PNG, SVG), their CSVs and index.md here.")] = None,
    ) -> None:
        """Run a published study's scenarios; print its comparison tables (published vs predicted) and draw its figures.

        Figures need matplotlib (pip install 'iowatt\\[plots]'); without it the tables, CSVs and index.md are still written.
        A scenario that is missing or fails is reported in the tables, never fatal.
        """
        from iowatt.scenarios.reproduce import plots_available, study_files
        from iowatt.scenarios.reproduce import reproduce as run

        names = list(study_files()) if study == "all" else [study]
        text, written = run(names, out)
        sys.stdout.write(text + "\n")
        if out is not None:
            kind = "figures, CSVs" if plots_available() else "CSVs (no figures: matplotlib missing)"
            print(f"wrote {len(written)} files ({kind}); open {out / 'index.md'}", file=sys.stderr)
        else:
            print("add --out DIR to write figures, their CSVs and index.md", file=sys.stderr)
