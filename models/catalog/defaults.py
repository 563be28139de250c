"""Provenance of the spec fields a catalog entry may leave out.

A field an entry does not set takes the spec's default (models/ssd.py
SSDSpec), and that default value needs a source or a reason like any other
number: the catalog loader gives every entry that uses a default the record
below, so `iowatt catalog show` says where each number comes from, set or
not.  Source keys are listed in docs/sources.md.
"""

from __future__ import annotations

from iowatt.models import ssd_power
from iowatt.models.provenance import Provenance, Shape


def _assumed(note: str, low: float, high: float, range_note: str, shape: Shape = "uniform") -> Provenance:
    return Provenance(p="assumed", note=note, low=low, high=high, shape=shape, range_note=range_note)


def _in_uJ(prov: Provenance, lead: str) -> Provenance:
    """A J-per-command constant's record as the uJ field that stands for it: the same note, source and range."""
    if prov.low is None or prov.high is None:
        raise ValueError("the constant's record carries no range to convert")
    return Provenance(p="assumed", src=prov.src, note=lead + prov.note, low=prov.low * 1e6, high=prov.high * 1e6,
                      shape=prov.shape, range_note=prov.range_note)


DEFAULT_PROVENANCE: dict[str, dict[str, Provenance]] = {
    "ssd": {
        "read_latency_us": _assumed(
            "default 80 us: no QD1 read latency published for this drive; the class brackets it (9550 MAX 60 us, S11; "
            "9200 92-150 us across capacities, S04/S05). It sets low-queue-depth latency and the start of the concurrency law",
            60, 150, "the class's published QD1 reads: low: 9550 MAX 60 us (S11); high: the slowest 9200 capacity, 150 us (S04/S05)",
        ),
        "write_latency_us": _assumed(
            "default 20 us: no QD1 write latency published for this drive; writes are acknowledged from the power-protected "
            "DRAM buffer, and the class publishes 15 us (9550, S11) and 21 us (9200, S04)",
            15, 21, "the class's published QD1 writes: low: 9550 MAX 15 us (S11); high: 9200 21 us (S04)",
        ),
        "warranty_years": _assumed(
            "default 5 years: not found for this drive; every catalog drive whose warranty is published has 5 "
            "(6550 ION, S08; 9550, S11; 5210 ION, S06), the enterprise norm",
            5, 5, "no spread: every catalog drive whose warranty is published has 5 years (S06, S08, S11)",
        ),
        "over_provisioning": _assumed(
            "unset: no drive here publishes its spare area, so it is derived from the entry's 4 KiB random-write IOPS and "
            "128 KiB sequential-write rate through the greedy-GC law (models.ssd.over_provisioning_of; 4-25 % for these "
            "drives); read-intensive drives sell decimal TB on binary-sized NAND (61.44 TB on 64 TiB raw = 14.5 % spare)",
            0.07, 0.28, "low: a read-intensive drive whose spare is only the decimal-binary gap (7.68 TB on 8 TiB: 12.7 %) less ~5 % "
            "for parity and bad blocks; high: a 3-DWPD mixed-use drive's spare (6.4 TB on 8 TiB raw: 27 %)", "log-uniform",
        ),
        "indirection_unit_bytes": _assumed(
            "default 4 KiB: one mapping entry per 4 KiB logical block, the classic FTL granule; the large QLC/TLC drives whose "
            "endurance is quoted at 16-32 KiB random writes use a larger unit and set it themselves (S10)",
            4096, 4096, "no spread: drives up to ~30 TB map 4 KiB (Micron 6600 ION 30.72 TB: 4 KiB, public_evidence.md section 1); "
            "the 16-32 KiB units of the largest drives (6600 ION 245 TB, Kioxia LC9, S10) are set per entry",
        ),
        "slc_cache_max_fraction": _assumed(
            "default 0 (no pSLC write cache): enterprise drives publish steady-state write rates, and the pSLC cache "
            "measurements found are of client drives (W05-W08)",
            0, 0, "no spread: no enterprise pSLC cache was found; Solidigm pairs its QLC drives with a separate SLC drive as a "
            "write buffer instead (S10)",
        ),
        # one law in one place: an unset value stands for models.ssd_power.COMMAND_J, so its record is that constant's,
        # in uJ (a sampler varies the constant, which the model reads where the field is unset)
        "energy_per_io_uJ": _in_uJ(ssd_power.PROVENANCE["COMMAND_J"], "unset: the model takes models.ssd_power.COMMAND_J "
                                   "unless two measured points of the drive separate its own; "),
        "endurance_rating_wa": _assumed(
            "default 1: the DWPD rating is taken as quoted for 128K sequential writes (write amplification 1) "
            "unless the entry names the workload it was quoted at",
            1.0, 3.3, "low: a rating quoted at 128 KiB sequential writes; high: one quoted at JESD219A, whose workload writes 3.3x "
            "the sequential one's amplification (6550 ION: 1.0 DWPD sequential vs 0.30 JESD219A, S10)", "log-uniform",
        ),
    },
}


def defaults_for(kind: str, given: set[str]) -> dict[str, Provenance]:
    """Records for the defaulted fields of an entry of `kind` that sets only `given`."""
    return {field: prov for field, prov in DEFAULT_PROVENANCE.get(kind, {}).items() if field not in given}
