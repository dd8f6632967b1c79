"""CBraMod's EEG preprocessing recipe and the cut into ``(channels, n_patches, 200)`` patch tensors.

The recipe (Wang et al., CBraMod, ICLR 2025, §4 and appendix): band-pass 0.3–75 Hz, notch at the line
frequency, resample to 200 Hz, divide µV by 100, 1-s patches of 200 samples, windows rejected when any
sample exceeds an amplitude bound. Filtering and resampling are MNE's (FIR, ``firwin``; polyphase
resampling). A dataset's parameters live in its data card and are written into every store.
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from .._errors import ConfigError, DataFileError

logger = logging.getLogger("neurokit")

PATCH_SIZE = 200
TARGET_SFREQ = 200.0


@dataclass
class EEGRecipe:
    """Preprocessing parameters of one EEG dataset (from its data card's ``preprocessing`` block).

    Attributes
    ----------
    sfreq : float
        Output sampling rate in Hz (200 for CBraMod: one patch = 1 s).
    l_freq, h_freq : float | None
        Band-pass edges in Hz; ``None`` disables that edge. ``h_freq`` is lowered to 0.9 × Nyquist of the
        recording when it lies above 0.95 × Nyquist (a warning says so).
    line_freq : float | None
        Notch frequency in Hz (50 or 60); ``None`` for no notch. Harmonics below Nyquist are notched too.
    reference : str | None
        ``"average"`` for the common average reference, or ``None`` to keep the recorded reference.
    scale : float
        Factor applied to volts: ``1e4`` gives units of 100 µV (µV / 100), CBraMod's input unit.
    window_s : float
        Window length in seconds (a whole number of patches).
    stride_s : float | None
        Hop between sliding windows (continuous data); ``None`` = ``window_s``.
    reject_uv : float | None
        Drop a window when any |sample| exceeds this many µV (after filtering); ``None`` keeps all.
    crop_start_s, crop_end_s : float
        Seconds dropped at the start and at the end of each recording before windowing.
    channels : list[str] | None
        10-05 labels to keep, in this order; ``None`` keeps every EEG channel in file order.
    events : dict[str, int] | None
        Annotation description → class index. Windows start at each matching annotation's onset.
        ``None`` means continuous sliding windows (pretraining).
    min_sfreq : float
        Recordings sampled below this rate (Hz) are refused: their band would be a small part of what
        the model sees at 200 Hz. Default 64 Hz (EEG rarely comes slower; EEGMMIDB has 128 and 160 Hz).
    """

    sfreq: float = TARGET_SFREQ
    l_freq: float | None = 0.3
    h_freq: float | None = 75.0
    line_freq: float | None = 60.0
    reference: str | None = None
    scale: float = 1e4
    window_s: float = 4.0
    stride_s: float | None = None
    reject_uv: float | None = None
    crop_start_s: float = 0.0
    crop_end_s: float = 0.0
    channels: list[str] | None = None
    events: dict[str, int] | None = None
    min_sfreq: float = 64.0

    def __post_init__(self) -> None:
        if self.sfreq != TARGET_SFREQ:
            logger.warning("sfreq=%s: CBraMod expects 200 Hz patches", self.sfreq)
        n = self.window_s * self.sfreq / PATCH_SIZE
        if self.window_s <= 0 or abs(n - round(n)) > 1e-9:
            raise ConfigError(
                f"window_s={self.window_s} is not a whole number of {PATCH_SIZE}-sample patches at "
                f"{self.sfreq} Hz; use a multiple of {PATCH_SIZE / self.sfreq:g} s"
            )
        if self.reference not in (None, "average"):
            raise ConfigError(f"reference={self.reference!r}: allowed values are None and 'average'")
        if self.l_freq is not None and self.h_freq is not None and self.l_freq >= self.h_freq:
            raise ConfigError(f"l_freq={self.l_freq} must be below h_freq={self.h_freq}")

    @property
    def n_patches(self) -> int:
        return int(round(self.window_s * self.sfreq / PATCH_SIZE))

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> "EEGRecipe":
        d = dict(d or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"unknown preprocessing keys {unknown}; allowed: {sorted(known)}")
        return cls(**d)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Windows:
    """Patch tensors cut from one recording.

    Attributes
    ----------
    patches : np.ndarray, float32, shape ``(n_windows, n_channels, n_patches, 200)``
        In units of 100 µV.
    labels : np.ndarray, int64, shape ``(n_windows,)``
        Class index per window (-1 for unlabelled windows).
    onsets : np.ndarray, float64, shape ``(n_windows,)``
        Window start in seconds from the start of the recording.
    ch_names : list[str]
    n_rejected : int
        Windows dropped by the amplitude bound.
    """

    patches: np.ndarray
    labels: np.ndarray
    onsets: np.ndarray
    ch_names: list[str]
    n_rejected: int = 0
    warnings: list[str] = field(default_factory=list)


def preprocess_raw(raw, recipe: EEGRecipe, *, source: str | None = None):
    """Apply the filtering part of ``recipe`` to ``raw`` in place and return it.

    Steps: interpolate the channels marked bad (``raw.info["bads"]``, e.g. from a BIDS ``channels.tsv``)
    that the recipe keeps; pick/reorder ``recipe.channels``; load; reject non-finite data; average
    reference; band-pass; notch; resample to ``recipe.sfreq``. The data stay in volts;
    :func:`make_windows` scales them. The interpolated channels are listed in
    ``raw.info["temp"]["neurokit_interpolated"]``.

    Raises
    ------
    ChannelMismatchError
        A channel named in ``recipe.channels`` is missing from the recording.
    DataFileError
        NaN/inf samples, a sampling rate that leaves no room for the band (``l_freq`` above Nyquist), or
        a bad channel that cannot be interpolated (no position, or no good channel left).
    """
    from .._errors import ChannelMismatchError
    from ..io.eeg import check_finite

    source = source or raw.info.get("temp", {}).get("neurokit_source") or "recording"
    _interpolate_bads(raw, recipe, source)
    if recipe.channels:
        missing = [c for c in recipe.channels if c not in raw.ch_names]
        if missing:
            raise ChannelMismatchError(
                f"{source}: channels {missing} required by the recipe are missing "
                f"(file has {len(raw.ch_names)}: {raw.ch_names[:8]}…). Edit the card's channel list or "
                "interpolate the missing channels."
            )
        raw.pick(recipe.channels)  # also reorders to the recipe's order
    raw.load_data(verbose="error")
    # MNE holds float64 samples; we keep that one copy and filter it in place.
    check_finite(raw._data, raw.ch_names, source)
    flat = np.ptp(raw._data, axis=1) == 0
    if flat.all():
        raise DataFileError(f"{source}: every EEG channel is flat (constant); nothing to learn from")
    if flat.any():
        names = [raw.ch_names[i] for i in np.flatnonzero(flat)]
        warnings.warn(
            f"{source}: flat channel(s) {names} carry no signal; they are kept (after an average reference "
            "they hold minus the mean of the others). Mark them bad and interpolate "
            "(raw.info['bads'] + raw.interpolate_bads()) or drop them from the card's channel list",
            RuntimeWarning,
            stacklevel=2,
        )
    sf = raw.info["sfreq"]
    nyq = sf / 2.0
    if sf < recipe.min_sfreq:
        raise DataFileError(
            f"{source}: sampling rate {sf:g} Hz is too low for this recipe (minimum {recipe.min_sfreq:g} Hz; "
            f"band {recipe.l_freq}-{recipe.h_freq} Hz). Check the file's header, or lower min_sfreq in the card."
        )
    if recipe.reference == "average":
        raw.set_eeg_reference("average", projection=False, verbose="error")
    l_freq, h_freq = recipe.l_freq, recipe.h_freq
    if l_freq is not None and l_freq >= nyq:
        raise DataFileError(
            f"{source}: sampling rate {sf:g} Hz is too low for a {l_freq:g} Hz high-pass (Nyquist {nyq:g} Hz)"
        )
    if h_freq is not None and h_freq > 0.95 * nyq:
        new_h = round(0.9 * nyq, 2)
        msg = (
            f"{source}: upper band edge {h_freq:g} Hz is too close to Nyquist ({nyq:g} Hz at {sf:g} Hz); "
            f"using {new_h:g} Hz instead"
        )
        warnings.warn(msg, RuntimeWarning, stacklevel=2)
        h_freq = new_h
    try:
        if l_freq is not None or h_freq is not None:
            raw.filter(l_freq, h_freq, picks="all", verbose="error", n_jobs=1)
        if recipe.line_freq:
            freqs = np.arange(recipe.line_freq, nyq - 1.0, recipe.line_freq)
            if len(freqs):
                raw.notch_filter(freqs, picks="all", verbose="error")
        if abs(sf - recipe.sfreq) > 1e-6:
            raw.resample(recipe.sfreq, npad="auto", verbose="error")
    except ValueError as exc:  # MNE's filter design refuses bands that do not fit the rate or length
        raise DataFileError(
            f"{source}: filtering failed at {sf:g} Hz over {raw.n_times / sf:.1f} s ({exc}); "
            "the recording is too short or too slowly sampled for the recipe's band"
        ) from exc
    return raw


def _interpolate_bads(raw, recipe: EEGRecipe, source: str) -> None:
    """Channels marked bad are replaced by MNE's spherical-spline interpolation from the good ones
    (Perrin et al. 1989), so every file keeps the store's channel set; bad channels the recipe does not
    keep are simply dropped later by the channel pick."""
    bads = [b for b in raw.info["bads"] if b in raw.ch_names]
    keep = [b for b in bads if recipe.channels is None or b in recipe.channels]
    temp = dict(raw.info.get("temp") or {})
    temp["neurokit_interpolated"] = keep
    raw.info["temp"] = temp
    if not keep:
        raw.info["bads"] = []
        return
    if len(bads) >= len(raw.ch_names) - 2:
        raise DataFileError(f"{source}: {len(bads)} of {len(raw.ch_names)} channels are marked bad; too few good ones to interpolate from")
    no_pos = [b for b in keep if not np.isfinite(raw.info["chs"][raw.ch_names.index(b)]["loc"][:3]).all()
              or not np.any(raw.info["chs"][raw.ch_names.index(b)]["loc"][:3])]
    if no_pos:
        raise DataFileError(
            f"{source}: bad channel(s) {no_pos} have no sensor position to interpolate from; drop them "
            "from the card's channel list (preprocessing.channels / --channels)"
        )
    raw.load_data(verbose="error")
    raw.interpolate_bads(reset_bads=True, verbose="error")
    raw.info["bads"] = []


def make_windows(raw, recipe: EEGRecipe, *, source: str | None = None) -> Windows:
    """Cut a preprocessed recording into ``(C, N, 200)`` patch tensors in units of 100 µV.

    Event windows (``recipe.events`` set) start at each matching annotation's onset and last
    ``window_s``; windows running past the end are dropped. Otherwise windows slide by ``stride_s``
    between ``crop_start_s`` and the end minus ``crop_end_s``.

    Raises
    ------
    DataFileError
        The usable part of the recording is shorter than one window, or no annotation matches the
        card's events.
    """
    source = source or raw.info.get("temp", {}).get("neurokit_source") or "recording"
    sf = raw.info["sfreq"]
    win = int(round(recipe.window_s * sf))
    n_times = raw.n_times
    data = raw._data  # (C, T) float64, volts
    if recipe.events is not None:
        import mne

        present = {str(d) for d in raw.annotations.description}
        event_id = {k: v for k, v in recipe.events.items() if k in present}
        starts, labels = [], []
        if event_id:
            ev, _ = mne.events_from_annotations(raw, event_id=event_id, verbose="error")
            starts = [int(s) - raw.first_samp for s in ev[:, 0]]
            labels = [int(v) for v in ev[:, 2]]
        if not starts:
            found = sorted({str(a["description"]) for a in raw.annotations})
            raise DataFileError(
                f"{source}: no annotation matches the card's events {sorted(recipe.events)} "
                f"(annotations found: {found or 'none'})"
            )
    else:
        first = int(round(recipe.crop_start_s * sf))
        last = n_times - int(round(recipe.crop_end_s * sf))
        hop = int(round((recipe.stride_s or recipe.window_s) * sf))
        starts = list(range(first, last - win + 1, hop))
        labels = [-1] * len(starts)
        if not starts:
            usable = max(0, last - first) / sf
            raise DataFileError(
                f"{source}: recording too short: {usable:.2f} s usable after cropping, one window needs "
                f"{recipe.window_s:g} s. Lower window_s or crop less."
            )
    keep = [(s, y) for s, y in zip(starts, labels) if 0 <= s and s + win <= n_times]
    dropped_edge = len(starts) - len(keep)
    if not keep:
        raise DataFileError(
            f"{source}: recording too short ({n_times / sf:.2f} s) for any {recipe.window_s:g}-s window"
        )
    C = data.shape[0]
    out = np.empty((len(keep), C, recipe.n_patches, PATCH_SIZE), dtype=np.float32)
    ok = np.ones(len(keep), dtype=bool)
    bound = None if recipe.reject_uv is None else recipe.reject_uv * 1e-6
    for i, (s, _) in enumerate(keep):
        seg = data[:, s : s + win]
        if bound is not None and np.abs(seg).max() > bound:
            ok[i] = False
            continue
        out[i] = (seg * recipe.scale).reshape(C, recipe.n_patches, PATCH_SIZE)
    notes = []
    if dropped_edge:
        notes.append(f"{dropped_edge} window(s) ran past the end of the recording and were dropped")
    for n in notes:
        warnings.warn(f"{source}: {n}", RuntimeWarning, stacklevel=2)
    return Windows(
        patches=out[ok],
        labels=np.asarray([y for (_, y) in keep], dtype=np.int64)[ok],
        onsets=np.asarray([s / sf for (s, _) in keep], dtype=np.float64)[ok],
        ch_names=list(raw.ch_names),
        n_rejected=int((~ok).sum()),
        warnings=notes,
    )


def load_windows(path: str | Path, recipe: EEGRecipe) -> Windows:
    """Read, preprocess and window one file: :func:`~neurokit.io.read_eeg` → :func:`preprocess_raw` →
    :func:`make_windows`."""
    from ..io.eeg import read_eeg

    raw = read_eeg(path)
    preprocess_raw(raw, recipe, source=str(path))
    return make_windows(raw, recipe, source=str(path))
