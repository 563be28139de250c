"""Test-session settings.

Dask writes worker scratch files under `temporary-directory`, by default
`dask-scratch-space` in the system temporary folder, where it stays after the
run; every Dask cluster the tests start writes into a folder of this session
instead, removed when the session ends.  (Set before any test imports dask.)
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

DASK_SCRATCH = tempfile.mkdtemp(prefix="iowatt-tests-dask-")
os.environ["DASK_TEMPORARY_DIRECTORY"] = DASK_SCRATCH
atexit.register(shutil.rmtree, DASK_SCRATCH, ignore_errors=True)
