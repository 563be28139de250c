"""Provenance of the spec fields a catalog entry may leave out.

A field an entry does not set takes the spec's default (models/ssd.py
SSDSpec), and that default value needs a source or a reason like any other
number: the catalog loader gives every entry that uses a default the record
below, so `iowatt catalog show` says where each number comes from, set or
not.  Source keys are listed in docs/sources.md.
"""

from __future__ import annotations

from iowatt.models.provenance import Provenance


def _assumed(note: str) -> Provenance:
    return Provenance(p="assumed", note=note)


DEFAULT_PROVENANCE: dict[str, dict[str, Provenance]] = {
    "ssd": {
        "read_latency_us": _assumed(
            "default 80 us: no QD1 read latency published for this drive; the class brackets it (9550 MAX 60 us, S11; "
            "9200 92-150 us across capacities, S04/S05). It sets low-queue-depth latency and the start of the concurrency law"
        ),
        "write_latency_us": _assumed(
            "default 20 us: no QD1 write latency published for this drive; writes are acknowledged from the power-protected "
            "DRAM buffer, and the class publishes 15 us (9550, S11) and 21 us (9200, S04)"
        ),
        "warranty_years": _assumed(
            "default 5 years: not found for this drive; every catalog drive whose warranty is published has 5 "
            "(6550 ION, S08; 9550, S11; 5210 ION, S06), the enterprise norm"
        ),
        "over_provisioning": _assumed(
            "default 0.12: no drive here publishes its spare area; read-intensive drives sell decimal TB on binary-sized NAND "
            "(61.44 TB on 64 TiB raw = 14.5 % spare), less about 2.5 % for parity and bad blocks"
        ),
        "indirection_unit_bytes": _assumed(
            "default 4 KiB: one mapping entry per 4 KiB logical block, the classic FTL granule; the large QLC/TLC drives whose "
            "endurance is quoted at 16-32 KiB random writes use a larger unit and set it themselves (S10)"
        ),
        "slc_cache_max_fraction": _assumed(
            "default 0 (no pSLC write cache): enterprise drives publish steady-state write rates, and the pSLC cache "
            "measurements found are of client drives (W05-W08)"
        ),
        "energy_per_io_uJ": _assumed(
            "default 0: power is idle + energy per byte unless two measured points separate a per-command energy "
            "(as for the 6550 ION, S08)"
        ),
        "endurance_rating_wa": _assumed(
            "default 1: the DWPD rating is taken as quoted for 128K sequential writes (write amplification 1) "
            "unless the entry names the workload it was quoted at"
        ),
    },
}


def defaults_for(kind: str, given: set[str]) -> dict[str, Provenance]:
    """Records for the defaulted fields of an entry of `kind` that sets only `given`."""
    return {field: prov for field, prov in DEFAULT_PROVENANCE.get(kind, {}).items() if field not in given}
