"""Reading EEG recordings into :class:`mne.io.Raw`, with channel names put into 10-05 form.

Every format MNE reads is accepted (EDF/EDF+, BDF, GDF, BrainVision, EEGLAB, FIF, CNT, …) through
:func:`mne.io.read_raw`, lazily (``preload=False``). Only EEG channels are kept. Channel labels are
normalised to the standard 10-05 names of MNE's ``standard_1005`` montage (``Fc5.`` → ``FC5``,
``EEG Fp1-REF`` → ``Fp1``); the old 10-20 temporal names are mapped to the 10-10 ones
(T3→T7, T4→T8, T5→P7, T6→P8) and every rename is recorded.
"""
from __future__ import annotations

import logging
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from .._errors import DataFileError

logger = logging.getLogger("neurokit")

#: Old 10-20 names → their 10-10/10-05 equivalents (Oostenveld & Praamstra 2001; ACNS 2006).
OLD_TO_NEW = {"T3": "T7", "T4": "T8", "T5": "P7", "T6": "P8"}

#: Prefixes and suffixes that EEG systems glue to electrode names.
_PREFIX = re.compile(r"^(EEG[\s_-]*)", re.IGNORECASE)
_SUFFIX = re.compile(r"([\s_-]+(REF|LE|AR|AVG|A1|A2|M1|M2|CAR))$", re.IGNORECASE)
_REFERENCE_SITES = {"A1", "A2", "M1", "M2"}


def montage_1005():
    """MNE's template 10-05 montage (named ``colin27_1005`` from MNE 1.13, ``standard_1005`` before)."""
    import mne

    builtin = mne.channels.get_builtin_montages()
    return mne.channels.make_standard_montage("colin27_1005" if "colin27_1005" in builtin else "standard_1005")


@lru_cache(maxsize=1)
def _standard_1005() -> dict[str, str]:
    return {n.upper(): n for n in montage_1005().ch_names}


def normalize_ch_name(name: str) -> tuple[str, bool]:
    """Map one raw channel label to its 10-05 spelling.

    Parameters
    ----------
    name : str
        Label as stored in the file (e.g. ``"Fc5."``, ``"EEG T3-REF"``).

    Returns
    -------
    new_name : str
        The 10-05 label (``"FC5"``, ``"T7"``), or the input without padding when no standard label matches.
    matched : bool
        Whether the label is a standard 10-05 position.
    """
    table = _standard_1005()
    cleaned = name.strip()
    stripped = _SUFFIX.sub("", _PREFIX.sub("", cleaned.rstrip(". "))).strip()
    if stripped.upper() in _REFERENCE_SITES and stripped.upper() != _PREFIX.sub("", cleaned).upper():
        stripped = cleaned  # "A2-A1" is a derivation between two reference sites, not the electrode A2
    for cand in (cleaned, stripped):
        key = cand.replace(" ", "").rstrip(".").upper()  # EEGMMIDB pads labels with dots: "Cz..", "Fc5."
        if key in OLD_TO_NEW:
            return OLD_TO_NEW[key], True
        if key in table:
            return table[key], True
    return cleaned.rstrip(". ") or cleaned, False


@dataclass
class ChannelRenames:
    """What :func:`read_eeg` did to the channel labels of one file."""

    renamed: dict[str, str] = field(default_factory=dict)  # original → 10-05
    aliases: dict[str, str] = field(default_factory=dict)  # 10-10 name → old 10-20 name (T7 → T3)
    nonstandard: list[str] = field(default_factory=list)  # labels with no 10-05 position


def read_eeg(
    path: str | Path,
    *,
    preload: bool = False,
    eeg_only: bool = True,
    normalize_names: bool = True,
    set_montage: bool = True,
    allow_truncated: bool = False,
    verbose: bool | str | None = "error",
):
    """Read one EEG recording, lazily, with EEG channels picked and 10-05 channel names.

    Parameters
    ----------
    path : str | Path
        Recording in any format :func:`mne.io.read_raw` knows (``.edf``, ``.bdf``, ``.gdf``, ``.vhdr``,
        ``.set``, ``.fif``, ``.cnt``, …).
    preload : bool
        Load the samples now. Default ``False``: only the header is read.
    eeg_only : bool
        Keep only channels typed ``eeg``. EDF files type every channel as EEG, so a channel whose label
        says otherwise (``ECG``, ``EOG``, ``EMG``, ``Status``, ``Resp``…) is re-typed before picking.
    normalize_names : bool
        Rename channels to 10-05 labels (see :func:`normalize_ch_name`).
    set_montage : bool
        Attach the template 10-05 positions to the channels that have one.
    allow_truncated : bool
        A file shorter than its header says (a recording not stopped cleanly, a partial copy) raises
        :class:`DataFileError` by default; with ``True`` the samples that are there are read and a
        ``RuntimeWarning`` names the file.
    verbose : bool | str | None
        MNE's logging level for the read.

    Returns
    -------
    raw : mne.io.Raw
        Data in volts, as MNE stores it. Annotations are kept. The renames are in
        ``raw.info["temp"]["neurokit_renames"]`` (:class:`ChannelRenames`).

    Raises
    ------
    FileNotFoundError
        The path does not exist.
    DataFileError
        MNE cannot read the file (unknown format, corrupt header), the file is truncated (see
        ``allow_truncated``), or it has no EEG channel.

    Other warnings MNE gives while reading are re-issued as ``RuntimeWarning`` prefixed with the path.
    """
    import mne

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.is_dir():
        raise DataFileError(f"{path}: is a folder; give one recording file (e.g. .edf, .vhdr, .set, .fif)")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            raw = mne.io.read_raw(path, preload=preload, verbose="warning" if verbose == "error" else verbose)
    except Exception as exc:  # MNE raises many types for damaged files
        raise DataFileError(
            f"{path}: MNE could not read this file ({type(exc).__name__}: {exc}). "
            "Check that it is complete (not truncated) and in a format MNE supports."
        ) from exc
    for w in caught:
        msg = str(w.message)
        if "does not match the file size" in msg:
            if not allow_truncated:
                raise DataFileError(
                    f"{path}: truncated file: the header announces more data records than the file holds "
                    "(an interrupted recording or a partial copy). Copy the file again, or read the part "
                    "that is there with read_eeg(..., allow_truncated=True)."
                )
            msg = "truncated file: reading only the data records present"
        warnings.warn(f"{path}: {msg}", RuntimeWarning, stacklevel=2)
    return standardize_raw(raw, path, eeg_only=eeg_only, normalize_names=normalize_names, set_montage=set_montage)


