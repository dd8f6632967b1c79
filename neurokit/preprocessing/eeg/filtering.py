"""Zero-phase FIR filtering and FFT resampling of every channel at once, equal to MNE's defaults.

``Raw.filter``, ``Raw.notch_filter`` and ``Raw.resample`` with their default arguments (FIR ``firwin``
design, Hamming window, ``'auto'`` lengths and transition bands, zero phase, odd-reflection padding; FFT
resampling with ``npad='auto'`` and a boxcar window) filter one channel at a time in Python loops and
search for events before resampling. Here the **same filters** — designed by MNE itself,
:func:`mne.filter.create_filter` — are applied to blocks of channels by :func:`scipy.signal.oaconvolve`, and
resampling takes one batched real FFT per block. Results equal MNE's to float64 rounding (``tests/
test_preprocessing_eeg_filtering.py`` checks each step and the whole PhysioNet-MI recipe against MNE on real
recordings: ≤ 1e-9 of the signal's RMS), in ≈ half the time (``benchmarks/eeg_pipeline.py``). With
``dtype=np.float32`` (what ``prepare`` uses, its stores being float32) the large FFTs run in float32, about
twice as fast, within ~3e-6 of the RMS (:data:`FFT_DTYPES`).

Facts of MNE's method that the results depend on (MNE 1.x, ``mne/filter.py``, ``mne/cuda.py``):

* FIR application: the signal is extended on each side by ``min(len(h), n_times) - 1`` samples of odd
  reflection (``2·x[0] − x[k]``), convolved with ``h`` and read back with a delay of ``(len(h) − 1) / 2``
  (zero phase).
* Notch: a band-stop filter from ``f − w/2 − tb/2`` to ``f + w/2 + tb/2`` for each line harmonic ``f``, with
  ``w = f / 200`` and ``tb = 1 Hz`` (transition bands of ``tb/2``).
* FFT resampling: ``npad='auto'`` pads to the next power of two at or above ``n + 2·min(n // 8, 100)`` (split
  evenly, the odd sample at the end), odd-reflection padding, the Nyquist bin of the shorter length scaled by
  2 (down) or 1/2 (up), gain ``new_len / old_len``, then ``round(ratio · pad)`` samples cut from each end.

When a recording is filtered and then resampled, :func:`filter_resample_fft` does both in one spectral pass
(used by :func:`~neurokit.preprocessing.eeg.windows.preprocess_raw` where it applies), equal to the two.

As in MNE, stretches between ``edge``/``bad_acq_skip`` annotations (EDF+D gaps, concatenated runs) are
filtered separately. Recordings MNE treats specially otherwise — stim channels or several joined Raw
objects (resampling), a filter longer than a stretch — go through MNE's own methods.
"""

from __future__ import annotations

import functools

import numpy as np

#: channels processed together: bounds the extra memory to a block's padded copy, not the recording's
BLOCK_CHANNELS = 8

_SPECIAL_ANNOTATIONS = ("edge", "bad_acq_skip")

#: precisions of the large FFTs: float64 (default) equals MNE to ~1e-14 of the signal's RMS; float32 is about
#: twice as fast and within ~3e-6 of the RMS (S001R04: 2.8e-6), under the rounding of float32 stores
FFT_DTYPES = (np.float64, np.float32)


def filter_segments(raw) -> list[tuple[int, int]] | None:
    """The sample ranges that MNE's ``Raw.filter`` filters separately.

    They are the stretches between ``edge``/``bad_acq_skip`` annotations (gaps of EDF+D files, joins of
    concatenated runs).

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording.

    Returns
    -------
    list of (int, int) or None
        ``[start, stop)`` sample ranges; None when ``raw`` is not loaded or MNE's helper is not available (then
        MNE's own methods are used).

    Examples
    --------
    >>> import mne
    >>> info = mne.create_info(["Cz", "Pz"], 250.0, "eeg")
    >>> raw = mne.io.RawArray(np.random.default_rng(0).normal(size=(2, 1000)) * 1e-5, info, verbose=False)
    >>> filter_segments(raw)
    [(0, 1000)]
    """
    if not raw.preload:
        return None
    try:
        return segment_bounds(raw)
    except ImportError:  # pragma: no cover - MNE moved its helper: fall back to Raw.filter
        return None


