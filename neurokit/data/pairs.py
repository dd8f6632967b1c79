"""fMRI ↔ stimulus pairs: which stimulus window goes with each fMRI tubelet (at a lag), and the torch dataset
that yields ``(x, (video, audio))``. Shared by CLIP training and retrieval so both see the same samples."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from neurokit._utils.errors import ConfigError, DataFileError

logger = logging.getLogger("neurokit")


SEGMENTS = ("all", "first_half", "second_half")


#: options of the "clip" objective that choose data, not architecture (kept out of the model config)
DATA_KEYS = ("stimuli", "segments")


@dataclass
class Pairs:
    """fMRI samples matched to stimulus windows (made by :func:`pair_samples`); every array has one entry per pair.

    Attributes
    ----------
    sample : numpy.ndarray of int
        Index of the fMRI sample in its dataset.
    stim : numpy.ndarray of int
        Which stimulus store (position in the list given).
    window : numpy.ndarray of int
        Window index in that store.
    subject, run, hemi : numpy.ndarray of str
        The fMRI sample's subject, run and hemisphere.
    onset : numpy.ndarray of float
        The fMRI tubelet's onset, s.

    Examples
    --------
    >>> a = np.arange(3)
    >>> p = Pairs(a, a * 0, a, a.astype(str), a.astype(str), np.array(["L"] * 3), a * 1.5)
    >>> len(p), p.select(a > 0).onset.tolist()
    (3, [1.5, 3.0])
    """

    sample: np.ndarray
    stim: np.ndarray
    window: np.ndarray
    subject: np.ndarray
    run: np.ndarray
    hemi: np.ndarray
    onset: np.ndarray

    def __len__(self) -> int:
        return len(self.sample)

    def select(self, keep: np.ndarray) -> "Pairs":
        """The pairs where ``keep`` (a bool mask or indices) selects them.

        Parameters
        ----------
        keep : numpy.ndarray
            A bool mask of ``len(self)`` or pair indices.

        Returns
        -------
        Pairs
        """
        return Pairs(**{k: getattr(self, k)[keep] for k in self.__dataclass_fields__})


def open_stimuli(stimuli) -> list:
    """Open the stimulus stores of a CLIP run, one per fMRI run, checking that they fit together.

    Parameters
    ----------
    stimuli : str | pathlib.Path | StimulusStore | sequence of them
        Stimulus stores written by ``neuro embed-stimuli`` (paths or opened
        :class:`~neurokit.stimuli.store.StimulusStore` objects).

    Returns
    -------
    list of StimulusStore

    Raises
    ------
    ConfigError
        No store given; two stores of the same run; stores with different embedding sizes.

    Examples
    --------
    >>> stores = open_stimuli(["stim_run1.h5", "stim_run2.h5"])  # doctest: +SKIP
    """
    from neurokit.stimuli.store import StimulusStore

    if stimuli is None or (isinstance(stimuli, (list, tuple)) and not stimuli):
        raise ConfigError("the clip model needs stimulus store(s) from `neuro embed-stimuli` (stimuli='stim.h5')")
    if isinstance(stimuli, (str, Path, StimulusStore)):
        stimuli = [stimuli]
    out = [s if isinstance(s, StimulusStore) else StimulusStore(s) for s in stimuli]
    runs = [s.run for s in out]
    if len(set(runs)) != len(runs):
        raise ConfigError(f"several stimulus stores for the same run: {[(str(s.path), s.run) for s in out]}")
    dims = {(s.video.shape[1], s.audio.shape[1]) for s in out}
    if len(dims) > 1:
        raise ConfigError(
            f"stimulus stores with different embedding sizes {sorted(dims)}: embed every movie with the same encoders"
        )
    return out


def in_segment(onsets: np.ndarray, clips, window_s: float, segments: str) -> np.ndarray:
    """Windows entirely inside the first or second half of a clip (``segments``), or all (``"all"``).

    The unseen-segments split of the paper: train on the first half of each clip, test on the second.

    Parameters
    ----------
    onsets : numpy.ndarray, shape (n,)
        Window onsets, s.
    clips : list of (float, float) | None
        Each clip's start and end, s; ``None`` or empty: one clip from the first onset to the last window's end.
    window_s : float
        Window length, s.
    segments : {"all", "first_half", "second_half"}
        Which part of each clip to keep.

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
        Whether each window lies wholly inside the chosen half of a clip.

    Raises
    ------
    ConfigError
        An unknown ``segments``.

    Examples
    --------
    >>> in_segment(np.array([0.0, 4.0, 6.0]), [(0.0, 10.0)], 2.0, "first_half").tolist()
    [True, False, False]
    """
    if segments not in SEGMENTS:
        raise ConfigError(f"segments={segments!r}; allowed: {', '.join(SEGMENTS)}")
    onsets = np.asarray(onsets, dtype=float)
    if segments == "all":
        return np.ones(len(onsets), dtype=bool)
    keep = np.zeros(len(onsets), dtype=bool)
    for lo, hi in clips or [[float(onsets.min()), float(onsets.max() + window_s)]]:
        mid = 0.5 * (lo + hi)
        a, b = (lo, mid) if segments == "first_half" else (mid, hi)
        keep |= (onsets >= a - 1e-6) & (onsets + window_s <= b + 1e-6)
    return keep


def pair_samples(ds, stimuli: Sequence, lag_s: float, *, segments: str = "all", keep_rest: bool = False) -> Pairs:
    """Match every fMRI sample of ``ds`` (a :class:`~neurokit.data.dataset.PatchDataset`) with the window of
    its run's stimulus store that starts ``lag_s`` seconds before the sample's onset.

    Samples whose window would start before the movie are dropped; so are rest windows (unless
    ``keep_rest``) and windows outside ``segments``.

    Parameters
    ----------
    ds : PatchDataset
        The fMRI samples (with ``run``, ``onset``, ``subject`` and ``hemi`` meta columns, and a TR).
    stimuli : sequence of StimulusStore
        One store per fMRI run (:func:`open_stimuli`).
    lag_s : float
        The haemodynamic lag, s: a sample at onset ``t`` pairs with the window starting at ``t - lag_s``.
    segments : {"all", "first_half", "second_half"}
        Keep only windows in that half of each clip (:func:`in_segment`).
    keep_rest : bool
        Keep the windows the stimulus store marks as rest.

    Returns
    -------
    Pairs
        One entry per kept fMRI sample.

    Raises
    ------
    DataFileError
        The fMRI store states no TR (onsets in frames); an fMRI run without a stimulus store of that run;
        a stimulus shorter than the fMRI run; window onsets (hop) that do not line up with the fMRI onsets.

    Examples
    --------
    >>> pairs = pair_samples(ds, open_stimuli("stim_run1.h5"), lag_s=6.0)  # doctest: +SKIP
    """
    info = ds.info
    src = ", ".join(str(s.path) for s in ds.stores)
    if not info.has_tr:
        raise DataFileError(
            f"{src}: the fMRI store has no TR (its files state none; onsets are frame counts), so frames cannot be "
            "matched to stimulus seconds; write the store from files that state their TR (CIFTI SeriesAxis step, "
            "GIFTI TimeStep)"
        )
    runs = ds.meta("run").astype(str)
    onset = ds.meta("onset").astype(float)
    by_run = {s.run: i for i, s in enumerate(stimuli)}
    missing = sorted(set(runs) - set(by_run))
    if missing:
        raise DataFileError(
            f"fMRI store(s) {src} hold run(s) {missing} but the stimulus store(s) are for run(s) "
            f"{sorted(by_run)} ({', '.join(str(s.path) for s in stimuli)}): fMRI and stimuli come from different runs; "
            f"embed the movie of each run (`neuro embed-stimuli MOVIE` with run={missing[0]}, out=stim_run{missing[0]}.h5)"
        )
    stim_i = np.array([by_run[r] for r in runs], dtype=int)
    window = np.full(len(runs), -1)
    keep = np.zeros(len(runs), dtype=bool)
    tr = float(info.tr)
    for si, st in enumerate(stimuli):
        sel = np.flatnonzero(stim_i == si)
        if not len(sel):
            continue
        t0 = onset[sel] - lag_s
        last = float(onset[sel].max())
        if last - lag_s + st.window_s > st.duration_s + 1e-3:
            raise DataFileError(
                f"{st.path}: the stimulus ({st.source}, {st.duration_s:.1f} s) is shorter "
                f"than fMRI run {st.run!r} of {src}: its tubelet at {last:g} s needs the {st.window_s:g}-s window "
                f"starting at {last - lag_s:g} s (lag {lag_s:g} s); give the full movie of that run, or crop the fMRI"
            )
        valid = t0 >= -1e-6
        idx = st.window_index(t0)
        off_grid = valid & (idx < 0)
        if off_grid.any():
            raise DataFileError(
                f"{st.path}: window onsets every {st.hop_s:g} s do not line up with the fMRI onsets of {src} "
                f"(TR {tr:g} s, lag {lag_s:g} s; e.g. {t0[off_grid][0]:g} s); embed the stimuli with hop= equal to the TR"
            )
        ok = valid & (idx >= 0)
        if not keep_rest:
            ok[ok] &= ~st.rest[idx[ok]]
        if segments != "all":
            ok[ok] &= in_segment(st.onsets[idx[ok]], st.clips, st.window_s, segments)
        window[sel[ok]] = idx[ok]
        keep[sel[ok]] = True
    k = np.flatnonzero(keep)
    return Pairs(
        sample=k,
        stim=stim_i[k],
        window=window[k],
        subject=ds.meta("subject").astype(str)[k],
        run=runs[k],
        hemi=ds.meta("hemi").astype(str)[k],
        onset=onset[k],
    )


class PairedDataset(torch.utils.data.Dataset):
    """Items ``(x, (video, audio))``: the fMRI tubelet ``(T, N, V)`` float32 and its window's frozen
    embeddings ``(D_video,)``, ``(D_audio,)`` float32.

    Parameters
    ----------
    ds : PatchDataset
        The fMRI samples.
    stimuli : sequence of StimulusStore
        The stimulus stores ``pairs`` index (:func:`open_stimuli`).
    pairs : Pairs
        Which window goes with which sample (:func:`pair_samples`).

    Examples
    --------
    >>> stim = open_stimuli("stim_run1.h5")  # doctest: +SKIP
    >>> paired = PairedDataset(ds, stim, pair_samples(ds, stim, 6.0))  # doctest: +SKIP
    >>> x, (video, audio) = paired[0]  # doctest: +SKIP
    """

    def __init__(self, ds, stimuli: Sequence, pairs: Pairs) -> None:
        self.ds, self.pairs = ds, pairs
        self.video = [torch.from_numpy(np.asarray(s.video, np.float32)) for s in stimuli]
        self.audio = [torch.from_numpy(np.asarray(s.audio, np.float32)) for s in stimuli]

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, k: int):
        p = self.pairs
        x, _ = self.ds[int(p.sample[k])]
        s, w = int(p.stim[k]), int(p.window[k])
        return x, (self.video[s][w], self.audio[s][w])
