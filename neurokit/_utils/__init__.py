"""Helpers every layer may use and that import nothing else of neurokit: errors, progress bars, hashing,
process/cluster maps, the cache folder and the package version."""