def segment_bounds(raw) -> list[tuple[int, int]]:
    """:func:`filter_segments` for any ``raw``, loaded or not (only its annotations and length are read).

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording.

    Returns
    -------
    list of (int, int)
        ``[start, stop)`` sample ranges filtered separately.

    Raises
    ------
    ImportError
        MNE's helper has moved.

    Examples
    --------
    >>> import mne
    >>> info = mne.create_info(["Cz", "Pz"], 250.0, "eeg")
    >>> raw = mne.io.RawArray(np.random.default_rng(0).normal(size=(2, 1000)) * 1e-5, info, verbose=False)
    >>> segment_bounds(raw)
    [(0, 1000)]
    """
    from mne.annotations import _annotations_starts_stops

    starts, stops = _annotations_starts_stops(raw, list(_SPECIAL_ANNOTATIONS), invert=True)
    return [(int(a), int(b)) for a, b in zip(starts, stops)]


def one_run_without_stim(raw) -> bool:
    """Whether ``raw`` is one run and has no stim channel: what :func:`resample_fft` and streaming need.

    Several joined Raw objects, and stim channels (MNE resamples those by holding trigger values), go through
    MNE's own methods.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording.

    Returns
    -------
    bool
        True for one run without a stim channel.

    Examples
    --------
    >>> import mne
    >>> info = mne.create_info(["Cz", "Pz"], 250.0, "eeg")
    >>> raw = mne.io.RawArray(np.random.default_rng(0).normal(size=(2, 1000)) * 1e-5, info, verbose=False)
    >>> one_run_without_stim(raw)
    True
    """
    import mne

    if len(getattr(raw, "_raw_lengths", [raw.n_times])) != 1:
        return False
    return len(mne.pick_types(raw.info, meg=False, stim=True, exclude=[])) == 0


def fast_path_ok(raw) -> bool:
    """Whether ``raw`` can be resampled by :func:`resample_fft`: loaded, and :func:`one_run_without_stim`.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording.

    Returns
    -------
    bool
        True when the batched FFT path applies.

    Examples
    --------
    >>> import mne
    >>> info = mne.create_info(["Cz", "Pz"], 250.0, "eeg")
    >>> raw = mne.io.RawArray(np.random.default_rng(0).normal(size=(2, 1000)) * 1e-5, info, verbose=False)
    >>> fast_path_ok(raw)
    True
    """
    return raw.preload and one_run_without_stim(raw)


def apply_filters(data: np.ndarray, kernels: list[np.ndarray], dtype=np.float64) -> None:
    """Apply zero, one or two zero-phase FIR filters to ``data`` in place, in order.

    One filter goes through :func:`apply_fir`, two through :func:`apply_fir_pair`.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), float64
        The signal; overwritten.
    kernels : list of ndarray
        At most two odd-length filters of :func:`design_filter`.
    dtype : {numpy.float64, numpy.float32}
        Precision of the large FFTs (:data:`FFT_DTYPES`).

    Raises
    ------
    ValueError
        More than two filters, or a filter of even length.

    Examples
    --------
    >>> data = np.random.default_rng(0).normal(size=(2, 1000))
    >>> apply_filters(data, [design_filter(250.0, 1.0, 40.0)])
    >>> data.shape
    (2, 1000)
    """
    if len(kernels) == 2:
        apply_fir_pair(data, kernels[0], kernels[1], dtype=dtype)
    elif len(kernels) == 1:
        apply_fir(data, kernels[0], dtype=dtype)
    elif kernels:
        raise ValueError(f"at most two filters are applied together, got {len(kernels)}")


