"""One recording a data card points to (path, subject, session, run, events, archive member, reader)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger("neurokit")


@dataclass
class FileEntry:
    """One recording a card points to."""

    path: Path
    subject: str
    session: str = ""
    run: str = ""
    events: dict[str, int] | None = None  # annotation description → class index
    member: str = ""  # file inside an archive (Bonn set ZIPs)
    reader: str = ""  # "": neurokit.io.eeg.read_eeg; "bids": neurokit.io.bids.read_bids_eeg (sidecars); else a
    #                   dataset reader in neurokit.io.clinical.DATASETS (Bonn, SMNI, EEGMAT)
    label: int | None = None  # subject-level class of every window (a participants.tsv column)
