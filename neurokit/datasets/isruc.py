"""ISRUC-Sleep, subgroup 1 (100 subjects, one night each), the sleep-staging set CBraMod is judged on.

Each subject's folder ``<N>/`` (N = 1…100) holds the night's polysomnogram ``<N>.rec`` (an EDF file named
``.rec``, 200 Hz, read through :func:`~neurokit.io.read_eeg` and MNE's EDF reader) and one hypnogram per scorer;
``<N>_1.txt`` (scorer 1) gives one stage per line per 30-s epoch from the recording's start: ``0`` W, ``1`` N1,
``2`` N2, ``3`` N3, ``5`` REM (AASM; no ``4``).

What the reader does is what CBraMod's ``preprocessing/ISRUC/prepare_ISRUC_1.py`` does (github.com/wjq-learning/
CBraMod @ b9e9610):

* the six EEG derivations are the file's channels 2-7 (0-based; the release takes columns ``2:8`` of the data frame
  after its time column). In ISRUC's channel order (``LOC-A2, ROC-A1, F3-A2, C3-A2, O1-A2, F4-A1, C4-A1, O2-A1,
  X1, …``; later recordings ``E1-M2, E2-M1, F3-M2, …``) these are F3, C3, O1, F4, C4, O2 against the opposite
  mastoid; they are renamed to those 10-05 names. The release takes the columns without looking at their labels;
  here a file whose channels 2-7 are not these six electrodes (any reference) is refused, naming what it has;
* the recording is cut into whole 30-s epochs from its start (the remainder dropped), and only the first
  ``20 × (n_epochs // 20)`` are kept (the release stores sequences of 20 epochs and drops the last
  ``n_epochs % 20`` epochs with their labels). Each kept epoch ``k`` becomes an annotation ``isruc/<stage>`` at
  ``30 k`` s lasting 30 s.

The subject id is the folder's number, three digits (``001`` … ``100``).
"""

from __future__ import annotations

import re
from pathlib import Path

from neurokit._utils.errors import DataFileError

#: stage codes of ISRUC's hypnograms (AASM) → stage names; the release's classes 0-4 in this order
STAGES = {"0": "W", "1": "N1", "2": "N2", "3": "N3", "5": "REM"}
#: seconds per scored epoch
EPOCH_S = 30.0
#: epochs per sequence of the release's model; recordings keep a whole number of sequences
SEQ_LEN = 20
#: the file positions (0-based) of the six EEG derivations the release takes, and their 10-05 electrodes
EEG_POSITIONS = (2, 3, 4, 5, 6, 7)
EEG_NAMES = ("F3", "C3", "O1", "F4", "C4", "O2")
#: subgroup 1's subject numbers
SUBJECTS = range(1, 101)


def _electrode(label: str) -> str:
    """The active electrode of an ISRUC label: ``"F3-A2"``, ``"F3-M2"``, ``"EEG F3"`` → ``"F3"``."""
    lab = re.sub(r"^\s*EEG\s+", "", label, flags=re.IGNORECASE).strip()
    return lab.split("-")[0].strip().upper()