def average_reference(raw) -> None:
    """Average reference of ``raw``'s EEG channels, in place.

    Equal to MNE's ``raw.set_eeg_reference("average", projection=False)``, which it calls when the recording has
    non-EEG or bad channels, projectors, or is not loaded. Otherwise the mean over channels is subtracted from
    the array directly, without MNE's fancy-indexed copies.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording; modified in place.

    Examples
    --------
    >>> import mne
    >>> info = mne.create_info(["Cz", "Pz"], 250.0, "eeg")
    >>> raw = mne.io.RawArray(np.random.default_rng(0).normal(size=(2, 1000)) * 1e-5, info, verbose=False)
    >>> average_reference(raw)
    >>> bool(np.allclose(raw.get_data().mean(axis=0), 0))
    True
    """
    import mne
    from mne.io.constants import FIFF

    eeg = mne.pick_types(raw.info, meg=False, eeg=True, exclude=[])
    if raw.info["projs"] or not raw.preload or raw.info["bads"] or len(eeg) != len(raw.ch_names):
        raw.set_eeg_reference("average", projection=False, verbose="error")
        return
    data = raw._data
    data -= data.mean(axis=0, keepdims=True)
    with raw.info._unlock():
        raw.info["custom_ref_applied"] = FIFF.FIFFV_MNE_CUSTOM_REF_ON


def design_filter(sfreq: float, l_freq, h_freq, *, notch: bool = False) -> np.ndarray:
    """The FIR filter MNE's ``Raw.filter`` (or ``Raw.notch_filter``) designs at ``sfreq`` Hz (cached).

    Files at one rate share their filters.

    Parameters
    ----------
    sfreq : float
        Sampling rate, in Hz.
    l_freq : float or None
        High-pass edge, in Hz (None: no high-pass); with ``notch=True``, the line frequency and its harmonics to
        remove, in Hz (a sequence).
    h_freq : float or None
        Low-pass edge, in Hz (None: no low-pass); unused with ``notch=True``.
    notch : bool
        Design MNE's notch (band-stop) filter for the frequencies in ``l_freq``.

    Returns
    -------
    h : ndarray, shape (n_taps,), float64
        Odd-length, linear-phase filter.

    Raises
    ------
    ValueError
        MNE's, for a band that does not fit the rate.

    Examples
    --------
    >>> design_filter(160.0, 1.0, 40.0).shape
    (529,)
    """
    key = tuple(np.atleast_1d(np.asarray(l_freq, float)).tolist()) if notch else l_freq
    return _design(float(sfreq), key, h_freq, notch).copy()


@functools.lru_cache(maxsize=32)
def _design(sfreq, l_freq, h_freq, notch):
    from mne.filter import create_filter

    if notch:  # MNE's notch: band-stops of f/200 Hz with 0.5-Hz transition bands (trans_bandwidth 1 Hz / 2)
        freqs = np.asarray(l_freq, float)
        widths = freqs / 200.0
        tb2 = 0.5
        stop_lo, stop_hi = freqs - widths / 2 - tb2, freqs + widths / 2 + tb2
        return create_filter(
            None,
            sfreq,
            list(stop_hi),
            list(stop_lo),
            "auto",
            tb2,
            tb2,
            "fir",
            None,
            "zero",
            "hamming",
            "firwin",
            verbose="error",
        )
    return create_filter(None, sfreq, l_freq, h_freq, verbose="error")


def apply_fir(data: np.ndarray, h: np.ndarray, dtype=np.float64) -> None:
    """Filter ``data`` in place with the zero-phase FIR ``h``, as MNE does.

    Odd-reflection padding as MNE's ``pad='reflect_limited'``; equal to MNE's ``_overlap_add_filter``.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), float64
        The signal; overwritten.
    h : ndarray, shape (n_taps,)
        Zero-phase FIR filter of odd length (:func:`design_filter`).
    dtype : {numpy.float64, numpy.float32}
        Precision of the convolution (:data:`FFT_DTYPES`).

    Raises
    ------
    ValueError
        ``h`` has an even length.

    Examples
    --------
    >>> data = np.random.default_rng(0).normal(size=(2, 1000))
    >>> apply_fir(data, design_filter(250.0, None, 40.0))
    """
    from scipy.signal import oaconvolve

    n, n_h = data.shape[-1], len(h)
    if n_h % 2 == 0:
        raise ValueError(f"zero-phase FIR filters have an odd length, got {n_h}")
    n_edge = max(min(n_h, n) - 1, 0)
    start = (n_h - 1) // 2 + n_edge
    kernel = np.asarray(h, dtype)[None, :]
    for c0 in range(0, data.shape[0], BLOCK_CHANNELS):
        block = data[c0 : c0 + BLOCK_CHANNELS]
        padded = odd_pad(block, (n_edge, n_edge), dtype)
        block[:] = oaconvolve(padded, kernel, mode="full", axes=-1)[:, start : start + n]


