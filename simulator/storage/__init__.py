"""Storage in the flow engine: the Drive and Volume contract (contract.py), the drives (ssd.py,
hdd.py), striping (striped.py) and the storage kinds (kinds/, found by registry.py)."""

from iowatt.simulator.storage.contract import (
    PAGE_BYTES,
    Access,
    ConcurrencyLaw,
    Drive,
    FileWrite,
    Usage,
    Volume,
    WriteRecord,
    mix_laws,
)

__all__ = ["PAGE_BYTES", "Access", "ConcurrencyLaw", "Drive", "FileWrite", "Usage", "Volume", "WriteRecord", "mix_laws"]
