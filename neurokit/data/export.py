"""A labelled EEG store as MNE ``Epochs``: what MOABB pipelines, braindecode and MNE's decoders read.

braindecode builds its datasets from MNE objects (``braindecode.datasets.create_from_mne_epochs``, or
``create_from_X_y(epochs.get_data(), y, ...)``); :func:`to_epochs` gives the store's windows in volts with one
metadata row per window (``subject``, ``session``, ``run``, ``onset``, ``target``), so a neurokit store serves
those tools without neurokit's dataset classes, and :class:`~neurokit.training.estimator.FoundationClassifier`
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
        the names are in it; ``events[:, 2]`` = label + 1 with ``event_id`` from the class names (a regression
        store: every event ``1``, ``event_id={"target": 1}``); ``metadata`` with ``subject``, ``session``, ``run``,
        ``onset`` (s) and ``target`` (the class index, or the float target of a regression store).

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
    raw_labels = np.asarray(ds.labels)
    regression = raw_labels.dtype.kind == "f"  # float targets (SEED-VIG's PERCLOS) stay float
    labels = np.ones(len(raw_labels), dtype=np.int64) if regression else raw_labels.astype(np.int64)
    names = ["target"] if regression else list(info.label_names or [str(k) for k in range(int(labels.max()) + 1)])
    ch_names = list(info.ch_names or [f"EEG{i + 1:03d}" for i in range(x.shape[1])])
    minfo = mne.create_info(ch_names, float(info.sfreq), "eeg")
    events = np.c_[np.arange(len(x)) * x.shape[-1], np.zeros(len(x), dtype=int), labels + (0 if regression else 1)]
    meta = pd.DataFrame(
        {
            "subject": ds.meta("subject").astype(str),
            "session": ds.meta("session").astype(str),
            "run": ds.meta("run").astype(str),
            "onset": ds.meta("onset").astype(float),
            "target": raw_labels.astype(np.float64) if regression else labels,
        }
    )
    if regression:
        epochs = mne.EpochsArray(x, minfo, events=events, event_id={"target": 1}, metadata=meta, verbose="error")
        montage = montage_1005()
        if set(ch_names) <= set(montage.ch_names):
            epochs.set_montage(montage, verbose="error")
        return epochs
    present = sorted(set(labels.tolist()))
    epochs = mne.EpochsArray(
        x, minfo, events=events, event_id={names[k]: k + 1 for k in present}, metadata=meta, verbose="error"
    )
    montage = montage_1005()
    if set(ch_names) <= set(montage.ch_names):
        epochs.set_montage(montage, verbose="error")
    return epochs


def to_braindecode(store: str | Path | Sequence[str | Path], *, subjects: Sequence[str] | None = None):
    """The labelled windows of an EEG store as a braindecode dataset its ``EEGClassifier`` trains on.

    Parameters
    ----------
    store : path or list of paths
        Labelled EEG patch store(s).
    subjects : list of str, optional
        Only these subjects.

    Returns
    -------
    braindecode.datasets.BaseConcatDataset
        One window dataset per stored window (``braindecode.datasets.create_from_mne_epochs`` over
        :func:`to_epochs`: volts, the store's rate and channels), ``description`` with ``subject``, ``session``,
        ``run`` and ``target``; items ``(x (C, T) float32 volts, label, window indices)``.

    Raises
    ------
    StoreError
        As :func:`to_epochs`.
    ImportError
        braindecode is not installed (``pip install braindecode``).

    Examples
    --------
    >>> ds = to_braindecode("runs/mi.h5")  # doctest: +SKIP
    >>> EEGClassifier(EEGNet, module__n_chans=3, module__n_outputs=2, module__n_times=800).fit(ds, y=None)  # doctest: +SKIP
    """
    from braindecode.datasets import create_from_X_y

    ep = to_epochs(store, subjects=subjects)
    x = ep.get_data(copy=False).astype(np.float32)
    meta = ep.metadata.reset_index(drop=True)
    ds = create_from_X_y(
        x,
        meta["target"].to_numpy(),
        drop_last_window=False,
        sfreq=float(ep.info["sfreq"]),
        ch_names=list(ep.ch_names),
        window_size_samples=x.shape[-1],
        window_stride_samples=x.shape[-1],
    )
    desc = meta[["subject", "session", "run", "onset", "target"]]
    for d, (_, row) in zip(ds.datasets, desc.iterrows()):
        # which subject, session and run each window came from (braindecode's splits use it)
        d.set_description(row.to_dict(), overwrite=True)
    return ds


def from_braindecode(
    dataset,
    out: str | Path,
    *,
    label_names: Sequence[str] | None = None,
    scale: float = DEFAULT_SCALE,
    overwrite: bool = False,
) -> Path:
    """Write a braindecode windows dataset (``WindowsDataset`` / ``EEGWindowsDataset`` or their
    ``BaseConcatDataset``) into a neurokit patch store.

    Parameters
    ----------
    dataset : braindecode dataset
        Items ``(x (C, T) volts, target, …)``; ``T`` a multiple of 200 at 200 Hz (resample in braindecode first:
        ``preprocess(ds, [Preprocessor("resample", sfreq=200)])``). Targets: class indices (int), class names
        (str: mapped to ``label_names``, default their sorted set) or regression targets (float, stored as float32;
        whole-number floats are classes only when ``label_names`` is given). Datasets of one concatenation may
        order their channels differently: windows are stored in the first dataset's order, matched by name.
    out : path
        The store to write (``.h5``).
    label_names : list of str, optional
        Class names (default ``"0"``, ``"1"``, … or the sorted string targets; none for regression targets).
    scale : float
        Volts → the store's unit (1e4: CBraMod's 100 µV).
    overwrite : bool
        Replace a store at ``out``.

    Returns
    -------
    Path
        The store: each window's subject, session and run from its dataset's ``description`` (one subject,
        ``"braindecode"``, with a warning, when the descriptions name none: subject splits need them), its onset the
        description's ``onset`` (s, where :func:`to_braindecode` wrote one) plus the window's start sample / 200
        (the window indices braindecode gives).

    Raises
    ------
    StoreError
        A rate other than 200 Hz, a window not a whole number of 200-sample patches, windows of unequal shape,
        datasets with different channel sets, string targets not in ``label_names``, targets mixing strings and
        numbers, or non-finite targets.

    Examples
    --------
    >>> from_braindecode(windows, "bd.h5", label_names=["left", "right"])  # doctest: +SKIP
    """
    import logging

    from neurokit.store.patch_store import PatchStoreWriter

    parts = list(getattr(dataset, "datasets", [dataset]))
    named = any(getattr(p, "description", None) is not None and "subject" in p.description for p in parts)
    if not named:
        logging.getLogger("neurokit").warning(
            "%s: the braindecode descriptions name no subject: every window is stored under subject 'braindecode' "
            "(subject splits need them: set_description({'subject': …}) in braindecode first)",
            out,
        )
    out = Path(out)
    targets = [_braindecode_targets(part) for part in parts]
    kind, classes = _target_kind(out, [t for ts in targets for t in ts], label_names)
    writer = None
    channels: list[str] | None = None
    try:
        for k, part in enumerate(parts):
            sfreq = _braindecode_sfreq(part)
            if sfreq is not None and abs(sfreq - 200.0) > 1e-6:
                raise StoreError(f"{out}: braindecode dataset {k} is at {sfreq:g} Hz; resample it to 200 Hz first")
            desc = getattr(part, "description", None)
            subject = str(desc.get("subject")) if named and desc is not None and "subject" in desc else "braindecode"
            session = str(desc.get("session", "")) if desc is not None else ""
            run = str(desc.get("run", "")) if desc is not None else ""
            # the description's onset (a window exported by to_braindecode is a dataset of its own) plus the window's
            # start inside its dataset
            base = float(desc["onset"]) if desc is not None and "onset" in desc and _is_number(desc["onset"]) else 0.0
            xs, ys, starts = [], [], []
            for i in range(len(part)):
                item = part[i]
                x = np.asarray(item[0], dtype=np.float64)
                inds = item[2] if len(item) > 2 else None  # [window in trial, start sample, stop sample]
                starts.append(base + (float(inds[1]) / 200.0 if inds is not None and len(inds) > 1 else float(i)))
                if x.ndim != 2 or x.shape[1] % 200:
                    raise StoreError(f"{out}: a window of shape {x.shape}; windows must be (C, T), T a multiple of 200")
                xs.append(x.reshape(x.shape[0], -1, 200) * scale)
                ys.append(_encode_target(targets[k][i] if i < len(targets[k]) else item[1], kind, classes))
            if not xs:
                continue
            arr = np.stack(xs).astype(np.float32)
            names = list(getattr(part, "ch_names", None) or _braindecode_channels(part) or [])
            if channels is None:
                channels = names or [f"EEG{i + 1:03d}" for i in range(arr.shape[1])]
            elif names and names != channels:  # realign by name: the store has one channel order
                if sorted(names) != sorted(channels):
                    missing, extra = sorted(set(channels) - set(names)), sorted(set(names) - set(channels))
                    raise StoreError(
                        f"{out}: braindecode dataset {k} has other channels than dataset 0 (missing {missing}, "
                        f"extra {extra}); pick one channel set in braindecode first"
                    )
                arr = arr[:, [names.index(c) for c in channels]]
            if writer is None:
                attrs = dict(modality="eeg", card="braindecode", sfreq=200.0, patch_size=200, units="100 uV",
                             ch_names=channels, recipe={"scale": scale, "window_s": arr.shape[2] * 1.0})  # fmt: skip
                writer = PatchStoreWriter(
                    out, arr.shape[1:], attrs=attrs, overwrite=overwrite, label_dtype=np.dtype(kind).name
                )
            onsets = np.asarray(starts, dtype=np.float64)
            writer.append(arr, np.asarray(ys, dtype=kind), onsets=onsets, subject=subject, session=session, run=run)
        if writer is None:
            raise StoreError(f"{out}: the braindecode dataset holds no window")
        writer.set_attrs(label_names=classes)
        return writer.close()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and np.isfinite(float(v))


def _braindecode_targets(part) -> list:
    """Each window's target, from the dataset's ``y`` when it has one per window (no signal read)."""
    y = getattr(part, "y", None)
    if y is not None and len(y) == len(part):
        return list(y)
    return [part[i][1] for i in range(len(part))]


def _target_kind(out: Path, targets: list, label_names: Sequence[str] | None) -> tuple[type, list[str]]:
    """``(np.int64, class names)`` for class targets (whole numbers, or strings mapped to the classes), or
    ``(np.float32, [])`` for regression targets (any float that is not a whole number)."""
    if any(isinstance(t, str) for t in targets):
        if not all(isinstance(t, str) for t in targets):
            raise StoreError(f"{out}: the braindecode targets mix strings and numbers; give one kind")
        names = list(label_names) if label_names else sorted(set(targets))
        unknown = sorted(set(targets) - set(names))
        if unknown:
            raise StoreError(f"{out}: targets {unknown[:5]} are not in label_names {names}")
        return np.int64, names
    vals = np.asarray(targets, dtype=np.float64) if targets else np.zeros(0)
    if not np.isfinite(vals).all():
        raise StoreError(f"{out}: {int((~np.isfinite(vals)).sum())} braindecode target(s) are NaN or infinite")
    floats = any(isinstance(t, (float, np.floating)) for t in targets)
    if floats and (not np.all(vals == np.round(vals)) or not label_names):
        return np.float32, []
    if len(vals) and vals.min() < 0:
        raise StoreError(f"{out}: class targets must be 0, 1, …; found {int(vals.min())}")
    n = int(vals.max()) + 1 if len(vals) else 0
    if label_names and n > len(label_names):
        raise StoreError(
            f"{out}: class target {n - 1} has no name in label_names {list(label_names)} ({len(label_names)} classes); "
            "give a name for every class"
        )
    return np.int64, list(label_names) if label_names else [str(i) for i in range(n)]


def _encode_target(t, kind: type, classes: list[str]):
    if isinstance(t, str):
        return classes.index(t)
    return float(t) if kind is np.float32 else int(t)


def _braindecode_sfreq(part) -> float | None:
    for obj in (getattr(part, "windows", None), getattr(part, "raw", None)):
        info = getattr(obj, "info", None)
        if info is not None:
            return float(info["sfreq"])
    return None


def _braindecode_channels(part) -> list[str] | None:
    for obj in (getattr(part, "windows", None), getattr(part, "raw", None)):
        if obj is not None and hasattr(obj, "ch_names"):
            return list(obj.ch_names)
    return None