def apply_fir_pair(data: np.ndarray, h1: np.ndarray, h2: np.ndarray, dtype=np.float64) -> None:
    """``apply_fir(data, h1)`` then ``apply_fir(data, h2)`` in one convolution pass, in place.

    The two filters act as one, ``h1 * h2``, on the signal with ``(len(h1) + len(h2)) / 2 − 1`` samples of odd
    reflection at each end. The second pass reflects the *once-filtered* signal ``y1`` about ``y1[0]``, but
    as ``h1`` is symmetric and the reflected signal odd about ``x[0]``, ``y1[0] = x[0]·Σh1`` and ``h1`` over
    the reflected signal is itself odd about that value: the two paddings agree, and the result equals the
    two passes to float64 rounding (``tests/test_preprocessing_eeg_filtering.py``).

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), float64
        The signal; overwritten.
    h1, h2 : ndarray, shape (n_taps,)
        Zero-phase FIR filters of odd length, applied in this order.
    dtype : {numpy.float64, numpy.float32}
        Precision of the FFT pair (:data:`FFT_DTYPES`).

    Raises
    ------
    ValueError
        A filter of even length.

    Examples
    --------
    >>> x = np.random.default_rng(0).normal(size=(2, 2000))
    >>> h1, h2 = design_filter(250.0, [50.0], None, notch=True), design_filter(250.0, 1.0, 40.0)
    >>> once, twice = x.copy(), x.copy()
    >>> apply_fir_pair(once, h1, h2)
    >>> apply_fir(twice, h1); apply_fir(twice, h2)
    >>> bool(np.allclose(once, twice))
    True
    """
    from scipy import fft

    n, n1, n2 = data.shape[-1], len(h1), len(h2)
    if n1 % 2 == 0 or n2 % 2 == 0:
        raise ValueError(f"zero-phase FIR filters have an odd length, got {n1} and {n2}")
    if n < 2 * (n1 + n2):
        apply_fir(data, h1, dtype)
        apply_fir(data, h2, dtype)
        return
    a1, a2 = (n1 - 1) // 2, (n2 - 1) // 2
    a = a1 + a2
    # h1 * h2 over a samples of odd reflection: one FFT pair per channel on a circle of at least n + 2a
    # samples, whose wrap reaches only the first 2a outputs of the full convolution (not kept)
    n_fft = fft.next_fast_len(n + 2 * a, real=True)
    spec12 = fft.rfft(np.convolve(h1, h2), n_fft).astype(np.result_type(dtype, np.complex64))
    for c0 in range(0, data.shape[0], BLOCK_CHANNELS):
        block = data[c0 : c0 + BLOCK_CHANNELS]
        spec = fft.rfft(odd_pad(block, (a, a), dtype, n_fft), axis=-1, overwrite_x=True)
        spec *= spec12
        block[:] = fft.irfft(spec, n_fft, axis=-1)[:, 2 * a : 2 * a + n]


