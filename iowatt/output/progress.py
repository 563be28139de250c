"""Progress on stderr while a long command works: done / total, rate, time left, failures.

On a terminal, a bar.  Elsewhere (a log, a pipe, a batch job), a plain line
at most every LOG_EVERY_SECONDS, so a 10,000-case run is not silent for
half a minute and a short one prints nothing; no control characters either
way, and stdout (the results) is never touched.  Use it as a context manager
and call `advance()` once per finished item, in the thread that owns the bar.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType

# Assumed: one line per 5 s keeps a log readable (a 34 s run gets 6 lines, an hour 720) while a watcher still sees
# it move; plausible 2..30 s (issue 36 asks for "a line every ~5 s or every 10 %").
LOG_EVERY_SECONDS = 5.0


class ProgressBar:
    def __init__(self, label: str, total: int, enabled: bool | None = None) -> None:
        """`enabled`: None shows the bar when stderr is a terminal and plain lines otherwise; True forces the bar, False
        shows nothing."""
        self.label, self.total = label, total
        self.count = self.failures = 0
        self._start = self._last_line = time.perf_counter()
        show = sys.stderr.isatty() if enabled is None else enabled
        self._progress = None
        self._lines = enabled is None and not show and total > 0
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
        if self._lines:
            self._line()
        if self._progress is None:
            return
        rate = self.count / max(time.perf_counter() - self._start, 1e-9)
        failures = f"{self.failures} failed" if self.failures else ""
        self._progress.update(self._task, advance=1, rate=f"{rate:.1f}/s", failures=failures)

    def _line(self) -> None:
        now = time.perf_counter()
        if now - self._last_line < LOG_EVERY_SECONDS:
            return
        self._last_line = now
        rate = self.count / max(now - self._start, 1e-9)
        left = (self.total - self.count) / rate if rate > 0 else 0.0
        failed = f", {self.failures} failed" if self.failures else ""
        print(f"{self.label}: {self.count}/{self.total} ({self.count / self.total:.0%}), {rate:.1f}/s, about {left:.0f} s left{failed}",
              file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.stop()
