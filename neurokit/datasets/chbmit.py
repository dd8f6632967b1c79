"""The CHB-MIT Scalp EEG Database 1.0.0 (PhysioNet; Shoeb 2009), as CBraMod's release prepares it for seizure
detection.

Layout: ``chbNN/chbNN_MM.edf`` (one to four hours at 256 Hz, µV) with one ``chbNN/chbNN-summary.txt`` per patient,
whose blocks give each recording's seizures::

    File Name: chb01_03.edf
    ...
    Number of Seizures in File: 1
    Seizure Start Time: 2996 seconds          (or "Seizure 1 Start Time: ...")
    Seizure End Time: 3036 seconds

The EDF channels are already bipolar derivations (``FP1-F7``, ``T7-P7`` …; some files repeat one, e.g. a second
``T8-P8``, which MNE reads as ``T8-P8-0`` and ``T8-P8-1``). :func:`read_chb_mit` renames each derivation to 10-05
case (``FP1-F7`` → ``Fp1-F7``; a repeated one keeps its first occurrence under that name and the next as
``Fp1-F7-2``, as the release does) and annotates the windows the release cuts (:func:`release_windows`), so that
the card's recipe (``event_windows: onset``, ``event_repeated: keep``) stores exactly them.

The release is github.com/wjq-learning/CBraMod @ b9e9610: ``preprocessing/CHB-MIT/process1.py`` (which
recordings, the seizure times as sample indices ``seconds·256 − 1``), ``process2.py`` (the windows and their
labels, the split) and ``datasets/chb_dataset.py`` (each window resampled alone to 2000 samples, / 100).
"""

from __future__ import annotations

import logging
import re
import warnings
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError

logger = logging.getLogger("neurokit")

#: CHB-MIT's sampling rate (Hz); the release's seizure indices and window lengths assume it
SFREQ = 256.0
#: the release's window (10 s) and the hop of its extra seizure windows (5 s), in samples at 256 Hz
WINDOW = 2560
EXTRA_HOP = 1280
#: the extra seizure windows start this many samples (1 s) before a seizure's start and end 1 s after its end
EXTRA_MARGIN = 256
#: process1.py's ``parameters``: patient → (reference recording, first, last recording number it processes).
#: Patients 12, 13 and 17 are not there: the release never prepares them (their montages change between
#: recordings), so no recording of theirs is listed.
RELEASE_PATIENTS: dict[str, tuple[int, int, int]] = {
    "01": (1, 2, 46), "02": (1, 2, 35), "03": (1, 2, 38), "04": (7, 1, 43), "05": (1, 2, 39),
    "06": (1, 2, 24), "07": (1, 2, 19), "08": (2, 3, 29), "09": (2, 1, 19), "10": (1, 2, 89),
    "11": (1, 2, 99), "14": (1, 2, 42), "15": (2, 1, 63), "16": (1, 2, 19), "18": (2, 1, 36),
    "19": (2, 1, 30), "20": (1, 2, 68), "21": (1, 2, 33), "22": (1, 2, 77), "23": (6, 7, 20),
    "24": (1, 3, 21),
}  # fmt: skip
_RECORDING = re.compile(r"chb(\d\d)_(\d\d)\.edf")


def release_numbers(patient: str) -> set[int]:
    """The recording numbers of patient ``"NN"`` that process1.py prepares (empty for 12, 13, 17).

    Parameters
    ----------
    patient : str
        The two-digit case number (``"01"`` … ``"24"``).

    Returns
    -------
    set of int
        The ``MM`` of the files ``chbNN_MM.edf`` the release prepares.

    Examples
    --------
    >>> sorted(release_numbers("24"))[:3], 2 in release_numbers("24"), release_numbers("12")
    ([1, 3, 4], False, set())
    """
    if patient not in RELEASE_PATIENTS:
        return set()
    ref, first, last = RELEASE_PATIENTS[patient]
    return {ref, *range(first, last + 1)}


