"""Storage kinds, one module each (simulator.storage.registry finds them by file name)."""
