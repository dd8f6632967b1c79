"""EEG channel names: 10-05 spellings, the old 10-20 names (T3 → T7…), the label affixes recorders add,
and MNE's standard 10-05 montage (built once per process)."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from functools import lru_cache

logger = logging.getLogger("neurokit")


#: Old 10-20 names → their 10-10/10-05 equivalents (Oostenveld & Praamstra 2001; ACNS 2006).
OLD_TO_NEW = {"T3": "T7", "T4": "T8", "T5": "P7", "T6": "P8"}


#: Prefixes and suffixes that EEG systems glue to electrode names.
_PREFIX = re.compile(r"^(EEG[\s_-]*)", re.IGNORECASE)


_SUFFIX = re.compile(r"([\s_-]+(REF|LE|AR|AVG|A1|A2|M1|M2|CAR))$", re.IGNORECASE)


_REFERENCE_SITES = {"A1", "A2", "M1", "M2"}


def montage_1005():
    """MNE's template 10-05 montage, as a fresh copy of one built once per process.

    MNE 1.13 names it ``colin27_1005``; older versions ``standard_1005``.

    Returns
    -------
    montage : mne.channels.DigMontage
        The 345 electrode positions of the 10-05 system and the fiducials; the caller may modify it.

    Examples
    --------
    >>> montage = montage_1005()  # doctest: +SKIP
    >>> "Cz" in montage.ch_names  # doctest: +SKIP
    True
    """
    return _montage_1005().copy()


@lru_cache(maxsize=1)
def _montage_1005():
    import mne

    builtin = mne.channels.get_builtin_montages()
    return mne.channels.make_standard_montage("colin27_1005" if "colin27_1005" in builtin else "standard_1005")


def montage_for(ch_names):
    """The part of :func:`montage_1005` that holds only the electrodes among ``ch_names`` (and the fiducials).

    ``raw.set_montage`` gives the same positions and digitisation points as with the whole montage
    (``on_missing="ignore"``), without copying and transforming its 345 electrodes for every file. Subsets are
    cached per channel list; each call returns a fresh copy.

    Parameters
    ----------
    ch_names : sequence of str
        Channel names in their 10-05 spelling (see :func:`normalize_ch_name`); names with no 10-05 position are
        left out of the montage.

    Returns
    -------
    montage : mne.channels.DigMontage
        The fiducials and the positions of the listed electrodes, in the template's order.

    Examples
    --------
    >>> montage_for(["Cz", "Fz", "not-a-channel"]).ch_names
    ['Fz', 'Cz']
    """
    return _montage_for(tuple(ch_names)).copy()


@lru_cache(maxsize=16)
def _montage_for(ch_names: tuple[str, ...]):
    import mne
    from mne.io.constants import FIFF

    full = _montage_1005()
    eeg = [d for d in full.dig if d["kind"] == FIFF.FIFFV_POINT_EEG]
    keep = [i for i, name in enumerate(full.ch_names) if name in set(ch_names)]
    other = [d for d in full.dig if d["kind"] != FIFF.FIFFV_POINT_EEG]
    return mne.channels.DigMontage(dig=other + [eeg[i] for i in keep], ch_names=[full.ch_names[i] for i in keep])


@lru_cache(maxsize=1)
def _standard_1005() -> dict[str, str]:
    return {n.upper(): n for n in montage_1005().ch_names}


def strip_affixes(label: str) -> str:
    """A channel label without its ``EEG`` prefix, reference suffix (``-REF``, ``-LE``, ``-A1``…) and trailing dots.

    Parameters
    ----------
    label : str
        Label as stored in the file.

    Returns
    -------
    str
        The electrode part of the label, upper-cased.

    Examples
    --------
    >>> strip_affixes("EEG T3-REF"), strip_affixes("Fc5."), strip_affixes("C4_LE")
    ('T3', 'FC5', 'C4')
    """
    return _SUFFIX.sub("", _PREFIX.sub("", label.strip().rstrip(". "))).upper()


_BIPOLAR = re.compile(r"^(?:EEG[\s_-]*)?([A-Za-z][A-Za-z0-9']*)\s*-\s*([A-Za-z][A-Za-z0-9']*)\.*$", re.IGNORECASE)


def is_bipolar(label: str) -> bool:
    """Whether a channel label names a bipolar derivation between two electrodes.

    ``"Fp1-F7"``, ``"EEG T3-T5"`` and ``"A2-A1"`` are bipolar; one electrode against a reference (``"C3-A2"``,
    ``"Fp1-REF"``, read as ``C3`` and ``Fp1``) is not.

    Parameters
    ----------
    label : str
        Label as stored in the file.

    Returns
    -------
    bool
        True when both sides of the ``-`` are electrodes (10-05 positions or reference sites) and the whole label
        is not itself a 10-05 position.

    Examples
    --------
    >>> is_bipolar("Fp1-F7"), is_bipolar("EEG C3-REF"), is_bipolar("C3-A2"), is_bipolar("A2-A1")
    (True, False, False, True)
    """
    m = _BIPOLAR.match(label.strip())
    if not m or normalize_ch_name(label)[1]:
        return False
    return all(normalize_ch_name(side)[1] for side in m.groups())


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

    Examples
    --------
    >>> normalize_ch_name("Fc5."), normalize_ch_name("EEG T3-REF"), normalize_ch_name("ECG")
    (('FC5', True), ('T7', True), ('ECG', False))
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
    """What :func:`~neurokit.io.read_eeg` did to the channel labels of one file.

    Attributes
    ----------
    renamed : dict of str to str
        Original label → its 10-05 spelling, for the labels that changed.
    aliases : dict of str to str
        10-10 name → the old 10-20 name the file used (``"T7"`` → ``"T3"``).
    nonstandard : list of str
        Labels with no 10-05 position (kept as they are).
    """

    renamed: dict[str, str] = field(default_factory=dict)  # original → 10-05
    aliases: dict[str, str] = field(default_factory=dict)  # 10-10 name → old 10-20 name (T7 → T3)
    nonstandard: list[str] = field(default_factory=list)  # labels with no 10-05 position
