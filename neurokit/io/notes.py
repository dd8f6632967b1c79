"""What neurokit notes on an MNE ``Raw`` while reading and preprocessing it, typed.

Readers (:func:`~neurokit.io.eeg.read_eeg`, the BIDS and clinical readers) and the EEG preprocessing
record facts about a recording that MNE has no field for: where it came from, how its channels were
renamed, what was applied to it, its stim-channel events and its contiguous pieces. They live in MNE's
free-form ``raw.info["temp"]`` dict (copied with the ``Info`` through ``Raw.copy``, ``crop``, ``resample``…),
one ``neurokit_<field>`` key per field of :class:`RawNotes`. Read them with :func:`raw_notes` and change
them with :func:`set_raw_notes`; no other code spells the keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from neurokit.geometry.channels import ChannelRenames

#: prefix of the ``raw.info["temp"]`` key of each :class:`RawNotes` field
PREFIX = "neurokit_"


@dataclass(frozen=True)
class RawNotes:
    """neurokit's notes on one recording (an MNE ``Raw``).

    Attributes
    ----------
    source : str | None
        The file the recording was read from (named in errors and warnings); ``None`` for data made in
        memory.
    renames : ChannelRenames | None
        How channel labels became 10-05 names (``renamed``: original → new; ``aliases``: new → old 10-20
        name).
    applied : dict
        What reading and preprocessing did, in order: original ``sfreq`` (Hz), ``encoding``,
        ``units_assumed``, ``bad_channels``, ``gaps``, ``reference``, ``resampled`` ``[from, to]`` (Hz),
        ``l_freq``/``h_freq``/``notch_hz`` (Hz), ``interpolated_channels``… Written into a store's
        ``sources``.
    stim : dict | None
        Events of the file's stim channel: ``{"onsets": [s, …], "codes": [int, …]}``.
    segments : list | None
        Contiguous pieces of a file with gaps (EDF+D/BDF+D): ``[(start_s, true_start_s, duration_s), …]``
        (s, on the joined recording and in the file's own time); ``None`` for one piece.
    """

    source: str | None = None
    renames: ChannelRenames | None = None
    applied: dict = field(default_factory=dict)
    stim: dict | None = None
    segments: list | None = None

    def source_or(self, default: str = "recording") -> str:
        """:attr:`source`, or ``default`` for a recording of unknown origin."""
        return self.source or default


_FIELDS = tuple(f.name for f in fields(RawNotes))


def raw_notes(raw) -> RawNotes:
    """The :class:`RawNotes` of ``raw`` (empty ones for a ``Raw`` neurokit did not read).

    ``applied`` is a copy: changing it does not change ``raw``; use :func:`set_raw_notes`.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        Any recording.

    Returns
    -------
    RawNotes

    Examples
    --------
    >>> import mne, numpy as np
    >>> raw = mne.io.RawArray(np.zeros((1, 10)), mne.create_info(1, 100.0), verbose="error")
    >>> raw_notes(raw).source_or()
    'recording'
    """
    temp = raw.info.get("temp") or {}
    kw: dict[str, Any] = {name: temp.get(PREFIX + name) for name in _FIELDS}
    kw["applied"] = dict(kw["applied"] or {})
    return RawNotes(**kw)


def set_raw_notes(raw, notes: RawNotes | None = None, **changes: Any) -> RawNotes:
    """Record ``notes`` (default: those already on ``raw``) with ``changes`` applied on ``raw``; returns them.

    Other entries of ``raw.info["temp"]`` are kept. A field set to ``None`` is left out of it.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording; its ``info["temp"]`` is changed.
    notes : RawNotes or None
        The notes to record; ``None``: those on ``raw``.
    **changes
        Fields of :class:`RawNotes` to set (``source=…``, ``applied=…``).

    Returns
    -------
    RawNotes
        What ``raw`` now carries.

    Examples
    --------
    >>> import mne, numpy as np
    >>> raw = mne.io.RawArray(np.zeros((1, 10)), mne.create_info(1, 100.0), verbose="error")
    >>> set_raw_notes(raw, source="a.edf").source, raw_notes(raw).source
    ('a.edf', 'a.edf')

    Raises
    ------
    TypeError
        A change names no field of :class:`RawNotes`.
    """
    unknown = sorted(set(changes) - set(_FIELDS))
    if unknown:
        raise TypeError(f"set_raw_notes: unknown field(s) {unknown}; RawNotes has {list(_FIELDS)}")
    notes = replace(notes if notes is not None else raw_notes(raw), **changes)
    temp = {
        k: v
        for k, v in (raw.info.get("temp") or {}).items()
        if not k.startswith(PREFIX) or k[len(PREFIX) :] not in _FIELDS
    }
    for name in _FIELDS:
        v = getattr(notes, name)
        if v is not None:
            temp[PREFIX + name] = v
    raw.info["temp"] = temp
    return notes