def read_hypnogram(path: str | Path) -> list[str]:
    """One ISRUC hypnogram (``<N>_1.txt``): the stage names (W, N1, N2, N3, REM) of its 30-s epochs in order.

    Blank lines are skipped, as the release skips them.

    Parameters
    ----------
    path : str | Path
        The text file, one stage code (0, 1, 2, 3, 5) per line.

    Returns
    -------
    stages : list of str
        One name per epoch.

    Raises
    ------
    DataFileError
        A missing file, or a line holding anything else than 0, 1, 2, 3 or 5 (naming the file and the line).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "1_1.txt"
    >>> _ = p.write_text("0\\n1\\n5\\n\\n")
    >>> read_hypnogram(p)
    ['W', 'N1', 'REM']
    """
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path}: no such hypnogram (ISRUC keeps scorer 1's stages in <N>/<N>_1.txt)")
    out = []
    for k, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        code = line.strip()
        if not code:
            continue
        if code not in STAGES:
            raise DataFileError(f"{path}:{k}: {code!r} is not a stage code (0 W, 1 N1, 2 N2, 3 N3, 5 REM)")
        out.append(STAGES[code])
    return out


def isruc_entries(base: Path) -> list:
    """Every ISRUC subgroup-1 recording under ``base``: files ``<N>/<N>.rec`` with N in 1-100 (sorted by N).

    Parameters
    ----------
    base : Path
        The folder holding the subject folders (found anywhere below it).

    Returns
    -------
    entries : list of FileEntry
        Subject ``f"{N:03d}"``, run ``N``, reader ``isruc``.

    Raises
    ------
    DataFileError
        Two recordings of one subject number (e.g. subgroups 1 and 3 both under ``base``), naming both.
    """
    from neurokit.io.entry import FileEntry

    found: dict[int, Path] = {}
    for p in sorted(Path(base).rglob("*.rec")):
        if not (p.stem.isdigit() and p.parent.name == p.stem and int(p.stem) in SUBJECTS):
            continue
        n = int(p.stem)
        if n in found:
            raise DataFileError(
                f"{found[n]} and {p}: two recordings of ISRUC subject {n}; point data_root= at subgroup 1's folder"
            )
        found[n] = p
    return [FileEntry(path=p, subject=f"{n:03d}", run=str(n), reader="isruc") for n, p in sorted(found.items())]


def read_isruc(path: str | Path, **reading):
    """One ISRUC subgroup-1 night: its six EEG derivations (file channels 2-7, named F3, C3, O1, F4, C4, O2; volts)
    with one annotation ``isruc/<stage>`` (W, N1, N2, N3, REM) per kept 30-s epoch from scorer 1's hypnogram.

    The epochs kept are the first ``20 × (n_epochs // 20)`` whole 30-s epochs, as the release keeps a whole number
    of 20-epoch sequences.

    Parameters
    ----------
    path : str | Path
        The recording ``<N>/<N>.rec`` (EDF); its hypnogram ``<N>_1.txt`` lies beside it.

    Returns
    -------
    raw : mne.io.Raw
        Six EEG channels in volts at the file's rate (200 Hz), annotated.

    Raises
    ------
    DataFileError
        A file with fewer than eight channels or whose channels 2-7 are not F3, C3, O1, F4, C4, O2 (naming its
        labels); a missing or bad hypnogram (:func:`read_hypnogram`); a hypnogram whose number of stages differs
        from the recording's number of whole 30-s epochs (naming both files and both counts); any reading fault of
        the EDF.
    """
    import mne

    from neurokit.geometry.channels import ChannelRenames, montage_1005
    from neurokit.io.eeg import read_eeg
    from neurokit.io.notes import raw_notes, set_raw_notes

    path = Path(path)
    hyp = path.with_name(f"{path.stem}_1.txt")
    stages = read_hypnogram(hyp)
    raw = read_eeg(path, **{**reading, "eeg_only": False, "normalize_names": False, "set_montage": False})
    labels = list(raw.ch_names)
    got = [labels[i] for i in EEG_POSITIONS if i < len(labels)]
    if len(got) < len(EEG_POSITIONS) or tuple(_electrode(c) for c in got) != EEG_NAMES:
        raise DataFileError(
            f"{path}: channels 2-7 are {got if len(got) == len(EEG_POSITIONS) else labels} ({len(labels)} channels in all); the "
            f"release takes these six as {', '.join(EEG_NAMES)} (against A2/A1 or M2/M1), as ISRUC orders them"
        )
    raw.pick([labels[i] for i in EEG_POSITIONS])
    raw.set_channel_types(dict.fromkeys(raw.ch_names, "eeg"), verbose="error")
    renamed = dict(zip(raw.ch_names, EEG_NAMES))
    raw.rename_channels(renamed)
    raw.set_montage(montage_1005(), on_missing="ignore", verbose="error")
    sf = raw.info["sfreq"]
    per_epoch = int(round(EPOCH_S * sf))
    n_epochs = raw.n_times // per_epoch
    if len(stages) != n_epochs:
        raise DataFileError(
            f"{hyp.name}: {len(stages)} stages, but {path.name} holds {n_epochs} whole 30-s epochs "
            f"({raw.n_times / sf:.1f} s at {sf:g} Hz) in {path.parent}: the hypnogram does not match its recording"
        )
    keep = n_epochs - n_epochs % SEQ_LEN
    raw.set_annotations(
        mne.Annotations(
            [k * per_epoch / sf for k in range(keep)],
            [per_epoch / sf] * keep,
            [f"isruc/{s}" for s in stages[:keep]],
        )
    )
    notes = raw_notes(raw)
    renames = ChannelRenames(renamed=dict(renamed))
    applied = {**notes.applied, "epochs_dropped_to_whole_sequences": int(n_epochs - keep)}
    set_raw_notes(raw, renames=renames, applied=applied)
    return raw
