"""A labelled EEG store as MNE ``Epochs``: what MOABB pipelines, braindecode and MNE's decoders read.

braindecode builds its datasets from MNE objects (``braindecode.datasets.create_from_mne_epochs``, or
``create_from_X_y(epochs.get_data(), y, ...)``); :func:`to_epochs` gives the store's windows in volts with one
metadata row per window (``subject``, ``session``, ``run``, ``onset``, ``target``), so a neurokit store serves
those tools without neurokit's dataset classes, and :class:`~neurokit.pipelines.estimator.FoundationClassifier`
reads the same object back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from neurokit._utils.errors import StoreError

#: the store's unit when its recipe gives no ``scale`` (CBraMod's 100 µV)
DEFAULT_SCALE = 1e4


def to_epochs(store: str | Path | Sequence[str | Path], *, subjects: Sequence[str] | None = None):
    """The labelled windows of an EEG store as :class:`mne.EpochsArray` in volts.

    Parameters
    ----------
    store : path or list of paths
        Labelled EEG patch store(s) of ``(C, N, 200)`` windows (one card and channel set).
    subjects : list of str, optional
        Only these subjects (default: every labelled window).

    Returns
    -------
    mne.EpochsArray
        ``(n_windows, C, N·P)`` float64 volts (the stored values divided by the recipe's ``scale``, 1e4 for
        CBraMod's unit of 100 µV) at the store's ``sfreq``, channel names and the standard 10-05 montage where
        the names are in it; ``events[:, 2]`` = label + 1 with ``event_id`` from the class names; ``metadata``
        with ``subject``, ``session``, ``run``, ``onset`` (s) and ``target`` (the label).

    Raises
    ------
    StoreError
        The store is not an EEG store, holds no labelled window (of ``subjects``) or names no rate.

    Examples
    --------
    >>> ep = to_epochs("runs/mi.h5", subjects=["S001"])  # doctest: +SKIP
    >>> ep.metadata.columns.tolist()  # doctest: +SKIP
    ['subject', 'session', 'run', 'onset', 'target']
    """
    import mne
    import pandas as pd

    from neurokit.data.dataset import PatchDataset
    from neurokit.geometry.channels import montage_1005

    ds = PatchDataset(store, labelled=True, subjects=list(subjects) if subjects is not None else None)
    info = ds.info
    first = str(ds.stores[0].path) if ds.stores else str(store)
    if (info.modality or "eeg") != "eeg":
        raise StoreError(f"{first}: holds {info.modality} samples; only EEG stores become MNE Epochs")
    if len(ds) == 0:
        raise StoreError(f"{first}: no labelled window{f' of subjects {list(subjects)}' if subjects else ''}")
    if not info.sfreq:
        raise StoreError(f"{first}: the store names no sampling rate (sfreq)")
    xs = []
    for si, st in enumerate(ds.stores):
        idx = np.sort(np.asarray([i for s, i in ds.index if s == si], dtype=np.int64))
        if len(idx):
            xs.append(st.patches(idx))
    x = np.concatenate(xs).astype(np.float64)
    scale = float((info.recipe or {}).get("scale") or DEFAULT_SCALE)
    x = x.reshape(x.shape[0], x.shape[1], -1) / scale
    labels = np.asarray(ds.labels, dtype=np.int64)
    names = list(info.label_names or [str(k) for k in range(int(labels.max()) + 1)])
    ch_names = list(info.ch_names or [f"EEG{i + 1:03d}" for i in range(x.shape[1])])
    minfo = mne.create_info(ch_names, float(info.sfreq), "eeg")
    events = np.c_[np.arange(len(x)) * x.shape[-1], np.zeros(len(x), dtype=int), labels + 1]
    meta = pd.DataFrame(
        {
            "subject": ds.meta("subject").astype(str),
            "session": ds.meta("session").astype(str),
            "run": ds.meta("run").astype(str),
            "onset": ds.meta("onset").astype(float),
            "target": labels,
        }
    )
    present = sorted(set(labels.tolist()))
    epochs = mne.EpochsArray(
        x, minfo, events=events, event_id={names[k]: k + 1 for k in present}, metadata=meta, verbose="error"
    )
    montage = montage_1005()
    if set(ch_names) <= set(montage.ch_names):
        epochs.set_montage(montage, verbose="error")
    return epochs