def standardize_raw(raw, path, *, eeg_only: bool = True, normalize_names: bool = True, set_montage: bool = True):
    """The steps :func:`read_eeg` applies after MNE's reader, for a ``Raw`` read some other way (e.g.
    :func:`neurokit.io.bids.read_bids_eeg`): refuse empty recordings, re-type non-EEG channels, pick EEG,
    10-05 names, template montage. ``path`` names the recording in messages. Returns ``raw``.
    """
    import mne

    if len(raw.ch_names) == 0:
        raise DataFileError(
            f"{path}: the file holds no signal channels (an annotation-only EDF such as a hypnogram?); "
            "read its annotations with mne.read_annotations()"
        )
    if raw.n_times == 0:
        raise DataFileError(f"{path}: the recording holds no samples (truncated file?)")

    _retype_non_eeg(raw)
    if eeg_only:
        picks = mne.pick_types(raw.info, eeg=True, exclude=[])
        if len(picks) == 0:
            types = sorted(set(raw.get_channel_types()))
            raise DataFileError(
                f"{path}: no EEG channels (channel types found: {', '.join(types)}). "
                "Set the channel types with raw.set_channel_types() or pass eeg_only=False."
            )
        raw.pick(picks)

    renames = ChannelRenames()
    if normalize_names:
        mapping: dict[str, str] = {}
        taken: set[str] = set()
        for ch in raw.ch_names:
            new, ok = normalize_ch_name(ch)
            if not ok:
                renames.nonstandard.append(ch)
                new = ch
            if new in taken:  # two labels map to one position: keep the original to stay unique
                new = ch
            taken.add(new)
            if new != ch:
                mapping[ch] = new
                old = _SUFFIX.sub("", _PREFIX.sub("", ch.strip().rstrip(". "))).upper()
                if OLD_TO_NEW.get(old) == new:
                    renames.aliases[new] = old
        if mapping:
            raw.rename_channels(mapping)
        renames.renamed = mapping
    if set_montage:
        raw.set_montage(montage_1005(), on_missing="ignore", verbose="error")
    raw.info["temp"] = dict(raw.info.get("temp") or {}, neurokit_renames=renames, neurokit_source=str(path))
    if renames.nonstandard:
        logger.info("%s: channels without a 10-05 position: %s", path, renames.nonstandard)
    return raw


_NON_EEG = {
    "ecg": re.compile(r"(ECG|EKG)", re.I),
    "eog": re.compile(r"(EOG|HEOG|VEOG)", re.I),
    "emg": re.compile(r"(EMG|CHIN|LEG)", re.I),
    "stim": re.compile(r"^(STATUS|STI ?\d*|TRIGGER|EVENT|MARKER|ANNOTATIONS)$", re.I),
    "resp": re.compile(r"(RESP|THOR|ABDO|AIRFLOW)", re.I),
    "misc": re.compile(r"(SPO2|PULSE|PHOTIC|IBI|BURSTS|SUPPR|TEMP|POS|LIGHT|DC\d+|X\d+$)", re.I),
}


def _retype_non_eeg(raw) -> None:
    """EDF/GDF readers type every signal 'eeg'; fix the ones whose labels say otherwise."""
    types = raw.get_channel_types()
    change = {}
    for ch, kind in zip(raw.ch_names, types):
        if kind != "eeg":
            continue
        new, ok = normalize_ch_name(ch)
        if ok:
            continue
        for new_kind, pat in _NON_EEG.items():
            if pat.search(ch):
                change[ch] = new_kind
                break
    if change:
        raw.set_channel_types(change, on_unit_change="ignore", verbose="error")


def file_sha256(path: str | Path, chunk: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file, read in 1 MiB chunks."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()


def check_finite(data: np.ndarray, ch_names: list[str], path) -> None:
    """Raise :class:`DataFileError` naming the channels that hold NaN or inf samples."""
    bad = ~np.isfinite(data).all(axis=-1)
    if bad.any():
        names = [ch_names[i] for i in np.flatnonzero(bad)]
        raise DataFileError(
            f"{path}: non-finite samples (NaN/inf) in channels {names}. "
            "Mark them bad and interpolate (raw.info['bads'] + raw.interpolate_bads()) or drop them."
        )