def odd_pad(
    x: np.ndarray, pads: tuple[int, int], dtype=np.float64, length: int | None = None, out: np.ndarray | None = None
) -> np.ndarray:
    """Odd-reflection padding of every row, written straight into a new array.

    Equal to ``np.pad(x, ((0, 0), pads), mode="reflect", reflect_type="odd")``, without numpy's intermediate
    copies.

    Parameters
    ----------
    x : ndarray, shape (n_channels, n_times)
        The signal.
    pads : (int, int)
        Samples added before and after, each below ``n_times``.
    dtype : numpy dtype
        Type of the new array.
    length : int, optional
        Length of the output, at least the padded length; zeros fill the end (an FFT's length).
    out : ndarray, optional
        Array to write into instead, of the output's shape and ``dtype``.

    Returns
    -------
    ndarray, shape (n_channels, length or n_times + sum(pads))
        The padded signal.

    Examples
    --------
    >>> odd_pad(np.array([[1.0, 2.0, 4.0]]), (2, 1)).tolist()
    [[-2.0, 0.0, 1.0, 2.0, 4.0, 6.0]]
    """
    n, (p0, p1) = x.shape[-1], pads
    total = n + p0 + p1
    if out is None:
        out = np.empty((x.shape[0], total if length is None else length), dtype)
    out[:, p0 : p0 + n] = x
    if p0:
        np.subtract(2 * x[:, :1], x[:, p0:0:-1], out=out[:, :p0], casting="same_kind")
    if p1:
        np.subtract(2 * x[:, -1:], x[:, -2 : -2 - p1 : -1], out=out[:, p0 + n : total], casting="same_kind")
    out[:, total:] = 0
    return out


