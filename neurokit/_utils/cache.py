"""The user cache folder for derived arrays (resampling matrices): ``$NEUROKIT_CACHE`` or ``~/.cache/neurokit``."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir(create: bool = True) -> Path:
    """Folder for cached files; ``NEUROKIT_CACHE`` overrides ``~/.cache/neurokit`` (``XDG_CACHE_HOME`` honoured)."""
    env = os.environ.get("NEUROKIT_CACHE")
    if env:
        root = Path(env)
        if root.exists() and not root.is_dir():
            from neurokit._utils.errors import ConfigError

            raise ConfigError(
                f"NEUROKIT_CACHE={env}: is a file, expected a folder for cached resampling matrices; point "
                "NEUROKIT_CACHE at a folder (or unset it to use ~/.cache/neurokit)"
            )
    else:
        root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "neurokit"
    if create:
        root.mkdir(parents=True, exist_ok=True)
    return root
