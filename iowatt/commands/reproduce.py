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
        study: Annotated[str, typer.Argument(help="A study name (see scenarios/studies/) or `all`.")] = "all",
        out: Annotated[Path | None, typer.Option("--out", help="Write figures (PNG, SVG), their CSVs and index.md here.")] = None,
    ) -> None:
        """Run a published study's scenarios; print its comparison tables and draw its figures."""
        from scenarios.reproduce import reproduce as run
        from scenarios.reproduce import study_files

        names = list(study_files()) if study == "all" else [study]
        text, written = run(names, out)
        sys.stdout.write(text + "\n")
        if out is not None:
            print(f"wrote {len(written)} files; open {out / 'index.md'}", file=sys.stderr)
