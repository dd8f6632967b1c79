"""CBraMod's EEG preprocessing recipe and the cut into ``(channels, n_patches, 200)`` patch tensors.

The recipe (Wang et al., CBraMod, ICLR 2025, §4 and appendix): filter, notch at the line frequency,
resample to 200 Hz, divide µV by 100, 1-s patches of 200 samples, windows rejected when any sample exceeds
an amplitude bound. The filter and the order differ per dataset: TUEG pretraining resamples first, then
band-passes 0.3–75 Hz; PhysioNet-MI takes the average reference, a 0.3 Hz high-pass only and the notch,
then resamples. Filtering and resampling are MNE's (FIR, ``firwin``; MNE's resampling). A dataset's
parameters live in its data card and are written into every store, with what was applied per file.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from neurokit._utils.errors import ChannelMismatchError, DataFileError
from neurokit.cards.recipes import PATCH_SIZE, EEGRecipe
from neurokit.io.headers import MAX_EEG_VOLTS, short_list
from neurokit.io.notes import raw_notes, set_raw_notes
from neurokit.preprocessing.eeg.eog import drop_channels, eog_typed, keep_eeg_and_eog, remove_eog

logger = logging.getLogger("neurokit")


class RecordingDropped(DataFileError):
    """A readable recording that the recipe leaves out by rule (e.g. shorter than ``min_duration_s``).

    Preparers skip such recordings and count them; other :class:`~neurokit._utils.errors.DataFileError` are
    faults of the file.

    Parameters
    ----------
    message : str
        Names the file and the rule.
    """


@dataclass
class Windows:
    """Patch tensors cut from one recording.

    Attributes
    ----------
    patches : np.ndarray, float32, shape ``(n_windows, n_channels, n_patches, 200)``
        In units of 100 µV.
    labels : np.ndarray, int64, shape ``(n_windows,)``
        Class index per window (-1 for unlabelled windows); float64 regression targets when the matching
        annotations read ``"<event>=<number>"`` (:func:`annotation_targets`).
    onsets : np.ndarray, float64, shape ``(n_windows,)``
        Window start in seconds from the start of the recording.
    ch_names : list[str]
    n_rejected : int
        Windows dropped by the amplitude bound.
    n_bad_annotation : int
        Windows dropped because they overlap a ``BAD…`` annotation (``recipe.reject_by_annotation``).
    """

    patches: np.ndarray
    labels: np.ndarray
    onsets: np.ndarray
    ch_names: list[str]
    n_rejected: int = 0
    warnings: list[str] = field(default_factory=list)
    n_bad_annotation: int = 0


def select_channels(raw, recipe: EEGRecipe, source: str, applied: dict) -> None:
    """The steps of :func:`preprocess_raw` before any sample is read, in place.

    The recipe's minimum duration, bad channels dropped, ``recipe.channels`` picked in the recipe's order; an
    average reference refuses bipolar channels. ``raw`` need not be loaded.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording as read; modified in place.
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    source : str
        The recording's name (its file), for error messages.
    applied : dict
        The recording's record of what was applied (``sfreq_orig``, ``dropped_bad``…); updated in place.

    Raises
    ------
    RecordingDropped
        The recording is shorter than ``recipe.min_duration_s``.
    ChannelMismatchError
        A channel of ``recipe.channels`` is missing from the recording.
    DataFileError
        A channel of ``recipe.channels`` is marked bad, or bipolar channels under an average reference.

    Examples
    --------
    >>> import mne
    >>> from neurokit.cards.recipes import EEGRecipe
    >>> x = np.random.default_rng(0).normal(size=(2, 2000)) * 1e-5  # 10 s of 10 µV noise
    >>> raw = mne.io.RawArray(x, mne.create_info(["Cz", "Pz"], 200.0, "eeg"), verbose=False)
    >>> applied = {}
    >>> select_channels(raw, EEGRecipe(channels=["Pz"]), "rec.edf", applied)
    >>> raw.ch_names, applied
    (['Pz'], {'sfreq_orig': 200.0})
    """

    sf = raw.info["sfreq"]
    applied.setdefault("sfreq_orig", sf)
    duration = raw.n_times / sf
    if duration < recipe.min_duration_s:
        raise RecordingDropped(
            f"{source}: {duration:.3f} s long, under the recipe's min_duration_s ({recipe.min_duration_s:g} s); dropped"
        )
    bads = [c for c in raw.info["bads"] if c in raw.ch_names]
    if bads:
        needed = [c for c in bads if recipe.channels and c in recipe.channels]
        if needed:
            raise DataFileError(
                f"{source}: channels {short_list(needed)} required by the recipe are marked bad "
                "(uncalibrated, or bad in the file); leave them out of the channels (channels=, or the card's channel "
                "list), or leave the file out (skip_bad=True)"
            )
        if len(bads) == len(raw.ch_names):
            raise DataFileError(
                f"{source}: every channel is marked bad (uncalibrated, or bad in the file): "
                f"{short_list(bads)}; nothing to store"
            )
        raw.drop_channels(bads)
        applied["dropped_channels"] = bads
    if recipe.channels:
        missing = [c for c in recipe.channels if c not in raw.ch_names]
        if missing:
            from neurokit.geometry.channels import OLD_TO_NEW

            old = {new: f"{new} ({o} in old 10-20 names)" for o, new in OLD_TO_NEW.items()}
        if missing and recipe.missing_channels == "skip":
            raise RecordingDropped(
                f"{source}: no channel {', '.join(old.get(c, c) for c in missing)} of the recipe's channels; left "
                "out (missing_channels: "
                "skip) and listed in the store's dropped recordings"
            )
        if missing:
            raise ChannelMismatchError(
                f"{source}: channels {short_list([old.get(c, c) for c in missing])} required by the recipe are missing "
                f"(file has {len(raw.ch_names)}: {raw.ch_names[:8]}…). Choose channels the files have (channels=, or "
                "the card's channel list), leave such files out (skip_bad=True, or the recipe's missing_channels: skip); "
                "a channel the file holds but not as EEG (ECG, EOG, one at another rate than the EEG) is left out "
                "when read: keep every channel with the card's reading: {eeg_only: false}"
            )
        # also reorders to the recipe's order; EOG channels stay for the recipe's eog_removal (dropped after it)
        raw.pick(list(recipe.channels) + (eog_typed(raw) if recipe.eog_removal != "none" else []))
    if recipe.reference == "average":
        from neurokit.geometry.channels import is_bipolar

        bipolar = [c for c in raw.ch_names if is_bipolar(c)]
        if bipolar:
            raise DataFileError(
                f"{source}: channels {short_list(bipolar)} are bipolar derivations (two electrodes in one label); the "
                "recipe's average reference would subtract their mean as if they were electrodes against one "
                "reference. Set reference: null in the card, or keep referential channels only (its channels list)"
            )


def check_amplitudes(maxs: np.ndarray, mins: np.ndarray, ch_names: list[str], source: str) -> None:
    """Warn about flat channels and peaks above 1 V, from each channel's largest and smallest sample.

    Parameters
    ----------
    maxs, mins : ndarray, shape (n_channels,)
        Largest and smallest sample of each channel, in V.
    ch_names : list of str
        The channels, in the same order.
    source : str
        The recording's name (its file), for error messages.

    Raises
    ------
    DataFileError
        Every channel is flat.

    Warns
    -----
    RuntimeWarning
        Some channels flat (kept), or peaks above 1 V (check the file's units).

    Examples
    --------
    >>> check_amplitudes(np.array([1e-4, 2e-4]), np.array([-1e-4, -2e-4]), ["C3", "C4"], "rec.edf")
    >>> check_amplitudes(np.zeros(2), np.zeros(2), ["C3", "C4"], "rec.edf")
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.DataFileError: rec.edf: every EEG channel is flat (constant); nothing to learn from
    """
    flat = (maxs - mins) == 0
    if flat.all():
        raise DataFileError(f"{source}: every EEG channel is flat (constant); nothing to learn from")
    if flat.any():
        names = [ch_names[i] for i in np.flatnonzero(flat)]
        warnings.warn(
            f"{source}: flat channel(s) {short_list(names)} carry no signal; they are kept (after an average "
            "reference they hold minus the mean of the others). Leave them out with channels= (the channels to keep) "
            "or the card's recipe (exclude_channels)",
            RuntimeWarning,
            stacklevel=3,
        )
    peak = np.maximum(maxs, -mins)
    loud = [ch_names[i] for i in np.flatnonzero(peak > MAX_EEG_VOLTS)]
    if loud:
        warnings.warn(
            f"{source}: channels {short_list(loud)} reach {peak.max():.3g} V, implausible for EEG "
            "(check the file's units and physical ranges)",
            RuntimeWarning,
            stacklevel=3,
        )


#: robust RMS (V) of scalp EEG outside which a recording's units are suspect: 0.1 µV … 5 mV
PLAUSIBLE_RMS_V = (1e-7, 5e-3)
#: at most this many evenly spaced samples per channel are read for :func:`check_units` (a plausibility range 50×
#: wide either side needs no more: the check costs about 1 % of preparing a recording)
UNITS_SAMPLES = 1_000
#: the share of largest deviations :func:`robust_rms` leaves out (artefacts, jumps)
UNITS_TRIM = 0.01
#: the RMS of a Gaussian's deviations with the largest 1 % left out, in its σ: ``sqrt(1 - 2 z φ(z) / 0.99)``,
#: z the 99.5th percentile
_TRIMMED_GAUSSIAN_RMS = 0.96164


def robust_rms(x: np.ndarray) -> np.ndarray:
    """Per channel of ``x``: 1.4826 × the median absolute deviation from the median (the RMS of a Gaussian signal,
    unmoved by artefacts and flat stretches) of at most :data:`UNITS_SAMPLES` evenly spaced samples; where that is
    0 (a channel that is constant most of the time: coarsely quantised, e.g. volts written under a µV label and read
    back as a few digital steps around 0), the RMS about the median with the largest :data:`UNITS_TRIM` of
    deviations left out, scaled so that a Gaussian channel would give its σ. Only a flat channel gives 0.

    Parameters
    ----------
    x : ndarray, shape (n_channels, n_times)
        Samples in volts as read.

    Returns
    -------
    ndarray, shape (n_channels,)
        Volts.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> round(float(robust_rms(rng.normal(0, 2e-5, (1, 100_000)))[0] * 1e6), 1)  # 20 µV RMS
    19.2
    >>> q = np.round(rng.normal(0, 0.3, (1, 100_000))) * 3e-11  # mostly 0, a few steps of 3e-11 V
    >>> float(robust_rms(q)[0]) > 0
    True
    """
    return _rms_and_constant(_units_sample(x))[0]


def _units_sample(x: np.ndarray) -> np.ndarray:
    """At most :data:`UNITS_SAMPLES` evenly spaced samples of each channel, as float32 (ample for a range 50× wide
    either side, and half the cost of float64's medians): what the units check reads."""
    return np.asarray(x[:, :: max(1, x.shape[1] // UNITS_SAMPLES)], dtype=np.float32)


def _rms_and_constant(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`robust_rms` of the sample ``y`` (:func:`_units_sample`), and which channels are constant most of the
    time (median absolute deviation 0)."""
    dev = np.abs(y - np.median(y, axis=1, keepdims=True))
    out = 1.4826 * np.median(dev, axis=1)
    zero = out == 0
    if zero.any():
        d = dev[zero]
        keep = max(1, int(np.ceil(d.shape[1] * (1 - UNITS_TRIM))))
        if keep < d.shape[1]:
            d = np.partition(d, keep - 1, axis=1)[:, :keep]
        out[zero] = np.sqrt(np.mean(d**2, axis=1)) / _TRIMMED_GAUSSIAN_RMS
    return out, zero


def _below_resolution(y: np.ndarray) -> np.ndarray:
    """Channels of the sample ``y`` (:func:`_units_sample`) that take at most 4 distinct values spanning under 1 µV: a
    signal quantised to a few steps far below scalp EEG's amplitude (a flat channel is not one of them; jumps of a
    disconnected channel span far more)."""
    span = y.max(axis=1) - y.min(axis=1)
    out = (span > 0) & (span < 1e-6)
    if out.any():  # only channels whose whole span is below 1 µV are sorted to count their levels
        z = np.sort(y[out], axis=1)
        levels = (np.diff(z, axis=1) != 0).sum(axis=1) + 1
        out[out] = (levels >= 2) & (levels <= 4)
    return out


def check_units(x: np.ndarray, ch_names: list[str], source: str, *, warn: bool = True) -> str | None:
    """Warn when channels' amplitudes lie outside the range of scalp EEG, :data:`PLAUSIBLE_RMS_V`.

    The robust RMS (:func:`robust_rms`, in V as read) is checked for the recording as a whole (the median over
    its non-flat channels), and for a minority of channels ≥ 100× off that median and outside the range. A
    header whose units lie (µV labelled on volts, mV on µV, nV on µV) is read faithfully, and only the amplitude
    shows it. The warning names the file, the channels, the figure and the power of 1000 that would bring it into
    range.

    Parameters
    ----------
    x : ndarray, shape (n_channels, n_times)
        The samples as read, in V.
    ch_names : list of str
        The channels, in the same order.
    source : str
        The recording's name (its file), for error messages.
    warn : bool
        Issue the warning (else only return it).

    Returns
    -------
    str or None
        The warning's text, or None when the amplitudes are in range.

    Warns
    -----
    RuntimeWarning
        Amplitudes out of range (with ``warn=True``).

    Examples
    --------
    >>> check_units(np.random.default_rng(0).normal(size=(2, 2000)) * 1e-5, ["C3", "C4"], "x.edf") is None
    True
    >>> x = np.random.default_rng(0).normal(size=(2, 2000)) * 15.0  # 15 "V": volts read where µV were meant
    >>> check_units(x, ["C3", "C4"], "x.edf", warn=False).split(" µV")[0]
    'x.edf: C3, C4 have a robust RMS of 1.56e+07'
    """
    y = _units_sample(x)
    rms, mostly_constant = _rms_and_constant(y)
    coarse = _below_resolution(y)
    if coarse.any():  # a few digital steps, each far below EEG's amplitude: the signal is under the file's resolution
        names = [ch_names[i] for i in np.flatnonzero(coarse)]
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        msg = (
            f"{source}: {shown} {'takes' if len(names) == 1 else 'take'} only a few distinct values, within "
            f"{float(np.max(rms[coarse])) * 1e6:.2g} µV: the signal lies below the file's resolution, as when volts are "
            "written under a µV label with a wide physical range (a unit 1e6 times larger than the header states). "
            "Check the header's physical dimension and range; read them in their true unit with units=UNIT and "
            "override_units=True (the card's reading: {units: UNIT, override_units: true})"
        )
        if warn:
            warnings.warn(msg, RuntimeWarning, stacklevel=3)
        return msg
    # a channel constant most of the time says a unit too small (quantised to a few steps) only when its steps are
    # tiny; large jumps on it (a disconnected or saturating channel) are no unit's fault
    live = (rms > 0) & ~(mostly_constant & (rms >= PLAUSIBLE_RMS_V[0]))
    if not live.any():
        return None
    lo, hi = PLAUSIBLE_RMS_V
    off = live & ((rms < lo) | (rms > hi))
    level = float(np.median(rms[live]))
    minority = lo <= level <= hi
    if minority:  # most channels plausible: a minority far out (≥ 100× off the others) is named too
        off &= (rms < level / 100) | (rms > level * 100)
        if not off.any():
            return None
        level = float(np.median(rms[off]))
    out = [ch_names[i] for i in np.flatnonzero(off)]
    k = int(np.round(np.log10(20e-6 / level) / 3))  # the power of 1000 that brings it nearest 20 µV
    fixed = level * 1000.0**k
    shown = ", ".join(out[:8]) + (f" and {len(out) - 8} more" if len(out) > 8 else "")
    examples = {
        3: "V labelled nV", 2: "V labelled µV", 1: "V labelled mV, or mV labelled µV",
        -1: "µV labelled mV, or mV labelled V", -2: "µV labelled V", -3: "nV labelled V",
    }  # fmt: skip
    why = (
        f"the samples are likely in a unit 1e{abs(3 * k)} times {'larger' if k > 0 else 'smaller'} than the header "
        f"states ({examples.get(k, 'a unit prefix off')})"
    )
    msg = (
        f"{source}: {shown} {'has' if len(out) == 1 else 'have'} a robust RMS of {level * 1e6:.3g} µV, outside scalp "
        f"EEG's {lo * 1e6:g} µV – {hi * 1e3:g} mV; scaled by 1e{3 * k} it would be {fixed * 1e6:.3g} µV: {why}. Check "
        f"the header's physical dimension; the samples' true unit is the header's × 1e{3 * k} (e.g. V for µV × 1e6). "
        + (
            f"Only these channels: read them in it with the card's reading: {{units: {{{out[0]}: UNIT, …}}, "
            "override_units: true}, or leave them out (channels=)"
            if minority
            else "Read them in it with units=UNIT and override_units=True (the card's reading: {units: UNIT, "
            "override_units: true})"
        )
    )
    if warn:
        warnings.warn(msg, RuntimeWarning, stacklevel=3)
    return msg


def check_rate(sf: float, recipe: EEGRecipe, source: str) -> None:
    """Refuse a recording whose sampling rate is below the recipe's ``min_sfreq``.

    Parameters
    ----------
    sf : float
        The recording's sampling rate, in Hz.
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    source : str
        The recording's name (its file), for error messages.

    Raises
    ------
    DataFileError
        ``sf`` below ``recipe.min_sfreq`` (naming the rate, the minimum and the band).

    Examples
    --------
    >>> from neurokit.cards.recipes import EEGRecipe
    >>> check_rate(200.0, EEGRecipe(), "rec.edf")
    """
    if sf < recipe.min_sfreq:
        raise DataFileError(
            f"{source}: sampling rate {sf:g} Hz is too low for this recipe (minimum {recipe.min_sfreq:g} Hz; "
            f"band {recipe.l_freq}-{recipe.h_freq} Hz). Check the file's header, or lower min_sfreq in the card."
        )


def preprocess_raw(raw, recipe: EEGRecipe, *, source: str | None = None, fft_dtype=np.float64, on_samples=None):
    """Apply the filtering part of ``recipe`` to ``raw`` and return the processed recording.

    The result is ``raw`` itself, filtered and resampled in place as MNE's methods do (a recording MNE resamples
    itself — joined runs, stim channels — may come back as a new object: use the return value). Filters and
    resampling are MNE's defaults (FIR ``firwin``, FFT resampling), applied to blocks of channels at once
    (:mod:`neurokit.preprocessing.eeg.filtering`; equal to ``Raw.filter`` / ``notch_filter`` / ``resample`` to
    float64 rounding).

    Steps: drop channels marked bad (uncalibrated ones, see :func:`~neurokit.io.read_eeg`); pick/reorder
    ``recipe.channels``; load; reject non-finite data; warn about implausible amplitudes (> 1 V); average
    reference; band-pass; notch; resample to ``recipe.sfreq`` (first, when ``recipe.resample_first``); EOG
    removal (``recipe.eog_removal``, :func:`~neurokit.preprocessing.eeg.eog.remove_eog`; EOG channels are read
    for it and dropped after it); ``recipe.exclude_channels`` dropped. The data stay in V; :func:`make_windows`
    scales them. What was applied (the band edges used, the original rate, dropped channels) is added to the
    recording's notes' ``applied`` (:func:`~neurokit.io.notes.raw_notes`).

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording as read (:func:`~neurokit.io.read_eeg`), loaded or not.
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    source : str, optional
        The recording's name (its file), for error messages; default the name ``raw`` was read under.
    fft_dtype : {numpy.float64, numpy.float32}
        Precision of the large FFTs of filtering and resampling. float32 is about twice as fast, within ~3e-6
        of the signal's RMS of MNE's result instead of ~1e-14; ``prepare`` uses it, as its stores hold float32
        windows (:data:`~neurokit.preprocessing.eeg.filtering.FFT_DTYPES`).
    on_samples : callable, optional
        ``on_samples(0, data)`` sees the samples as read (channels selected, loaded and checked, before the
        reference or any filter): ``prepare`` fingerprints them
        (:class:`~neurokit.preprocessing.duplicates.SignalAccumulator`).

    Returns
    -------
    mne.io.BaseRaw
        The processed recording, at ``recipe.sfreq`` Hz, in V.

    Raises
    ------
    ChannelMismatchError
        A channel named in ``recipe.channels`` is missing from the recording.
    RecordingDropped
        The recording is shorter than ``recipe.min_duration_s``.
    DataFileError
        NaN/inf samples, a channel of ``recipe.channels`` marked bad, or a sampling rate that leaves no
        room for the band (``l_freq`` above Nyquist).

    Examples
    --------
    >>> import mne
    >>> from neurokit.cards.recipes import EEGRecipe
    >>> x = np.random.default_rng(0).normal(size=(2, 2000)) * 1e-5  # 10 s of 10 µV noise
    >>> raw = mne.io.RawArray(x, mne.create_info(["Cz", "Pz"], 200.0, "eeg"), verbose=False)
    >>> out = preprocess_raw(raw, EEGRecipe(sfreq=100.0, h_freq=40.0))
    >>> out.info["sfreq"], int(out.n_times)
    (100.0, 1000)
    """
    from neurokit.io.eeg import check_finite

    notes = raw_notes(raw)
    source = source or notes.source_or()
    applied = notes.applied
    sf = raw.info["sfreq"]
    if recipe.eog_removal != "none":
        keep_eeg_and_eog(raw, source)
    select_channels(raw, recipe, source, applied)
    raw.load_data(verbose="error")
    # MNE holds float64 samples; we keep that one copy and filter it in place.
    maxs, mins = raw._data.max(axis=1), raw._data.min(axis=1)
    if not (np.isfinite(maxs).all() and np.isfinite(mins).all()):  # NaN or ±inf somewhere: name the channels
        check_finite(raw._data, raw.ch_names, source)
    if on_samples is not None:
        on_samples(0, raw._data)
    check_amplitudes(maxs, mins, raw.ch_names, source)
    if recipe.units_check != "off":  # a card's strict setting refuses what is otherwise a warning
        said = check_units(raw._data, raw.ch_names, source, warn=recipe.units_check == "warn")
        if said and recipe.units_check == "error":
            raise DataFileError(said + " (the card's units_check: error refuses it)")
    check_rate(sf, recipe, source)
    if recipe.reference == "average":
        from neurokit.preprocessing.eeg.filtering import average_reference

        average_reference(raw)
        applied["reference"] = "average"
    try:
        if recipe.resample_windows:  # windows are resampled one by one when cut (cut_windows)
            _filter(raw, recipe, applied, source, fft_dtype)
            applied["resampled_windows"] = [sf, recipe.sfreq]
        elif recipe.resample_first:
            raw = _resample(raw, recipe, applied, fft_dtype)
            _filter(raw, recipe, applied, source, fft_dtype)
        else:
            plan = band_plan(sf, recipe, source)  # once: its warning (band edge near Nyquist) is said once
            if not _filter_and_resample(raw, recipe, applied, plan, fft_dtype):
                _filter(raw, recipe, applied, source, fft_dtype, plan)
                raw = _resample(raw, recipe, applied, fft_dtype)
    except ValueError as exc:  # MNE's filter design refuses bands that do not fit the rate or length
        raise DataFileError(
            f"{source}: filtering failed at {sf:g} Hz over {raw.n_times / sf:.1f} s ({exc}); "
            "the recording is too short or too slowly sampled for the recipe's band"
        ) from exc
    if recipe.eog_removal != "none":
        applied["eog_removal"] = remove_eog(raw, recipe.eog_removal, recipe.eog_channels, source)
    if recipe.eog_removal != "none" or recipe.exclude_channels:
        excluded = drop_channels(raw, recipe.exclude_channels, source, applied.get("dropped_channels"))
        if excluded:
            applied["excluded_channels"] = excluded
    if recipe.bipolar:
        derive_bipolar(raw, recipe.bipolar_pairs(), source)
        applied["bipolar"] = list(recipe.bipolar)
    set_raw_notes(raw, None if raw.info.get("temp") else notes, applied=applied)
    return raw


def derive_bipolar(raw, pairs, source: str | None = None) -> None:
    """Replace the channels of ``raw`` by bipolar derivations, in place.

    Each pair ``(A, B)`` becomes ``A − B`` named ``"A-B"``, in the order given, through
    :func:`mne.set_bipolar_reference`; the other channels are dropped.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording, loaded; modified in place.
    pairs : sequence of (str, str)
        The derivations ``[(A, B), …]`` (the recipe's ``bipolar``).
    source : str, optional
        The recording's name (its file), for error messages; default the name ``raw`` was read under.

    Raises
    ------
    ChannelMismatchError
        A channel of a derivation is not in the recording (the message names the file, the derivations it
        cannot make and the channels it has).

    Examples
    --------
    >>> import mne
    >>> from neurokit.cards.recipes import EEGRecipe
    >>> x = np.random.default_rng(0).normal(size=(2, 2000)) * 1e-5  # 10 s of 10 µV noise
    >>> raw = mne.io.RawArray(x, mne.create_info(["Cz", "Pz"], 200.0, "eeg"), verbose=False)
    >>> derive_bipolar(raw, [("Cz", "Pz")])
    >>> raw.ch_names
    ['Cz-Pz']
    """
    import mne

    have = set(raw.ch_names)
    missing = [f"{a}-{b}" for a, b in pairs if a not in have or b not in have]
    if missing:
        absent = sorted({c for a, b in pairs for c in (a, b)} - have)
        raise ChannelMismatchError(
            f"{source or 'recording'}: cannot derive {', '.join(missing)}: {', '.join(absent)} not in the recording "
            f"(it has {', '.join(raw.ch_names[:24])}{' …' if len(raw.ch_names) > 24 else ''}); "
            "skip_bad=True leaves such files out and counts them"
        )
    names = [f"{a}-{b}" for a, b in pairs]
    clash = [n for n in names if n in have]
    if clash:
        raise ChannelMismatchError(f"{source or 'recording'}: already has channels named {clash}; rename them first")
    mne.set_bipolar_reference(
        raw, [a for a, _ in pairs], [b for _, b in pairs], ch_name=names, drop_refs=True, copy=False, verbose="error"
    )
    raw.pick(names)


def _resample(raw, recipe: EEGRecipe, applied: dict, fft_dtype=np.float64):
    """Resample to ``recipe.sfreq`` (MNE's FFT method, batched: :mod:`.filtering`); returns the recording."""
    from neurokit.preprocessing.eeg.filtering import fast_path_ok, resample_fft, resample_in_place

    if abs(raw.info["sfreq"] - recipe.sfreq) > 1e-6:
        applied["resampled"] = [raw.info["sfreq"], recipe.sfreq]
        if fast_path_ok(raw):
            try:
                resample_in_place(
                    raw, resample_fft(raw._data, raw.info["sfreq"], recipe.sfreq, fft_dtype), recipe.sfreq
                )
                return raw
            except ValueError:  # too short for the batched plan: MNE's own method
                pass
        raw.resample(recipe.sfreq, npad="auto", verbose="error")
    return raw


def _filter_and_resample(raw, recipe: EEGRecipe, applied: dict, plan: tuple, fft_dtype=np.float64) -> bool:
    """Filter then resample ``raw`` in place in one spectral pass
    (:func:`~neurokit.preprocessing.eeg.filtering.filter_resample_fft`, equal to :func:`_filter` then
    :func:`_resample`) when it is one loaded run without gaps or stim channels, long enough for the pass, with
    a filter to apply and a rate to change; returns whether it did (otherwise nothing was changed). ``plan``:
    :func:`band_plan` at the recording's rate."""
    from neurokit.preprocessing.eeg.filtering import (
        fast_path_ok,
        filter_resample_fft,
        filter_segments,
        resample_in_place,
    )

    sf = raw.info["sfreq"]
    if abs(sf - recipe.sfreq) <= 1e-6 or not fast_path_ok(raw) or filter_segments(raw) != [(0, raw.n_times)]:
        return False
    l_freq, h_freq, freqs = plan
    kernels = filter_kernels(sf, l_freq, h_freq, freqs)
    if not kernels or any(len(h) > raw.n_times for h in kernels):
        return False
    try:
        data = filter_resample_fft(raw._data, kernels, sf, recipe.sfreq, fft_dtype)
    except ValueError:  # too short for one pass: the two passes (and their fallbacks) do it
        return False
    _record_filter(raw, l_freq, h_freq)
    record_band(applied, l_freq, h_freq, freqs)
    applied["resampled"] = [sf, recipe.sfreq]
    resample_in_place(raw, data, recipe.sfreq)
    return True


def band_plan(sf: float, recipe: EEGRecipe, source: str) -> tuple[float | None, float | None, np.ndarray]:
    """The band and notch frequencies the recipe asks for, fitted to a rate of ``sf`` Hz.

    An upper edge within 5 % of Nyquist is lowered to 0.9 × Nyquist (warned); line harmonics below
    Nyquist − 1 Hz are notched.

    Parameters
    ----------
    sf : float
        The rate the filters run at, in Hz.
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    source : str
        The recording's name (its file), for error messages.

    Returns
    -------
    l_freq : float or None
        High-pass edge, in Hz.
    h_freq : float or None
        Low-pass edge, in Hz.
    freqs : ndarray
        Notch frequencies, in Hz (empty for none).

    Raises
    ------
    DataFileError
        A high-pass at or above Nyquist.

    Examples
    --------
    >>> from neurokit.cards.recipes import EEGRecipe
    >>> band_plan(200.0, EEGRecipe(), "rec.edf")
    (0.3, 75.0, array([60.]))
    """
    nyq = sf / 2.0
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
        warnings.warn(msg, RuntimeWarning, stacklevel=4)
        h_freq = new_h
    freqs = np.arange(recipe.line_freq, nyq - 1.0, recipe.line_freq) if recipe.line_freq else np.array([])
    return l_freq, h_freq, freqs


def filter_kernels(sf: float, l_freq, h_freq, freqs) -> list[np.ndarray]:
    """MNE's FIR filters for the band and the notch, in the order they are applied.

    Parameters
    ----------
    sf : float
        The rate the filters run at, in Hz.
    l_freq, h_freq : float or None
        Band edges, in Hz (:func:`band_plan`).
    freqs : ndarray
        Notch frequencies, in Hz.

    Returns
    -------
    list of ndarray
        The band filter (if any band edge is set), then the notch filter (if any frequency); each odd-length
        (:func:`~neurokit.preprocessing.eeg.filtering.design_filter`).

    Examples
    --------
    >>> [len(h) for h in filter_kernels(200.0, 0.3, 75.0, np.array([60.0]))]
    [2201, 1321]
    """
    from neurokit.preprocessing.eeg.filtering import design_filter

    return ([design_filter(sf, l_freq, h_freq)] if l_freq is not None or h_freq is not None else []) + (
        [design_filter(sf, freqs, None, notch=True)] if len(freqs) else []
    )


def record_band(applied: dict, l_freq, h_freq, freqs) -> None:
    """Record in ``applied`` the band edges and notch frequencies a recording was filtered with.

    Parameters
    ----------
    applied : dict
        The recording's record of what was applied; ``l_freq``, ``h_freq`` (Hz) and ``notch_hz`` are set.
    l_freq, h_freq : float or None
        Band edges, in Hz.
    freqs : ndarray
        Notch frequencies, in Hz.

    Examples
    --------
    >>> applied = {}
    >>> record_band(applied, 0.3, 75.0, np.array([60.0]))
    >>> applied
    {'l_freq': 0.3, 'h_freq': 75.0, 'notch_hz': [60.0]}
    """
    if l_freq is not None or h_freq is not None:
        applied["l_freq"], applied["h_freq"] = l_freq, h_freq
    if len(freqs):
        applied["notch_hz"] = freqs.tolist()


def _record_filter(raw, l_freq, h_freq) -> None:
    """What ``Raw.filter`` records in ``raw.info``: the band only narrows."""
    if l_freq is None and h_freq is None:
        return
    info = raw.info
    with info._unlock():
        if h_freq is not None and (info["lowpass"] is None or h_freq < info["lowpass"]):
            info["lowpass"] = float(h_freq)
        if l_freq is not None and (info["highpass"] is None or l_freq > info["highpass"]):
            info["highpass"] = float(l_freq)


def _filter(raw, recipe: EEGRecipe, applied: dict, source: str, fft_dtype=np.float64, plan=None) -> None:
    from neurokit.preprocessing.eeg.filtering import apply_filters, filter_segments

    sf = raw.info["sfreq"]
    l_freq, h_freq, freqs = plan if plan is not None else band_plan(sf, recipe, source)
    band = l_freq is not None or h_freq is not None
    kernels, segments = None, filter_segments(raw)
    if segments is not None:  # MNE's filters, applied to blocks of channels at once (.filtering)
        kernels = filter_kernels(sf, l_freq, h_freq, freqs)
        if any(len(h) > b - a for h in kernels for a, b in segments):
            kernels = None  # a filter longer than a stretch of the recording: MNE's path (and its handling)
    if kernels is not None and segments is not None:  # kernels are only made for segments
        for a, b in segments:  # stretches between gaps are filtered on their own, as Raw.filter does
            apply_filters(raw._data[:, a:b], kernels, fft_dtype)
        _record_filter(raw, l_freq, h_freq)
    else:
        if band:
            raw.filter(l_freq, h_freq, picks="all", verbose="error", n_jobs=1)
        if len(freqs):
            raw.notch_filter(freqs, picks="all", verbose="error")
    record_band(applied, l_freq, h_freq, freqs)


def make_windows(raw, recipe: EEGRecipe, *, source: str | None = None) -> Windows:
    """Cut a preprocessed recording into ``(C, N, 200)`` patch tensors in units of 100 µV.

    Event windows (``recipe.events`` set) start at each matching annotation's onset and last
    ``window_s``; when no annotation matches, the stim channel's triggers whose codes the events name
    are used (``events: {"1": left}``). Otherwise windows slide by ``stride_s``. Either kind lies between
    ``crop_start_s`` and the end minus ``crop_end_s``: event windows reaching into the cropped parts are
    dropped with a warning. No window spans a gap of an EDF+D recording, and onsets are true recording
    times (the time-stamps of the data records); windows running past the end or into a gap are dropped
    with a warning.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The preprocessed recording (:func:`preprocess_raw`), at ``recipe.sfreq`` Hz, in V.
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    source : str, optional
        The recording's name (its file), for error messages; default the name ``raw`` was read under.

    Returns
    -------
    Windows
        Patches (float32, 100 µV), labels, onsets (s) and channels.

    Raises
    ------
    DataFileError
        The usable part of the recording is shorter than one window, no annotation (or stim-channel
        trigger) matches the card's events (the message lists the triggers a stim channel holds), or every
        event window lies in the cropped parts.

    Examples
    --------
    >>> import mne
    >>> from neurokit.cards.recipes import EEGRecipe
    >>> x = np.random.default_rng(0).normal(size=(2, 2000)) * 1e-5  # 10 s of 10 µV noise
    >>> raw = mne.io.RawArray(x, mne.create_info(["Cz", "Pz"], 200.0, "eeg"), verbose=False)
    >>> w = make_windows(raw, EEGRecipe(window_s=4.0))
    >>> w.patches.shape, w.onsets.tolist()
    ((2, 2, 4, 200), [0.0, 4.0])
    """
    plan = window_plan(raw, recipe, source=source)
    patches, ok = cut_windows(raw._data, plan.starts, plan.win, recipe)
    return plan.windows(patches, ok, list(raw.ch_names))


@dataclass
class WindowPlan:
    """Where the windows of one recording start, their classes and onsets (see :func:`window_plan`).

    Attributes
    ----------
    starts : ndarray of int, shape (n_windows,)
        First sample of each window, at ``recipe.sfreq``, from the recording's first sample.
    labels : ndarray, shape (n_windows,)
        Class index (-1 unlabelled) or regression target of each window.
    onsets : ndarray of float, shape (n_windows,)
        Window onsets, in s of recording time.
    win : int
        Samples per window.
    notes : list of str
        Warnings about windows left out.
    n_bad_annotation : int
        Windows dropped because they overlap a ``BAD…`` annotation.
    """

    starts: np.ndarray
    labels: np.ndarray
    onsets: np.ndarray
    win: int
    notes: list[str]
    n_bad_annotation: int = 0

    def windows(self, patches: np.ndarray, ok: np.ndarray, ch_names: list[str]) -> Windows:
        """The :class:`Windows` of the kept windows (``ok``; ``patches`` holds those, in order)."""
        return Windows(
            patches=patches,
            labels=self.labels[ok],
            onsets=self.onsets[ok],
            ch_names=ch_names,
            n_rejected=int((~ok).sum()),
            warnings=self.notes,
            n_bad_annotation=self.n_bad_annotation,
        )


def annotation_origin(raw) -> float:
    """The time of ``raw``'s first sample on the clock its annotation onsets use, in s.

    MNE keeps ``raw.annotations`` onsets from the first sample ever recorded (``first_samp`` 0), with or
    without a measurement date, so a recording cropped and saved (``first_samp`` > 0) has its onsets shifted by
    ``raw.first_time``. The one rule for every window mode (event onsets, tiled events, BAD spans), as
    :func:`mne.events_from_annotations` applies it.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording.

    Returns
    -------
    float
        Subtract it from an annotation onset to get seconds from the first sample of the data.

    Examples
    --------
    >>> import mne, numpy as np
    >>> raw = mne.io.RawArray(np.zeros((1, 4000)), mne.create_info(1, 200.0), first_samp=2000, verbose="error")
    >>> raw.set_annotations(mne.Annotations([5.0], [4.0], ["rest"]))  # doctest: +ELLIPSIS
    <RawArray ...>
    >>> float(raw.annotations.onset[0] - annotation_origin(raw))  # 5 s into the data, meas_date or not
    5.0
    """
    return raw.first_samp / raw.info["sfreq"]


def bad_spans(raw) -> np.ndarray:
    """The sample spans of ``raw``'s annotations whose description starts with ``BAD`` (any case).

    As MNE's ``reject_by_annotation``; zero-length marks (the ``BAD boundary`` of joined pieces) are left out.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording.

    Returns
    -------
    ndarray of int64, shape (n_spans, 2)
        ``[start, stop)`` in samples from the first sample of ``raw``.

    Examples
    --------
    >>> import mne
    >>> from neurokit.cards.recipes import EEGRecipe
    >>> x = np.random.default_rng(0).normal(size=(2, 2000)) * 1e-5  # 10 s of 10 µV noise
    >>> raw = mne.io.RawArray(x, mne.create_info(["Cz", "Pz"], 200.0, "eeg"), verbose=False)
    >>> _ = raw.set_annotations(mne.Annotations([1.0], [2.0], ["BAD_muscle"]))
    >>> bad_spans(raw).tolist()
    [[200, 600]]
    """
    sf = raw.info["sfreq"]
    ann = raw.annotations
    t0 = annotation_origin(raw)
    spans = [
        (int(np.floor((o - t0) * sf)), int(np.ceil((o + d - t0) * sf)))
        for o, d, desc in zip(ann.onset, ann.duration, ann.description)
        if str(desc).lower().startswith("bad") and d > 0
    ]
    return np.asarray(spans, dtype=np.int64).reshape(-1, 2)


def window_plan(raw, recipe: EEGRecipe, *, source: str | None = None) -> WindowPlan:
    """The windows :func:`make_windows` cuts from ``raw``, without reading samples.

    Only ``raw``'s length, annotations, stim triggers and gaps are used. Windows running past the end or into a
    gap are left out with a warning.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording, already at ``recipe.sfreq`` Hz (its samples need not be loaded).
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    source : str, optional
        The recording's name (its file), for error messages; default the name ``raw`` was read under.

    Returns
    -------
    WindowPlan
        Starts, labels and onsets of the windows.

    Raises
    ------
    DataFileError
        As :func:`make_windows`.

    Examples
    --------
    >>> import mne
    >>> from neurokit.cards.recipes import EEGRecipe
    >>> x = np.random.default_rng(0).normal(size=(2, 2000)) * 1e-5  # 10 s of 10 µV noise
    >>> raw = mne.io.RawArray(x, mne.create_info(["Cz", "Pz"], 200.0, "eeg"), verbose=False)
    >>> _ = raw.set_annotations(mne.Annotations([1.0], [2.0], ["BAD_muscle"]))
    >>> plan = window_plan(raw, EEGRecipe(window_s=4.0))
    >>> plan.starts.tolist(), plan.n_bad_annotation
    ([800], 1)
    """
    notes = raw_notes(raw)
    source = source or notes.source_or()
    sf = raw.info["sfreq"]
    win = int(round(recipe.window_s * sf))
    n_times = raw.n_times
    # contiguous pieces (several for EDF+D files with gaps): (first sample, end sample, true start in s)
    pieces = [
        (min(n_times, int(round(a * sf))), min(n_times, int(round((a + d) * sf))), t)
        for a, t, d in notes.segments or [(0.0, 0.0, n_times / sf)]
    ]
    pieces[-1] = (pieces[-1][0], n_times, pieces[-1][2])
    first = int(round(recipe.crop_start_s * sf))
    last = n_times - int(round(recipe.crop_end_s * sf))
    n_cropped = 0
    targets = False  # float labels: the annotations' regression targets
    if recipe.events is not None:
        starts, labels, said = _event_starts(raw, recipe, source)
        targets = any(isinstance(y, float) for y in labels)
        starts, labels, repeated = repeated_events(starts, labels, recipe, source, sf)
        said += repeated
        if not starts and said:  # every marker said why it gave no window (tile mode: all shorter than a window)
            raise DataFileError(f"{source}: no event window: {'; '.join(said)}")
        if first > 0 or last < n_times:  # the crop applies to event windows too: those reaching into it go
            kept = [(s, y) for s, y in zip(starts, labels) if s >= first and s + win <= last]
            n_cropped = len(starts) - len(kept)
            if starts and not kept:
                raise DataFileError(
                    f"{source}: all {len(starts)} event windows lie in the cropped part (the first "
                    f"{recipe.crop_start_s:g} s and the last {recipe.crop_end_s:g} s of a {n_times / sf:.1f}-s "
                    "recording); crop less (crop_start_s= or crop_end_s=; the card's crop_start_s/crop_end_s)"
                )
            starts, labels = [s for s, _ in kept], [y for _, y in kept]
    else:
        hop = int(round((recipe.stride_s or recipe.window_s) * sf))
        starts = [s for a, b, _ in pieces for s in range(max(a, first), min(b, last) - win + 1, hop)]
        labels = [-1] * len(starts)
        if not starts:
            usable = max(0, last - first) / sf
            raise DataFileError(
                f"{source}: recording too short: {usable:.2f} s usable after cropping, one window needs "
                f"{recipe.window_s:g} s. Lower window_s or crop less."
            )

    def piece_of(s):  # the piece holding the whole window (none for a window starting before 0: event_offset_s)
        return next((p for p in pieces if p[0] <= s and s + win <= p[1]), None)

    keep = [(s, y, piece_of(s)) for s, y in zip(starts, labels)]
    keep = [(s, y, p) for s, y, p in keep if p is not None]
    dropped_edge = len(starts) - len(keep)
    n_bad = 0
    if recipe.reject_by_annotation and keep:  # MNE's reject_by_annotation: a window touching a BAD_ span goes
        spans = bad_spans(raw)
        if len(spans):
            clean = [k for k in keep if not ((spans[:, 0] < k[0] + win) & (spans[:, 1] > k[0])).any()]
            n_bad, keep = len(keep) - len(clean), clean
            if not keep:
                raise DataFileError(
                    f"{source}: every window overlaps a BAD… annotation ({n_bad} dropped); set the "
                    "recipe's reject_by_annotation: false to keep them"
                )
    if not keep:
        raise DataFileError(
            f"{source}: recording too short ({n_times / sf:.2f} s) for any {recipe.window_s:g}-s window"
        )
    dropped: list[str] = list(said) if recipe.events is not None else []
    if n_cropped:
        dropped.append(
            f"{n_cropped} event window(s) reach into the cropped first {recipe.crop_start_s:g} s or last "
            f"{recipe.crop_end_s:g} s and were dropped"
        )
    if dropped_edge:
        where = "an edge of the recording" if len(pieces) == 1 else "an edge of the recording or into a gap"
        dropped.append(f"{dropped_edge} window(s) ran past {where} and were dropped")
    if n_bad:
        dropped.append(f"{n_bad} window(s) overlap a BAD… annotation and were dropped (reject_by_annotation)")
    for n in dropped:
        warnings.warn(f"{source}: {n}", RuntimeWarning, stacklevel=3)
    return WindowPlan(
        starts=np.asarray([s for s, _, _ in keep], dtype=np.int64),
        labels=np.asarray([y for (_, y, _) in keep], dtype=np.float64 if targets else np.int64),
        onsets=np.asarray([t + (s - a) / sf for (s, _, (a, _, t)) in keep], dtype=np.float64),
        win=win,
        notes=dropped,
        n_bad_annotation=n_bad,
    )


def cut_windows(
    data: np.ndarray, starts: np.ndarray, win: int, recipe: EEGRecipe, offset: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Cut windows out of ``data`` and scale them into patch tensors.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), float64
        The preprocessed samples, in V.
    starts : ndarray of int, shape (n_windows,)
        First sample of each window (:attr:`WindowPlan.starts`).
    win : int
        Samples per window.
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    offset : int
        Sample of ``starts``' clock at which ``data`` begins (a chunk of a streamed recording).

    Returns
    -------
    patches : ndarray, shape (n_kept, n_channels, n_patches, 200), float32
        The kept windows, scaled by ``recipe.scale`` (V → 100 µV units).
    ok : ndarray of bool, shape (n_windows,)
        The windows kept by the amplitude bound ``recipe.reject_uv`` (µV).

    Raises
    ------
    ValueError
        ``win`` is not the recipe's window length and the recipe does not resample windows one by one.

    Examples
    --------
    >>> from neurokit.cards.recipes import EEGRecipe
    >>> x = np.random.default_rng(0).normal(size=(2, 2000)) * 1e-5
    >>> patches, ok = cut_windows(x, np.array([0, 800]), 800, EEGRecipe(window_s=4.0))
    >>> patches.shape, ok.tolist()
    ((2, 2, 4, 200), [True, True])
    """
    C = data.shape[0]
    n_out = recipe.n_patches * PATCH_SIZE
    if win != n_out and not recipe.resample_windows:
        raise ValueError(f"windows of {win} samples where the recipe stores {n_out}: resample first")
    out = np.empty((len(starts), C, recipe.n_patches, PATCH_SIZE), dtype=np.float32)
    ok = np.ones(len(starts), dtype=bool)
    per_window = win != n_out  # resample_windows: each window resampled alone (the function imported once)
    if per_window:
        from scipy.signal import resample
    bound = None if recipe.reject_uv is None else recipe.reject_uv * 1e-6
    j = 0  # kept windows are packed to the front: no second copy of the windows
    for i, s in enumerate(starts):
        seg = data[:, s - offset : s - offset + win]
        if bound is not None and np.abs(seg).max() > bound:
            ok[i] = False
            continue
        if per_window:  # this window alone, by FFT (scipy.signal.resample)
            seg = resample(seg, n_out, axis=1)
        np.multiply(seg, recipe.scale, out=out[j].reshape(C, n_out), casting="same_kind")
        j += 1
    return out[:j], ok


def repeated_events(
    starts: list[int], labels: list[int], recipe: EEGRecipe, source: str, sfreq: float
) -> tuple[list[int], list[int], list[str]]:
    """Apply ``recipe.event_repeated`` to event windows that start at the same sample.

    Parameters
    ----------
    starts : list of int
        First sample of each event window.
    labels : list of int
        Its class.
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    source : str
        The recording's name (its file), for error messages.
    sfreq : float
        Rate of ``starts``, in Hz (for times in messages).

    Returns
    -------
    starts : list of int
        The windows kept, in time order.
    labels : list of int
        Their classes.
    said : list of str
        What was dropped, in words.

    Raises
    ------
    DataFileError
        ``"error"`` (the default) and two windows at one time: the file, the times and the markers, and the
        option that keeps the first or drops the conflicting ones.

    Examples
    --------
    >>> r = EEGRecipe(events={"rest": 0, "task": 1}, event_repeated="drop")
    >>> repeated_events([200, 200, 600, 600], [0, 0, 0, 1], r, "x.edf", 200.0)[:2]
    ([200], [0])
    """
    by: dict[int, list[int]] = {}
    for st, y in zip(starts, labels):
        by.setdefault(int(st), []).append(y)  # a class index, or a float target (kept as it is)
    if all(len(v) == 1 for v in by.values()):
        return list(starts), list(labels), []
    names: dict[int, list[str]] = {}
    for desc, y in (recipe.events or {}).items():
        names.setdefault(int(y), []).append(str(desc))

    def marker(y: int) -> str:
        return "/".join(names.get(y, [str(y)]))

    many = {st: ys for st, ys in sorted(by.items()) if len(ys) > 1}
    if recipe.event_repeated == "keep":  # the release's way (TUEV, CHB-MIT): a window per marker
        extra = sum(len(ys) - 1 for ys in many.values())
        return list(starts), list(labels), [f"event_repeated=keep: {extra} window(s) repeat another's start time"]
    if recipe.event_repeated == "error":
        shown = "; ".join(
            f"{st / sfreq:.3f} s: {', '.join(marker(y) for y in ys)}" for st, ys in list(many.items())[:5]
        )
        more = f" (and {len(many) - 5} more times)" if len(many) > 5 else ""
        raise DataFileError(
            f"{source}: {len(many)} time(s) carry more than one event marker ({shown}{more}); a window stored twice "
            "is a leak between folds, one under two labels a wrong label. Keep the first marker at each time "
            "(event_repeated='first') or drop the conflicting ones (event_repeated='drop'), as MNE's Epochs "
            "event_repeated does"
        )
    kept_s, kept_y = [], []
    n_rep = n_conf = 0
    for st, ys in sorted(by.items()):
        if len(set(ys)) == 1 or recipe.event_repeated == "first":
            kept_s.append(st)
            kept_y.append(ys[0])
            n_rep += len(ys) - 1 if len(set(ys)) == 1 else 0
            n_conf += len(ys) - 1 if len(set(ys)) > 1 else 0
        else:
            n_conf += len(ys)
    said = [
        f"event_repeated={recipe.event_repeated}: {n_rep} repeated marker(s) kept once, {n_conf} window(s) of "
        "conflicting markers dropped"
    ]
    return kept_s, kept_y, said


def annotation_targets(descriptions, events: dict, source: str) -> dict[str, float]:
    """The regression targets that annotation ``descriptions`` carry.

    A description ``"<event>=<number>"`` for an ``<event>`` of ``events`` (what a dataset reader of a regression
    task gives each window: SEED-VIG's ``seed_vig/perclos=0.4312``) maps to the number.

    Parameters
    ----------
    descriptions : iterable of str
        The recording's annotation descriptions.
    events : dict
        The recipe's events (event name → class index).
    source : str
        The recording's name (its file), for error messages.

    Returns
    -------
    dict of str to float
        Description → target; empty when no description carries one (class labels).

    Raises
    ------
    DataFileError
        A number that does not parse; or plain ``<event>`` annotations beside ones with targets (naming the file).

    Examples
    --------
    >>> annotation_targets(["seed_vig/perclos=0.25", "BAD_x", "seed_vig/perclos=1.0"], {"seed_vig/perclos": 0}, "f")
    {'seed_vig/perclos=0.25': 0.25, 'seed_vig/perclos=1.0': 1.0}
    """
    out: dict[str, float] = {}
    for d in dict.fromkeys(str(d) for d in descriptions):
        name, sep, value = d.rpartition("=")
        if not sep or name not in events:
            continue
        try:
            out[d] = float(value)
        except ValueError:
            raise DataFileError(
                f"{source}: annotation {d!r} carries no number after '='; a regression target reads '{name}=<number>'"
            ) from None
    plain = sorted(set(map(str, descriptions)) & set(events))
    if out and plain:
        raise DataFileError(
            f"{source}: annotations {plain[0]!r} without a target beside ones with targets ({next(iter(out))!r}); "
            "its reader must give every window of a regression task its target"
        )
    return out


def _event_starts(raw, recipe: EEGRecipe, source: str) -> tuple[list[int], list, list[str]]:
    """Window starts (samples) and classes (or float targets: :func:`annotation_targets`) of the annotations
    matching ``recipe.events``; when none matches, the triggers of the file's stim channel whose codes the events
    name (``"1": left``); and what was not windowed, in words (tiled annotations too short for one window)."""
    import mne

    assert recipe.events is not None  # window_plan calls this only for a recipe with events
    events = {str(k): v for k, v in recipe.events.items()}
    present = {str(d) for d in raw.annotations.description}
    event_id = {k: v for k, v in events.items() if k in present}
    if event_id and recipe.event_windows == "tile":
        sf = raw.info["sfreq"]
        win = int(round(recipe.window_s * sf))
        hop = int(round((recipe.stride_s or recipe.window_s) * sf))
        t0 = annotation_origin(raw)  # the same origin with or without a measurement date, as MNE's events
        starts, labels = [], []
        short = []
        for a in raw.annotations:
            if str(a["description"]) in event_id:
                lo = int(round((a["onset"] - t0) * sf))
                hi = min(raw.n_times, lo + int(round(a["duration"] * sf)))
                tiles = range(max(lo, 0), hi - win + 1, hop)
                if not len(tiles):
                    short.append(f"{a['description']} at {a['onset'] - t0:.3f} s ({a['duration']:g} s)")
                for st in tiles:
                    starts.append(st)
                    labels.append(int(event_id[str(a["description"])]))
        said = []
        if short:
            said.append(
                f"{len(short)} tiled event marker(s) shorter than one {recipe.window_s:g}-s window gave no window: "
                f"{', '.join(short[:5])}{' …' if len(short) > 5 else ''}"
            )
        return starts, labels, said
    targets = annotation_targets(present, events, source) if recipe.event_windows == "onset" else {}
    values = [0.0, *targets.values()]  # event id k (from 1) → its target
    if targets:  # a window at each annotation "<event>=<number>", labelled with the number (a regression)
        event_id = {d: k + 1 for k, d in enumerate(targets)}
    if event_id:
        ev, _ = mne.events_from_annotations(raw, event_id=event_id, verbose="error")
        shift = int(round(recipe.event_offset_s * raw.info["sfreq"]))
        starts = [int(s) - raw.first_samp + shift for s in ev[:, 0]]
        return starts, [values[int(v)] if targets else int(v) for v in ev[:, 2]], []
    stim = raw_notes(raw).stim
    sf = raw.info["sfreq"]
    if stim:
        hits = [(o, events[str(c)]) for o, c in zip(stim["onsets"], stim["codes"]) if str(c) in events]
        if hits:
            return [int(round(o * sf)) for o, _ in hits], [y for _, y in hits], []
    found = sorted({str(a["description"]) for a in raw.annotations} - {"BAD boundary", "EDGE boundary"})
    msg = (
        f"{source}: no annotation matches the card's events {short_list(sorted(events))} "
        f"(annotations found: {short_list(found) if found else 'none'})"
    )
    if stim:
        codes = sorted(set(stim["codes"]))
        msg += (
            f"; the {stim['channel']} channel holds {len(stim['codes'])} triggers with codes "
            f"{short_list(codes)}: map them in the card's events (e.g. '{codes[0]}': <class>)"
        )
    raise DataFileError(msg)


def load_windows(path: str | Path, recipe: EEGRecipe, **read_options) -> Windows:
    """Read, preprocess and window one file.

    :func:`~neurokit.io.read_eeg` → :func:`preprocess_raw` → :func:`make_windows`.

    Parameters
    ----------
    path : str or Path
        An EEG file :func:`~neurokit.io.read_eeg` reads (EDF, BDF, BrainVision, FIF…).
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    **read_options
        Options of :func:`~neurokit.io.read_eeg`, such as ``encoding`` and ``units``.

    Returns
    -------
    Windows
        The recording's windows.

    Raises
    ------
    DataFileError, ChannelMismatchError, RecordingDropped
        As :func:`~neurokit.io.read_eeg`, :func:`preprocess_raw` and :func:`make_windows`.

    Examples
    --------
    >>> from neurokit.cards import load_card
    >>> w = load_windows("S001R04.edf", load_card("physionet_mi").recipe())  # doctest: +SKIP
    """
    from neurokit.io.eeg import read_eeg

    from neurokit.preprocessing.eeg.eog import read_options as eog_read_options

    raw = read_eeg(path, **read_options, **eog_read_options(recipe))
    raw = preprocess_raw(raw, recipe, source=str(path))
    return make_windows(raw, recipe, source=str(path))