def read_summary(path: str | Path) -> dict[str, list[tuple[int, int]]]:
    """A patient's ``chbNN-summary.txt``: recording file name → its seizures as ``(start, end)`` sample indices at
    256 Hz, ``seconds · 256 − 1`` as the release computes them (the end read from the line after each start line,
    as the release does: ``chb09_08`` numbers its second seizure's end "Seizure 1 End Time"). A recording listed in
    several blocks keeps the seizures of all of them (each once), in the order listed.

    Parameters
    ----------
    path : str | Path
        The summary file.

    Raises
    ------
    DataFileError
        A missing file; a recording block without its "Number of Seizures in File" line, with fewer seizure lines
        than that number, a start line not followed by an end line, a time that is not whole seconds, or a seizure
        whose end is not after its start (naming the file and the line).
    """
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path}: no such summary file (CHB-MIT lists each patient's seizures in it)")
    lines = path.read_text(errors="replace").splitlines()
    out: dict[str, list[tuple[int, int]]] = {}
    starts = [i for i, ln in enumerate(lines) if len(ln.split()) == 3 and ln.split()[:2] == ["File", "Name:"]]
    for b, i in enumerate(starts):
        name = lines[i].split()[2]
        block = range(i + 1, starts[b + 1] if b + 1 < len(starts) else len(lines))
        count = next((k for k in block if lines[k].split()[:1] == ["Number"]), None)
        if count is None:
            raise DataFileError(f"{path}:{i + 1}: {name} has no 'Number of Seizures in File' line")
        try:
            n = int(lines[count].split()[-1])
        except ValueError:
            raise DataFileError(f"{path}:{count + 1}: {lines[count].strip()!r} does not end in a number") from None
        seizures = []
        k = count + 1
        for _ in range(n):
            k = next((j for j in range(k, block.stop) if _seizure_line(lines[j], "Start")), None)  # type: ignore[assignment]
            if k is None:
                raise DataFileError(f"{path}:{count + 1}: {name} announces {n} seizure(s) but lists {len(seizures)}")
            if k + 1 >= block.stop or not _seizure_line(lines[k + 1], "End"):
                raise DataFileError(f"{path}:{k + 1}: a seizure start not followed by its end line")
            start, end = _index(path, k, lines[k]), _index(path, k + 1, lines[k + 1])
            if end <= start:
                raise DataFileError(
                    f"{path}:{k + 2}: {name}'s seizure ends at {(end + 1) / SFREQ:g} s, not after its start at "
                    f"{(start + 1) / SFREQ:g} s (line {k + 1}): correct the times in the summary"
                )
            seizures.append((start, end))
            k += 2
        listed = out.setdefault(name, [])  # a recording listed in two blocks keeps the seizures of both, once each
        listed += [sz for sz in seizures if sz not in listed]
    return out


def _seizure_line(line: str, what: str) -> bool:
    words = line.split()
    return bool(words) and words[0] == "Seizure" and what in words


def _index(path: Path, k: int, line: str) -> int:
    words = line.split()
    try:
        seconds = int(words[-2])
    except (ValueError, IndexError):
        raise DataFileError(f"{path}:{k + 1}: {line.strip()!r} is not '... Time: <whole seconds> seconds'") from None
    if seconds < 0:
        raise DataFileError(f"{path}:{k + 1}: {line.strip()!r}: a time before the recording's start; correct it")
    return seconds * int(SFREQ) - 1


def release_windows(n_times: int, seizures: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """The release's windows of one recording of ``n_times`` samples at 256 Hz: ``(starts, labels)``.

    * every whole 2560-sample window from sample 0 without overlap, labelled 1 when a seizure's start or end index
      lies strictly inside it (``i < idx < i + 2560``), else 0 (a window wholly inside a long seizure is 0);
    * then, per seizure, windows every 1280 samples from ``max(0, start − 256)`` up to (not including)
      ``min(end + 256, n_times)``, each labelled 1. The last of these may run past the recording's end: the
      release keeps it short (and stretches it to 2000 samples when loading); they are listed here and the
      windowing drops them with a warning.

    Parameters
    ----------
    n_times : int
        The recording's length in samples (at 256 Hz).
    seizures : list of (int, int)
        Seizure start and end sample indices (:func:`read_summary`).

    Examples
    --------
    >>> starts, labels = release_windows(12800, [(2999, 4351)])
    >>> starts, labels
    ([0, 2560, 5120, 7680, 10240, 2743, 4023], [0, 1, 0, 0, 0, 1, 1])
    """
    starts = list(range(0, n_times - WINDOW + 1, WINDOW))
    labels = [int(any(i < s < i + WINDOW or i < e < i + WINDOW for s, e in seizures)) for i in starts]
    for s, e in seizures:
        extra = list(range(max(0, s - EXTRA_MARGIN), min(e + EXTRA_MARGIN, n_times), EXTRA_HOP))
        starts += extra
        labels += [1] * len(extra)
    return starts, labels


def _entry(path: Path):
    from neurokit.io.entry import FileEntry

    return FileEntry(path=path, subject=path.parent.name, run=path.stem, reader="chb_mit")


def chb_mit_entries(base: Path) -> list:
    """The recordings under ``base`` that the release prepares: ``chbNN/chbNN_MM.edf`` of the 21 patients of
    process1.py, numbers within its ranges (:data:`RELEASE_PATIENTS`), sorted by path; the subject is the patient
    folder (``chb01``). Patients 12, 13 and 17 and files outside the ranges (``chb24_02``, ``chb24_22``,
    ``chb02_16+.edf``) are left out, as by the release.

    A summary naming a recording of that set which is not there gives one warning per patient (the ``neurokit``
    logger), naming the summary and the recordings (the release skips absent files too: a partial download is fine).

    Parameters
    ----------
    base : Path
        The database folder (``chb-mit-scalp-eeg-database-1.0.0``); patient folders are found anywhere under it.

    Returns
    -------
    list[FileEntry]
        One row per recording (``subject`` the patient folder, ``run`` the file stem, ``reader`` ``chb_mit``).

    Raises
    ------
    DataFileError
        A malformed summary of a patient with recordings (:func:`read_summary`).
    """
    base = Path(base)
    out = []
    for folder in sorted(p for p in base.rglob("chb[0-9][0-9]") if p.is_dir()):
        patient = folder.name[3:]
        numbers = release_numbers(patient)
        files = [
            p for p in sorted(folder.glob("*.edf")) if (m := _RECORDING.fullmatch(p.name)) and m.group(1) == patient
        ]
        files = [p for p in files if int(p.name[6:8]) in numbers]
        out += [_entry(p) for p in files]
        summary = folder / f"{folder.name}-summary.txt"
        if files and summary.is_file():
            have = {p.name for p in files}
            named = [
                n
                for n in read_summary(summary)
                if (m := _RECORDING.fullmatch(n)) and m.group(1) == patient and int(m.group(2)) in numbers
            ]
            absent = [n for n in named if n not in have]
            if absent:
                logger.warning(
                    "%s: names %d recording(s) not in %s: %s%s; prepared without them",
                    summary,
                    len(absent),
                    folder,
                    ", ".join(absent[:6]),
                    " …" if len(absent) > 6 else "",
                )
    return out


def _rename(raw, path: Path) -> None:
    """Bipolar labels to 10-05 case (``FP1-F7`` → ``Fp1-F7``); of a repeated label (MNE's ``T8-P8-0``,
    ``T8-P8-1``) the first occurrence takes the name and the next ones ``<name>-2``, ``-3`` (as the release's
    ``-2``)."""
    from neurokit.geometry.channels import ChannelRenames, normalize_ch_name
    from neurokit.io.headers import read_edf_header
    from neurokit.io.notes import raw_notes, set_raw_notes

    labels = [lab.strip() for lab in read_edf_header(path).labels]
    repeated = {lab for lab in labels if labels.count(lab) > 1}

    def tenfive(label: str) -> str:
        parts = label.split("-")
        if len(parts) != 2:
            return label
        new = [normalize_ch_name(p) for p in parts]
        return "-".join(n for n, _ in new) if all(ok for _, ok in new) else label

    mapping = {}
    for ch in raw.ch_names:
        m = re.fullmatch(r"(.*)-(\d+)", ch)
        if m and m.group(1) in repeated:
            k = int(m.group(2))
            mapping[ch] = tenfive(m.group(1)) + (f"-{k + 1}" if k else "")
        else:
            mapping[ch] = tenfive(ch)
    taken = set()
    for ch, new in list(mapping.items()):
        if new in taken:  # two labels that become one name: keep the file's own
            mapping[ch] = ch
        taken.add(mapping[ch])
    renamed = {a: b for a, b in mapping.items() if a != b}
    raw.rename_channels(renamed)
    notes = raw_notes(raw)
    renames = notes.renames or ChannelRenames()
    renames.renamed = {**renames.renamed, **renamed}  # recorded in the store's sources, as read_eeg's renames
    set_raw_notes(raw, notes, renames=renames)


def read_chb_mit(path: str | Path, **reading):
    """One CHB-MIT recording (EDF, volts) with its bipolar channels in 10-05 case and the release's windows as
    annotations: ``chb/0`` or ``chb/1`` at each 10-s window from sample 0, ``chb/1`` at each extra seizure window
    (onsets ``sample / 256`` s, durations 10 s; :func:`release_windows`). Seizures come from
    ``chbNN-summary.txt`` beside it.

    Parameters
    ----------
    path : str | Path
        ``chbNN/chbNN_MM.edf``.

    Raises
    ------
    DataFileError
        No summary beside the recording, a malformed summary (:func:`read_summary`), a recording the summary does
        not list (its seizures are unknown; the release would label every window 0), a rate other than 256 Hz,
        or a seizure that starts after the recording's end; any reading fault of the EDF.
    """
    import mne

    from neurokit.io.eeg import read_eeg

    path = Path(path)
    summary = path.parent / f"{path.parent.name}-summary.txt"
    if not summary.is_file():
        raise DataFileError(f"{path}: no summary {summary.name} beside it (CHB-MIT lists the seizures there)")
    seizures = read_summary(summary)
    if path.name not in seizures:
        raise DataFileError(
            f"{path}: not listed in {summary} (no 'File Name: {path.name}' block), so its seizures are unknown; "
            "skip_bad=True leaves it out"
        )
    with warnings.catch_warnings():  # repeated labels are expected here (renamed below): not worth a warning per file
        warnings.filterwarnings("ignore", message=r".*Channel names are not unique", category=RuntimeWarning)
        raw = read_eeg(path, **{**reading, "normalize_names": False, "set_montage": False})
    sf = raw.info["sfreq"]
    if abs(sf - SFREQ) > 1e-6:
        raise DataFileError(f"{path}: sampled at {sf:g} Hz; CHB-MIT (and the release's seizure indices) use 256 Hz")
    late = [(s, e) for s, e in seizures[path.name] if s >= raw.n_times]
    if late:
        raise DataFileError(
            f"{path}: {summary.name} puts a seizure start at {(late[0][0] + 1) / SFREQ:g} s, past the recording's "
            f"end ({raw.n_times / SFREQ:g} s): the summary does not match the recording"
        )
    _rename(raw, path)
    starts, labels = release_windows(raw.n_times, seizures[path.name])
    onsets = np.asarray(starts, dtype=np.float64) / SFREQ + raw.first_samp / sf
    # a window's annotation spans it, clipped at the recording's end (an extra seizure window may run past it)
    durations = np.minimum(WINDOW, raw.n_times - np.asarray(starts)) / SFREQ
    raw.set_annotations(mne.Annotations(onsets, durations, [f"chb/{y}" for y in labels]))
    return raw
