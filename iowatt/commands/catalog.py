"""`iowatt catalog list|show|sources`: the devices the simulator knows, each value with its provenance and sources."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from iowatt.app import App, OutputOption
from iowatt.errors import user_errors

if TYPE_CHECKING:
    from iowatt.models.catalog.bibliography import Source
    from iowatt.models.provenance import Provenance
    from iowatt.models.uncertainty import Range
    from iowatt.output.tables import Table

FormatOption = Annotated[str | None, typer.Option("--format", "-f", help="table, json or csv (default: table on a terminal, json otherwise).")]
catalog_app = App(help="Devices the simulator knows, with the provenance of every number.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(catalog_app, name="catalog")


@catalog_app.command("list")
@user_errors
def catalog_list(
    kind: Annotated[str | None, typer.Option("--kind", "-k", help="Only this family: ssd, hdd, gpu, cpu, ...")] = None,
    fmt: FormatOption = None,
) -> None:
    """List catalog entries with counts of datasheet / measured / calibrated / assumed values."""
    from iowatt.models import catalog
    from iowatt.output import choose_format, serialize, tables, write_text

    entries = catalog.entries(kind)
    if kind is not None and not entries:
        known = sorted({e.kind for e in catalog.entries()})
        raise catalog.CatalogError(f"--kind: expected one of {', '.join(known)}, found {kind!r}")
    rows = [{"kind": e.kind, "name": e.name, "model": getattr(e.spec, "model", ""), **e.provenance_counts()} for e in entries]
    chosen = choose_format(fmt, None, ("table", "json", "csv"))
    if chosen == "json":
        write_text(serialize.to_json(rows), None)
    elif chosen == "csv":
        write_text(serialize.to_csv(rows), None)
    else:
        columns = ("kind", "name", "model", "datasheet", "measured", "calibrated", "assumed")
        table = tables.Table(columns, [[str(row[c]) for c in columns] for row in rows], title="iowatt catalog (value counts by provenance)",
                             right=frozenset(columns[3:]))
        write_text(tables.render([table], width=120), None)


@catalog_app.command("show")
@user_errors
def catalog_show(
    name: Annotated[str, typer.Argument(help="Catalog name or alias, e.g. micron-6550-ion.")],
    fmt: FormatOption = None,
) -> None:
    """Show one entry: every value with where it comes from, then the full reference of every source it cites."""
    from iowatt.models import catalog
    from iowatt.models.catalog.bibliography import cited, sources
    from iowatt.output import choose_format, serialize, tables, write_text

    entry = catalog.find(name)
    values = entry.spec.model_dump(mode="json")
    ranges = {field: _value_range(values.get(field), prov) for field, prov in entry.provenance.items()}
    keys = list(dict.fromkeys(k for prov in entry.provenance.values() for k in cited(f"{prov.src} {prov.note} {prov.range_note}")))
    known = sources()
    chosen = choose_format(fmt, None, ("table", "json"))
    if chosen == "json":
        document = {
            "kind": entry.kind, "name": entry.name, "aliases": list(entry.aliases), "values": values,
            "provenance": {k: v.model_dump() for k, v in entry.provenance.items()},
            "ranges": {k: {"low": r.low, "high": r.high, "shape": r.shape, "text": text} for k, (r, text) in ranges.items() if r},
            "sources": {k: known[k].__dict__ if k in known else None for k in keys},
        }
        write_text(serialize.to_json(document), None)
        return
    rows = []
    for field, value in values.items():
        prov = entry.provenance.get(field)
        rows.append([field, json.dumps(value) if not isinstance(value, str) else value, ranges.get(field, (None, ""))[1], prov.p if prov else "",
                     "; ".join(x for x in (prov.src, prov.note, f"fitted on {', '.join(prov.fitted_on)}" if prov.fitted_on else "") if x)
                     if prov else ""])
    table = tables.Table(("field", "value", "range", "provenance", "source / reasoning"), rows,
                         title=f"{entry.kind} {entry.name} ({', '.join(entry.aliases) or 'no aliases'})")
    cites = [known[k].cite() if k in known else f"{k}: not in the bibliography (models/catalog/sources.yml)" for k in keys]
    write_text(tables.render([table, "sources (docs/sources.md):", *cites], width=140), None)


def _value_range(value: object, prov: Provenance) -> tuple[Range | None, str]:
    """A value's range and its text, `[low, high] shape` (x[low, high] for a list or mapping, whose range is factors;
    `exact` for an empty spread); (None, "") where it has none."""
    from iowatt.models.provenance import numbers_in
    from iowatt.models.uncertainty import range_of

    scalar = isinstance(value, int | float) and not isinstance(value, bool)
    if not scalar and not (numbers_in(value) and prov.low is not None):
        return None, ""
    found = range_of(prov, float(value) if scalar else 1.0)
    if found is None:
        return None, ""
    if found.low == found.high:
        return found, "exact" if scalar or found.low == 1 else f"x{found.low:g}"
    ends = f"{'x' if not scalar else ''}[{_number(found.low)}, {_number(found.high)}]"
    shape = "" if found.shape == "uniform" else f" {found.shape}"
    source = "" if prov.low is not None or prov.stderr is not None else f" ({prov.p} spread)"
    return found, f"{ends}{shape}{source}"


def _number(value: float) -> str:
    """A range end as its value is written: up to 4 significant digits, no exponent below a billion."""
    return f"{value:,.0f}" if abs(value) >= 1000 and abs(value) < 1e9 else f"{value:.4g}"


def _source_table(entries: list[Source], key_column: str) -> Table:
    from iowatt.output.tables import Table

    rows = [[s.key, s.grade, s.title, s.publisher, s.date, s.location] for s in entries]
    return Table((key_column, "grade", "title", "publisher", "date", "where"), rows)


def sources_markdown() -> str:
    """docs/sources.md: every source key and every study, as Markdown tables."""
    from iowatt.models.catalog.bibliography import SECTIONS, sources, studies
    from iowatt.output.tables import markdown

    lines = ["# Sources", "",
             "Every source key a catalog value cites in its `src` (S08, G07, W02, ...), and every published study iowatt reproduces. "
             "Written by `iowatt catalog sources -o docs/sources.md` from `models/catalog/sources.yml`; "
             "`iowatt catalog show NAME` prints the sources one device cites.", "",
             "Titles in [brackets] describe a document whose own title was not recorded. Grades: **P** primary (a vendor document, "
             "a faithful mirror of one, or a raw device dump), **R** an independent review or measurement, **S** secondary "
             "(news, reseller listing, wiki, someone's notes: use with care). `n.d.`: no date was recorded. "
             "Files whose repository a search excerpt did not name are marked `not recorded`.", ""]
    every = list(sources().values())
    for prefix, title in SECTIONS.items():
        lines += [f"## {title}", "", *markdown(_source_table([s for s in every if s.key.startswith(prefix)], "key"))]
    lines += ["## Published studies", "", "The studies of `scenarios/studies/` and `scenarios/validation/published.yaml`, by study id.", "",
              *markdown(_source_table(list(studies().values()), "study"))]
    return "\n".join(lines)


@catalog_app.command("sources")
@user_errors
def catalog_sources(
    fmt: Annotated[str | None, typer.Option("--format", "-f", help="table, json or markdown (default: by --output extension, else table "
                                                                   "on a terminal, json otherwise).")] = None,
    output: OutputOption = None,
) -> None:
    """The bibliography: every source key the catalog cites (title, publisher, date, where), and the published studies."""
    from iowatt.models.catalog.bibliography import sources, studies
    from iowatt.output import choose_format, serialize, tables, write_text

    chosen = choose_format(fmt, output, ("table", "json", "markdown"))
    if chosen == "json":
        write_text(serialize.to_json({"sources": {k: s.__dict__ for k, s in sources().items()},
                                      "studies": {k: s.__dict__ for k, s in studies().items()}}), output)
    elif chosen == "markdown":
        write_text(sources_markdown(), output)
    else:
        blocks = [_source_table(list(sources().values()), "key"), _source_table(list(studies().values()), "study")]
        write_text(tables.render(blocks, width=200), output)

