"""Where a result came from: iowatt version, git commit, seed, catalog identity."""

from __future__ import annotations

import hashlib
import subprocess
from functools import cache
from pathlib import Path

from iowatt.models.catalog import CATALOG_DIR

from iowatt import __version__

# run from a checkout, simulator/ sits in the repository root; installed from a wheel it sits in
# site-packages/iowatt/, which has no .git of its own (and may lie inside someone else's checkout)
REPO_ROOT = Path(__file__).resolve().parent.parent


def version() -> str:
    return __version__


@cache
def git_commit() -> str | None:
    if not (REPO_ROOT / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@cache
def catalog_sha256() -> str:
    digest = hashlib.sha256()
    for path in sorted([*CATALOG_DIR.glob("*.yaml"), *CATALOG_DIR.glob("*.yml")]):  # devices and prices
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def provenance(seed: int) -> dict[str, object]:
    return {
        "iowatt_version": version(),
        "git_commit": git_commit(),
        "seed": seed,
        "catalog_sha256": catalog_sha256(),
    }
