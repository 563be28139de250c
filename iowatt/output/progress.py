"""A progress bar on stderr while a long command works: done / total, rate, time left, failures.

Shown only when stderr is a terminal, so logs, pipes and tests get no
control characters; stdout (the results) is never touched.  Use it as a
context manager and call `advance()` once per finished item, in the thread
that owns the bar.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType


class ProgressBar:
    def __init__(self, label: str, total: int, enabled: bool | None = None) -> None:
        """`enabled`: None shows the bar when stderr is a terminal; True or False forces it."""
        self.label, self.total = label, total
        self.count = self.failures = 0
        self._start = time.perf_counter()
        show = sys.stderr.isatty() if enabled is None else enabled
        self._progress = None
        if not show or total <= 0:
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self._progress = Progress(
            TextColumn(label),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[failures]}"),
            console=Console(file=sys.stderr),
            transient=False,
        )
        self._task = self._progress.add_task(label, total=total, rate="", failures="")
        self._progress.start()

    @property
    def shown(self) -> bool:
        return self._progress is not None

    def advance(self, failed: bool = False) -> None:
        self.count += 1
        self.failures += bool(failed)
        if self._progress is None:
            return
        rate = self.count / max(time.perf_counter() - self._start, 1e-9)
        failures = f"{self.failures} failed" if self.failures else ""
        self._progress.update(self._task, advance=1, rate=f"{rate:.1f}/s", failures=failures)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.stop()
