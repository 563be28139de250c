"""Presentation, in one leaf package: where results go and how they look.

The layers below (`simulator`, `scenarios`, `calibration`) return data; the
command line hands that data to this package.  It imports only the standard
library and, lazily, rich, matplotlib and pyarrow: never another iowatt layer,
so any layer's data can be shown without an import cycle.

- `files`: choose a format; write a regular file (atomically), a stream
  (FIFO, terminal, device, `-`) or stdout;
- `serialize`: JSON and CSV text;
- `tables`: plain-text (rich) and Markdown tables, human number formatting;
- `rows`: rows streamed to a CSV or Parquet file as they finish (sweeps);
- `figures`: matplotlib figures (study figures, Pareto plots);
- `progress`: a progress bar on stderr when it is a terminal.
"""

from iowatt.output.files import OutputError, choose_format, write_bytes, write_text

__all__ = ["OutputError", "choose_format", "write_bytes", "write_text"]
