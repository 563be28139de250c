"""iowatt: a fast, calibrated simulator of storage and energy in AI servers.

This package is the command line only; it sits above every layer
(calibration, scenarios -> simulator -> models) so that their dependencies
point one way.
"""
