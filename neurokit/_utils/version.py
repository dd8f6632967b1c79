"""The package version, from the installed distribution's metadata (one place: ``pyproject.toml``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "neurokit-fm"


def package_version() -> str:
    """Version of the installed ``neurokit-fm`` distribution (``"0+unknown"`` when run from an uninstalled tree)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "0+unknown"


VERSION = package_version()
