"""iowatt: a fast, calibrated simulator of storage and energy in AI servers.

The distribution installs one import name, `iowatt`: the layers live in the
repository's top-level folders and install as `iowatt.models`,
`iowatt.simulator`, `iowatt.scenarios` and `iowatt.calibration`.  The modules
directly in this package are the command line; it sits above every layer
(calibration, scenarios -> simulator -> models) so that their dependencies
point one way.
"""

# The one place the version is written (pyproject.toml reads it); every result's provenance records it.
__version__ = "0.2.0"
