"""Content hashes of files (SHA-256), used to pin recordings, weights and stores in provenance records."""

from __future__ import annotations

import logging
from pathlib import Path

logger = logging.getLogger("neurokit")


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file, read in 1 MiB chunks."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()
