"""Long EEG recordings through the recipe in bounded memory, with the same result as in memory.

:func:`~neurokit.preprocessing.eeg.windows.preprocess_raw` holds a whole recording as float64 (MNE's preloaded
form) and its resampled copy; a 2-hour, 64-channel recording peaked at 3× its float64 size. Here a recording
goes through three passes over scratch files on disk (channel-major float64):

1. time chunks (``chunk_s``) are read from the file with a margin of the filters' length on each side,
   checked (non-finite samples, flat or > 1 V channels), average-referenced and filtered; the chunk without
   its margins is written out. FIR filters only reach ``len(h)`` samples, so away from the recording's
   ends the margins make each chunk's result that of the whole recording; at the ends the odd reflection
   is the recording's own, as in memory.
2. each channel is resampled on its own (MNE's FFT method needs a channel's whole length: this is the one
   place memory grows with duration, by one channel's samples);
3. the windows (:func:`~neurokit.preprocessing.eeg.windows.window_plan`) are cut in batches and handed to the
   caller, who writes them to a store.

The recipe's other order (``resample_first``: TUEG) resamples in pass 2 and filters in pass 3, again with
margins. Results equal the in-memory path to float64 rounding (``tests/test_stream.py``); memory is flat in
the recording's length up to one channel (``benchmarks/eeg_memory.py``). Scratch space on disk: about
2.25× the recording's float64 size, removed when done.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import numpy as np

from neurokit.cards.recipes import EEGRecipe
from neurokit.io.notes import raw_notes
from neurokit.preprocessing.eeg.filtering import (
    apply_filters,
    one_run_without_stim,
    resample_fft,
    resample_plan,
    resampled_raw,
    segment_bounds,
)
from neurokit.preprocessing.eeg.windows import (
    WindowPlan,
    Windows,
    band_plan,
    check_amplitudes,
    check_rate,
    check_units,
    cut_windows,
    filter_kernels,
    record_band,
    select_channels,
    window_plan,
)

#: recordings above this size as float64 samples are streamed by ``prepare`` (256 MiB: 44 min of 64 channels at 160 Hz)
STREAM_ABOVE_BYTES = 256 * 2**20
#: seconds of recording per chunk in pass 1 and per batch of windows in pass 3
CHUNK_S = 60.0
#: windows handed over per batch
BATCH_WINDOWS = 256


class RowFile:
    """A ``(n_rows, n_cols)`` float64 array in a scratch file, row after row, read and written in pieces.

    It uses ``pread``/``pwrite`` (no memory map: pages read stay out of the process's resident memory).
    :meth:`close` deletes the file.

    Parameters
    ----------
    path : str or Path
        The scratch file (created, or truncated).
    n_rows, n_cols : int
        Shape of the array.

    Raises
    ------
    ScratchError
        The file cannot be created or sized (full disk, permissions).
    OSError
        A short read.

    Examples
    --------
    >>> import tempfile, os
    >>> f = RowFile(os.path.join(tempfile.mkdtemp(), "x.f8"), 2, 4)
    >>> f.write(1, np.ones((2, 2)))
    >>> f.read(0, 4).tolist()
    [[0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]]
    >>> f.close()
    """

    def __init__(self, path: str | Path, n_rows: int, n_cols: int) -> None:
        self.path, self.n_rows, self.n_cols = Path(path), int(n_rows), int(n_cols)
        self.fd = scratch_call(os.open, self.path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600, where=self.path)
        scratch_call(os.ftruncate, self.fd, self.n_rows * self.n_cols * 8, where=self.path)

    def _offset(self, row: int, col: int) -> int:
        return (row * self.n_cols + col) * 8

    def write(self, col: int, block: np.ndarray, rows: range | None = None) -> None:
        """Write ``block`` (len(rows), k) at columns ``col … col + k`` of ``rows`` (default all)."""
        rows = range(self.n_rows) if rows is None else rows
        for i, r in enumerate(rows):
            buf = memoryview(np.ascontiguousarray(block[i], dtype="<f8")).cast("B")  # type: ignore[arg-type]  # numpy stubs: buffer only on 3.12+
            off = self._offset(r, col)
            while len(buf):
                done = scratch_call(os.pwrite, self.fd, buf, off, where=self.path)
                buf, off = buf[done:], off + done

    def read(self, c0: int, c1: int, rows: range | None = None) -> np.ndarray:
        """Columns ``c0 … c1`` of ``rows`` (default all) as a new float64 array."""
        rows = range(self.n_rows) if rows is None else rows
        out = np.empty((len(rows), c1 - c0), dtype="<f8")
        for i, r in enumerate(rows):
            view, off = memoryview(out[i]).cast("B"), self._offset(r, c0)
            while len(view):
                got = os.preadv(self.fd, [view], off)
                if got <= 0:
                    raise OSError(f"{self.path}: short read")
                view, off = view[got:], off + got
        return out

    def close(self) -> None:
        os.close(self.fd)
        self.path.unlink(missing_ok=True)


def streamable(raw, recipe: EEGRecipe, limit_bytes: float = STREAM_ABOVE_BYTES) -> bool:
    """Whether ``raw`` (as read, not loaded) is long enough to stream and plain enough for it.

    Plain enough: one run without the time gaps of an EDF+D file (``edge`` marks of joined runs are fine), no
    projectors or stim channel, only EEG channels when the recipe average-references; not with EOG removal or
    excluded channels (processed in memory), bipolar derivations or windows resampled one by one.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording as read (not loaded).
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    limit_bytes : float
        Stream only recordings whose float64 samples take more than this many bytes (default 256 MiB).

    Returns
    -------
    bool
        True when :func:`stream_windows` applies.

    Examples
    --------
    >>> import mne
    >>> raw = mne.io.RawArray(np.zeros((2, 100)), mne.create_info(["Cz", "Pz"], 100.0, "eeg"), verbose=False)
    >>> streamable(raw, recipe=None)  # loaded, and small
    False
    """
    if raw.preload or raw.n_times * len(raw.ch_names) * 8 <= limit_bytes:
        return False
    if (
        recipe.eog_removal != "none" or recipe.exclude_channels or recipe.bipolar or recipe.resample_windows
    ):  # ICA / regression fit the whole recording; windows resampled one by one are cut in memory
        return False
    if not one_run_without_stim(raw) or len(raw_notes(raw).segments or []) > 1 or raw.info["projs"]:
        return False
    if recipe.reference == "average":
        bads = set(raw.info["bads"])
        kept = [c for c in (recipe.channels or raw.ch_names) if c not in bads]
        types = dict(zip(raw.ch_names, raw.get_channel_types()))
        return all(types.get(c) == "eeg" for c in kept)
    return True


def _stretches(raw) -> list[tuple[int, int, bool]]:
    """``(start, stop, filtered)`` spans tiling the recording as MNE's ``Raw.filter`` treats it: stretches
    between ``edge`` marks (joined runs) are filtered apart; ``bad_acq_skip`` spans are left unfiltered."""
    out, at = [], 0
    for a, b in segment_bounds(raw):
        if a > at:
            out.append((at, a, False))
        out.append((a, b, True))
        at = b
    if at < raw.n_times:
        out.append((at, raw.n_times, False))
    return out


def scratch_call(fn, *args, where: Path, **kwargs):
    """Run a write on the scratch side, an OS error there being the output's (full disk, permissions).

    Parameters
    ----------
    fn : callable
        The call (``os.pwrite``, ``os.ftruncate``…).
    *args, **kwargs
        Its arguments.
    where : Path
        The scratch file or folder, named in the error.

    Returns
    -------
    object
        What ``fn`` returns.

    Raises
    ------
    ScratchError
        ``fn`` raised an :class:`OSError` (never the recording's fault); names ``where``.

    Examples
    --------
    >>> from pathlib import Path
    >>> scratch_call(max, 1, 2, where=Path("scratch"))
    2
    """
    from neurokit._utils.errors import ScratchError

    try:
        return fn(*args, **kwargs)
    except OSError as exc:
        raise ScratchError(
            f"{where}: cannot write scratch data beside the output ({exc.strerror or exc})", errno=exc.errno
        ) from exc


def _chunked(read, dest: RowFile, n: int, spans, kernels: list[np.ndarray], step: int, before=None) -> None:
    """One pass over ``n`` samples in chunks of ``step``: ``read(lo, hi)`` → (C, hi − lo) float64, then
    ``before(x, core, s)`` (``core``: the chunk without margins, from sample ``s``), the FIR ``kernels`` over
    the chunk and margins of their total length inside its span (``spans`` from :func:`_stretches`: unfiltered
    spans get none), and the chunk written to ``dest``. Away from a span's ends the margins make each chunk's filtered
    samples those of the whole span; at its ends the reflection is the span's own, as in memory."""
    margin = sum(len(h) for h in kernels)
    for a, b, filtered in spans:
        m = margin if filtered else 0
        for s in range(a, b, step):
            e = min(b, s + step)
            lo, hi = max(a, s - m), min(b, e + m)
            x = read(lo, hi)
            if before is not None:
                before(x, x[:, s - lo : e - lo], s)
            if filtered:
                apply_filters(x, kernels)
            dest.write(s, x[:, s - lo : e - lo])


def stream_windows(
    raw,
    recipe: EEGRecipe,
    workdir: str | Path,
    write: Callable[[Windows], None],
    *,
    source: str | None = None,
    chunk_s: float = CHUNK_S,
    make_workdir: bool = True,
    on_samples: Callable[[int, np.ndarray], None] | None = None,
) -> tuple[dict, list[str], int]:
    """Preprocess ``raw`` (read, not loaded) and cut its windows in bounded memory.

    Each batch of windows (a :class:`Windows`) goes to ``write`` in the order
    :func:`~neurokit.preprocessing.eeg.windows.make_windows` gives them. Scratch files go to ``workdir``.

    Parameters
    ----------
    raw : mne.io.BaseRaw
        The recording as read (not loaded); :func:`streamable` holds for it.
    recipe : EEGRecipe
        The card's preprocessing recipe (:class:`~neurokit.cards.recipes.EEGRecipe`).
    workdir : str or Path
        Folder for the scratch files (beside the output).
    write : callable
        ``write(windows)``, called with each batch of windows.
    source : str, optional
        The recording's name (its file), for error messages; default the name ``raw`` was read under.
    chunk_s : float
        Seconds of signal read and filtered at a time.
    make_workdir : bool
        Create ``workdir`` if it does not exist (its scratch files are removed afterwards).
    on_samples : callable, optional
        ``on_samples(start, chunk)`` sees the samples as read, chunk by chunk (as ``preprocess_raw``'s).

    Returns
    -------
    applied : dict
        What was applied, as :func:`~neurokit.preprocessing.eeg.windows.preprocess_raw` records it.
    ch_names : list of str
        The channels of the windows.
    n_rejected : int
        Windows dropped by the amplitude bound.

    Raises
    ------
    RecordingDropped, DataFileError, ChannelMismatchError
        As :func:`~neurokit.preprocessing.eeg.windows.preprocess_raw` and
        :func:`~neurokit.preprocessing.eeg.windows.make_windows`.
    ScratchError
        The scratch files cannot be written.

    Examples
    --------
    >>> applied, ch_names, n_rejected = stream_windows(raw, recipe, "out/.scratch", parts.append)  # doctest: +SKIP
    """
    notes = raw_notes(raw)
    source = source or notes.source_or()
    applied = notes.applied
    sf0 = raw.info["sfreq"]
    select_channels(raw, recipe, source, applied)
    check_rate(sf0, recipe, source)
    ch_names, n = list(raw.ch_names), raw.n_times
    resample = abs(sf0 - recipe.sfreq) > 1e-6
    late = resample and recipe.resample_first  # TUEG order: resample, then filter
    sf_filter = recipe.sfreq if late else sf0
    if recipe.reference == "average":
        applied["reference"] = "average"
    if late:
        applied["resampled"] = [sf0, recipe.sfreq]
    l_freq, h_freq, freqs = band_plan(sf_filter, recipe, source)
    kernels = filter_kernels(sf_filter, l_freq, h_freq, freqs)
    workdir = Path(workdir)
    if make_workdir:
        scratch_call(lambda: workdir.mkdir(parents=True, exist_ok=True), where=workdir)
    files = _ScratchFiles(workdir, f"{os.getpid()}-{id(raw):x}", len(ch_names))
    try:
        # pass 1: checks, reference and (PhysioNet order) the filters, chunk by chunk
        src = files.new("a", n)
        step = max(int(round(chunk_s * sf0)), 1)
        _first_pass(raw, src, recipe, [] if late else kernels, step, ch_names, source, on_samples)
        n_src = n
        # pass 2: each channel resampled over its whole length
        if resample:
            n_src = resample_plan(n, sf0, recipe.sfreq)[0]
            out = files.new("b", n_src)
            for r in range(len(ch_names)):
                out.write(0, resample_fft(src.read(0, n, range(r, r + 1)), sf0, recipe.sfreq), range(r, r + 1))
            files.drop(src)
            src = out
            applied.setdefault("resampled", [sf0, recipe.sfreq])
        record_band(applied, l_freq, h_freq, freqs)
        # a one-channel stand-in of the processed recording: its stretches and its windows
        stand_in = resampled_raw(raw.copy().pick(ch_names[:1]), np.zeros((1, n_src)), recipe.sfreq)
        if late and kernels:  # pass 3 (TUEG order): the filters at the new rate, stretch by stretch
            out = files.new("c", n_src)
            _chunked(src.read, out, n_src, _stretches(stand_in), kernels, max(int(round(chunk_s * recipe.sfreq)), 1))
            files.drop(src)
            src = out
        plan = window_plan(stand_in, recipe, source=source)
        if plan.n_bad_annotation:  # read back (and removed) by prepare's provenance
            applied["n_bad_annotation"] = plan.n_bad_annotation
        del stand_in
        # last pass: the windows, in batches
        n_rej = _write_batches(src, plan, recipe, ch_names, chunk_s, write)
    finally:
        files.close_all()
    applied["streamed_chunk_s"] = chunk_s
    return applied, ch_names, n_rej


class _ScratchFiles:
    """The scratch :class:`RowFile` s of one streamed recording, all closed (and removed) at the end."""

    def __init__(self, workdir: Path, tag: str, n_rows: int) -> None:
        self.workdir, self.tag, self.n_rows = workdir, tag, n_rows
        self.files: list[RowFile] = []

    def new(self, name: str, n_cols: int) -> RowFile:
        """A new scratch file of ``n_cols`` columns."""
        f = RowFile(self.workdir / f"{self.tag}-{name}.f64", self.n_rows, n_cols)
        self.files.append(f)
        return f

    def drop(self, f: RowFile) -> None:
        """Close and remove one scratch file."""
        f.close()
        self.files.remove(f)

    def close_all(self) -> None:
        """Close and remove every scratch file left."""
        for f in list(self.files):
            f.close()


def _first_pass(
    raw, dest: RowFile, recipe: EEGRecipe, kernels, step: int, ch_names: list[str], source, on_samples=None
) -> None:
    """Pass 1 into ``dest``: finite and amplitude checks, ``on_samples``, average reference and the filters
    (``kernels``)."""
    from neurokit.io.eeg import check_finite

    C = len(ch_names)
    maxs, mins = np.full(C, -np.inf), np.full(C, np.inf)
    sampled: list[np.ndarray] = []  # a few samples of every chunk, for the units check

    def first_pass(x, core, start):
        nonlocal maxs, mins
        check_finite(core, ch_names, source)
        sampled.append(core[:, :: max(1, core.shape[1] // 2000)].copy())
        if on_samples is not None:
            on_samples(start, core)
        maxs, mins = np.maximum(maxs, core.max(axis=1)), np.minimum(mins, core.min(axis=1))
        if recipe.reference == "average":
            x -= x.mean(axis=0, keepdims=True)

    _chunked(
        lambda lo, hi: raw.get_data(start=lo, stop=hi),
        dest,
        raw.n_times,
        _stretches(raw),
        kernels,
        step,
        before=first_pass,
    )
    check_amplitudes(maxs, mins, ch_names, source)
    if sampled:
        check_units(np.concatenate(sampled, axis=1), ch_names, source)


def _write_batches(
    src: RowFile,
    plan: WindowPlan,
    recipe: EEGRecipe,
    ch_names: list[str],
    chunk_s: float,
    write: Callable[[Windows], None],
) -> int:
    """Cut the planned windows from ``src`` in batches handed to ``write``; returns the windows rejected."""
    n_rej, win = 0, plan.win
    i, span = 0, max(int(round(chunk_s * recipe.sfreq)), win)
    while i < len(plan.starts):
        j, lo, top = i + 1, int(plan.starts[i]), int(plan.starts[i])  # lo, top: first and last start so far
        while j < len(plan.starts) and j - i < BATCH_WINDOWS:
            s = int(plan.starts[j])
            if max(top, s) - min(lo, s) > span:
                break
            lo, top, j = min(lo, s), max(top, s), j + 1
        starts = plan.starts[i:j]
        hi = top + win
        patches, ok = cut_windows(src.read(lo, hi), starts, win, recipe, offset=lo)
        part = WindowPlan(starts=starts, labels=plan.labels[i:j], onsets=plan.onsets[i:j], win=win, notes=[])
        w = part.windows(patches, ok, ch_names)
        n_rej += w.n_rejected
        write(w)
        i = j
    return n_rej