def resample_plan(
    n_times: int, sfreq_from: float, sfreq_to: float
) -> tuple[int, tuple[int, int], int, tuple[int, int]]:
    """MNE's FFT-resampling plan (``npad='auto'``) for a signal of ``n_times`` samples.

    Parameters
    ----------
    n_times : int
        Samples of the signal.
    sfreq_from, sfreq_to : float
        Sampling rates before and after, in Hz.

    Returns
    -------
    final_len : int
        Samples of the resampled signal.
    pads : (int, int)
        Samples padded before and after.
    new_len : int
        Length of the padded signal after resampling.
    cut : (int, int)
        Samples cut from its start and end.

    Examples
    --------
    >>> resample_plan(1000, 250.0, 100.0)
    (400, (524, 524), 819, (210, 209))
    """
    ratio = float(sfreq_to) / float(sfreq_from)
    final_len = max(int(round(ratio * n_times)), 1)
    min_add = min(n_times // 8, 100) * 2
    npad = 2 ** int(np.ceil(np.log2(n_times + min_add))) - n_times
    half, extra = divmod(npad, 2)
    pads = (half, half + extra)
    new_len = max(int(round(ratio * (n_times + npad))), 1)
    cut0 = int(round(ratio * pads[0]))
    return final_len, pads, new_len, (cut0, new_len - final_len - cut0)


def resample_fft(data: np.ndarray, sfreq_from: float, sfreq_to: float, dtype=np.float64) -> np.ndarray:
    """Resample every channel by FFT, equal to MNE's ``Raw.resample(sfreq_to)`` with its defaults.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), float64
        The signal.
    sfreq_from, sfreq_to : float
        Sampling rates before and after, in Hz.
    dtype : {numpy.float64, numpy.float32}
        Precision of the FFTs (:data:`FFT_DTYPES`).

    Returns
    -------
    ndarray, shape (n_channels, round(n_times · sfreq_to / sfreq_from)), float64
        A new array.

    Raises
    ------
    ValueError
        The padding would exceed the recording (very short signals: use MNE).

    Examples
    --------
    >>> resample_fft(np.random.default_rng(0).normal(size=(2, 1000)), 250.0, 100.0).shape
    (2, 400)
    """
    from scipy import fft

    n = data.shape[-1]
    final_len, pads, new_len, cut = resample_plan(n, sfreq_from, sfreq_to)
    if max(pads) > n - 1:
        raise ValueError(f"{n} samples are too few for batched resampling")
    old_len = n + sum(pads)
    out = np.empty((data.shape[0], final_len), np.float64)
    for c0 in range(0, data.shape[0], BLOCK_CHANNELS):
        # gain new_len / old_len and irfft's 1 / new_len: rfft's "forward" scaling (1 / old_len), irfft's none
        padded = odd_pad(data[c0 : c0 + BLOCK_CHANNELS], pads, dtype)
        spec = fft.rfft(padded, axis=-1, norm="forward", overwrite_x=True)
        out[c0 : c0 + BLOCK_CHANNELS] = _resampled(spec, old_len, new_len, cut)
    return out


def _resampled(spec: np.ndarray, old_len: int, new_len: int, cut: tuple[int, int]) -> np.ndarray:
    """The last steps of MNE's FFT resampling from the spectrum ``spec`` (rfft of the padded signal of
    ``old_len`` samples, gain already in it; changed in place): the Nyquist bin of the shorter length scaled by
    2 (down) or 1/2 (up), the inverse FFT of ``new_len`` samples, ``cut`` samples off each end."""
    from scipy import fft

    use_len = min(new_len, old_len)
    if use_len % 2 == 0:
        spec[:, use_len // 2] *= 2.0 if new_len < old_len else 0.5
    return fft.irfft(spec, new_len, axis=-1, norm="forward", overwrite_x=True)[:, cut[0] : new_len - cut[1]]


def filter_resample_fft(
    data: np.ndarray, kernels: list[np.ndarray], sfreq_from: float, sfreq_to: float, dtype=np.float64
) -> np.ndarray:
    """:func:`apply_filters` then :func:`resample_fft` in one spectral pass: ``data`` (n_channels, n_times),
    float64, filtered by the zero-phase FIR ``kernels`` (one or two, applied as one: ``h1 * h2``, see
    :func:`apply_fir_pair`) and resampled from ``sfreq_from`` to ``sfreq_to`` Hz as MNE's ``Raw.filter`` /
    ``notch_filter`` then ``Raw.resample`` do. Returns a new (n_channels, round(n_times · ratio)) float64 array;
    ``data`` is left as it was. ``dtype=np.float32`` does the FFTs in float32 (:data:`FFT_DTYPES`).

    Resampling reads the filtered signal ``y`` odd-reflected about its ends over MNE's padding ``(p0, p1)``.
    As the filter ``h`` (length ``2a + 1``) is symmetric and odd reflection commutes with it, that padded
    signal is ``h`` applied to the raw signal odd-reflected over ``p0 + a`` and ``p1 + a`` samples — so one
    FFT of resampling's length ``L`` does both: the circular convolution ``rfft(w) · rfft(h)`` of the padded
    window ``w``, plus the spectrum of what the circle wrapped wrongly, the first and last ``a`` samples (a
    correction ``d`` computed from ``2a`` samples at each end, exact). Float64 results equal the two passes
    (and MNE) to ~1e-15 of the signal, float32 ones within the error of the float32 passes
    (``tests/test_preprocessing_eeg_filtering.py``); the filter's own FFT pair, its padded copy and the
    copy back are saved.

    Parameters
    ----------
    data : ndarray, shape (n_channels, n_times), float64
        The recording in volts (any unit: the pass is linear).
    kernels : list of ndarray
        One or two odd-length zero-phase FIR filters (:func:`design_filter`), in the order MNE applies them.
    sfreq_from, sfreq_to : float
        Rates in Hz.
    dtype : numpy dtype
        Precision of the FFTs (``np.float32`` or ``np.float64``).

    Returns
    -------
    ndarray, shape (n_channels, round(n_times · sfreq_to / sfreq_from)), float64

    Raises
    ------
    ValueError
        The recording is too short for the padding (``p + a`` must stay below ``n_times``: use the two passes),
        for two filters as one, or a kernel has an even length; ``data`` is not 2-D with samples; a rate is not
        positive.

    Examples
    --------
    >>> x = np.random.default_rng(0).standard_normal((2, 19680))
    >>> ks = [design_filter(160.0, 0.3, None), design_filter(160.0, [60.0], None, notch=True)]
    >>> filter_resample_fft(x, ks, 160.0, 200.0).shape
    (2, 24600)
    """
    from scipy import fft

    data = np.asarray(data, dtype=np.float64)  # the reflections in float64 whatever the FFTs' precision
    if data.ndim != 2 or data.shape[1] == 0:
        raise ValueError(f"data must be (n_channels, n_times) with samples, got shape {data.shape}")
    if not all(np.isfinite(f) and f > 0 for f in (sfreq_from, sfreq_to)):
        raise ValueError(f"sampling rates must be positive, got {sfreq_from} and {sfreq_to} Hz")
    n = data.shape[-1]
    if not 1 <= len(kernels) <= 2 or any(len(h) % 2 == 0 for h in kernels):
        raise ValueError(f"one or two odd-length zero-phase FIR filters are applied, got {[len(h) for h in kernels]}")
    if len(kernels) == 2 and n < 2 * (len(kernels[0]) + len(kernels[1])):
        raise ValueError(f"{n} samples are too few for the two filters as one")
    h = kernels[0] if len(kernels) == 1 else np.convolve(kernels[0], kernels[1])
    a = (len(h) - 1) // 2
    final_len, (p0, p1), new_len, cut = resample_plan(n, sfreq_from, sfreq_to)
    old_len = n + p0 + p1
    if max(p0, p1) + a > n - 1 or a >= old_len:  # one reflection each side; the circle wraps h's tails once
        raise ValueError(f"{n} samples are too few for one pass of filtering and resampling")
    cdt = np.result_type(dtype, np.complex64)
    spec_h, spec_tail, n_corr = _pass_spectra(h.tobytes(), len(h), old_len, np.dtype(dtype).str)
    out = np.empty((data.shape[0], final_len), np.float64)
    rows = min(BLOCK_CHANNELS, data.shape[0])
    d = np.zeros((rows, old_len), dtype)  # the wrap correction: zero in between
    buf = np.empty((rows, old_len + 2 * a), dtype)  # one padded block at a time
    for c0 in range(0, data.shape[0], BLOCK_CHANNELS):
        block = data[c0 : c0 + BLOCK_CHANNELS]
        k = block.shape[0]
        ext = odd_pad(block, (p0 + a, p1 + a), dtype, out=buf[:k])  # the raw signal over [-p0 - a, n + p1 + a)
        spec = fft.rfft(ext[:, a : a + old_len], axis=-1)
        spec *= spec_h
        # what the circle took from the other end instead of the padded signal beyond it: m = 1 … a samples out
        miss = np.empty((2 * k, a), dtype)
        np.subtract(ext[:, a - 1 :: -1][:, :a], ext[:, a + old_len - 1 : old_len - 1 : -1], out=miss[:k])
        np.subtract(ext[:, a + old_len :], ext[:, a : 2 * a], out=miss[k:])
        # correction at output j < a (and old_len - 1 - j): sum over m > j of h[a + m] · miss[m - j - 1]
        corr = fft.irfft(fft.rfft(miss[:, ::-1], n_corr, axis=-1) * spec_tail, n_corr, axis=-1)[:, a - 1 : 2 * a - 1]
        d[:k, :a] = corr[:k]
        if 2 * a <= old_len:
            d[:k, old_len - a :] = corr[k:, ::-1]
        else:  # a filter longer than half the circle: outputs near the middle take both ends' corrections
            d[:k, a:] = 0
            d[:k, old_len - a :] += corr[k:, ::-1]
        spec += fft.rfft(d[:k], axis=-1).astype(cdt, copy=False)
        out[c0 : c0 + k] = _resampled(spec, old_len, new_len, cut)  # gain in the spectra
    return out


@functools.lru_cache(maxsize=16)
def _pass_spectra(h_bytes: bytes, n_h: int, length: int, dtype: str) -> tuple[np.ndarray, np.ndarray, int]:
    """For :func:`filter_resample_fft`: the spectrum of ``h`` centred on sample 0 of a circle of ``length``,
    that of its one-sided tail ``h[a + 1:]`` for the correction's convolutions, and their length; both carry
    resampling's gain (``new_len / length`` and irfft's ``1 / new_len``: ``1 / length``)."""
    from scipy import fft

    h = np.frombuffer(h_bytes, np.float64, n_h)
    a = (n_h - 1) // 2
    centred = np.zeros(length)
    centred[: a + 1] = h[a:]
    centred[length - a :] += h[:a]  # a filter longer than the circle's half: its two tails overlap there
    cdt = np.result_type(np.dtype(dtype), np.complex64)
    n_corr = fft.next_fast_len(2 * a - 1, real=True)
    spec_h = (fft.rfft(centred) / length).astype(cdt)
    spec_tail = (fft.rfft(h[a + 1 :], n_corr) / length).astype(cdt)
    spec_h.setflags(write=False)
    spec_tail.setflags(write=False)
    return spec_h, spec_tail, n_corr


def resampled_raw(raw, data: np.ndarray, sfreq: float):
    """A new loaded :class:`mne.io.RawArray` holding ``data`` at ``sfreq`` Hz, with the rest taken from ``raw``.

    Its info is ``raw``'s, with ``sfreq`` and low-pass updated as MNE's ``Raw.resample`` does; the first sample
    (scaled by the rate ratio), the annotations and ``info['temp']`` are kept.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording before resampling.
    data : ndarray, shape (n_channels, n_new)
        Its resampled samples (e.g. from :func:`resample_fft`), in V.
    sfreq : float
        The new sampling rate, in Hz.

    Returns
    -------
    mne.io.RawArray
        The resampled recording.

    Examples
    --------
    >>> import mne
    >>> info = mne.create_info(["Cz", "Pz"], 250.0, "eeg")
    >>> raw = mne.io.RawArray(np.random.default_rng(0).normal(size=(2, 1000)) * 1e-5, info, verbose=False)
    >>> new = resampled_raw(raw, resample_fft(raw.get_data(), 250.0, 100.0), 100.0)
    >>> new.info["sfreq"], int(new.n_times)
    (100.0, 400)
    """
    import mne

    ratio = sfreq / raw.info["sfreq"]
    info = raw.info.copy()
    with info._unlock():
        lowpass = info.get("lowpass")
        info["lowpass"] = min(np.inf if lowpass is None else lowpass, sfreq / 2.0)
        info["sfreq"] = float(sfreq)
    out = mne.io.RawArray(data, info, first_samp=int(np.round(raw.first_samp * ratio)), copy=None, verbose="error")
    out.set_annotations(raw.annotations, verbose="error")
    return out


def resample_in_place(raw, data: np.ndarray, sfreq: float) -> None:
    """Make ``raw`` hold ``data`` at ``sfreq`` Hz, in place, as MNE's ``Raw.resample`` leaves it.

    First and last samples are scaled by the rate ratio, info's ``sfreq`` and low-pass (at most the new
    Nyquist) updated; annotations, which are in seconds, are kept. Unlike :func:`resampled_raw` no new Raw is
    built: no copy of ``info``, the montage or the annotations.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording: one run, loaded; modified in place.
    data : ndarray, shape (n_channels, n_new)
        Its resampled samples (e.g. from :func:`resample_fft`), in V.
    sfreq : float
        The new sampling rate, in Hz.

    Raises
    ------
    ValueError
        ``raw`` is several joined runs, or ``data`` has another number of channels.

    Examples
    --------
    >>> import mne
    >>> info = mne.create_info(["Cz", "Pz"], 250.0, "eeg")
    >>> raw = mne.io.RawArray(np.random.default_rng(0).normal(size=(2, 1000)) * 1e-5, info, verbose=False)
    >>> resample_in_place(raw, resample_fft(raw.get_data(), 250.0, 100.0), 100.0)
    >>> raw.info["sfreq"], int(raw.n_times)
    (100.0, 400)
    """
    if len(raw._raw_lengths) != 1 or data.shape[0] != len(raw.ch_names):
        raise ValueError(f"in-place resampling needs one run of {len(raw.ch_names)} channels, got {data.shape}")
    ratio = float(sfreq) / float(raw.info["sfreq"])
    n_new = data.shape[1]
    raw._cropped_samp = int(np.round(raw._cropped_samp * ratio))
    raw._first_samps = np.round(raw._first_samps * ratio).astype(int)
    raw._last_samps = np.array(raw._first_samps) + n_new - 1
    raw._data = data
    lowpass = raw.info.get("lowpass")
    with raw.info._unlock():
        raw.info["lowpass"] = min(np.inf if lowpass is None else lowpass, sfreq / 2.0)
        raw.info["sfreq"] = float(sfreq)
