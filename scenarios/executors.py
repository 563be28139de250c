"""Where many independent scenario runs execute: a process pool, this process, or a Dask cluster.

Every choice is a `concurrent.futures.Executor`: `distributed.Client(...).
get_executor()` is one too, so sweeps, plans and reproductions run the very
same code path on a laptop and on a cluster.  `iowatt_workers` on the
executor is a chunking hint (how many cases run at once).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from iowatt.scenarios.loader import ScenarioError


class InlineExecutor(Executor):
    """Runs each call at submit time, in this process (--jobs 0; handy for debugging)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:
            future.set_exception(error)
        return future


def _scheduler_address(path: Path) -> str:
    """The scheduler's address from a Dask scheduler file (JSON with "address", as `dask scheduler --scheduler-file` writes it);
    read here because dask.distributed asserts on a file without one instead of saying so."""
    import json

    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ScenarioError(f"--scheduler-file {path}: expected a Dask scheduler file (JSON with an address), found unreadable "
                            f"content ({error.__class__.__name__})") from None
    address = document.get("address") if isinstance(document, dict) else None
    if not isinstance(address, str) or "://" not in address:
        raise ScenarioError(f"--scheduler-file {path}: expected a Dask scheduler file (JSON with an \"address\" such as "
                            f"tcp://host:8786), found {str(document)[:80]!r}")
    return address


@contextmanager
def open_executor(
    jobs: int | None = None, address: str | None = None, scheduler_file: str | None = None, connect_timeout: float = 10.0
) -> Iterator[Executor]:
    """ProcessPoolExecutor(jobs), or a Dask cluster's executor when an address / scheduler file is given.

    `connect_timeout` (s): how long to wait for the scheduler; 10 s covers a
    scheduler that is still starting on a busy node."""
    if address and scheduler_file:
        raise ScenarioError("--address and --scheduler-file: give one or the other")
    if scheduler_file and not Path(scheduler_file).is_file():
        # dask.distributed waits for the file to appear, forever: a missing file is a mistake, not a scheduler still starting
        raise ScenarioError(
            f"--scheduler-file {scheduler_file}: no such file; start the scheduler first (`dask scheduler --scheduler-file {scheduler_file}`)"
        )
    option = f"--address {address}"
    if scheduler_file:
        address = _scheduler_address(Path(scheduler_file))
        option = f"--scheduler-file {scheduler_file} (address {address})"
    if address:
        try:
            from distributed import Client
        except ImportError:
            raise ScenarioError("--address/--scheduler-file need dask.distributed: pip install 'iowatt[distributed]'") from None
        try:
            timeout = f"{connect_timeout}s"
            client = Client(address, timeout=timeout)
        except (OSError, TimeoutError, ValueError) as error:
            raise ScenarioError(f"{option}: cannot reach the Dask scheduler ({error})") from None
        try:
            executor = client.get_executor()
            executor.iowatt_workers = max(1, sum(client.nthreads().values()))  # type: ignore[attr-defined]  # chunking hint
            yield executor
        finally:
            client.close()
        return
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    if jobs < 0:
        raise ScenarioError(f"--jobs: expected >= 0, found {jobs}")
    if jobs == 0:
        yield InlineExecutor()
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pool.iowatt_workers = jobs  # type: ignore[attr-defined]  # chunking hint
        yield pool
