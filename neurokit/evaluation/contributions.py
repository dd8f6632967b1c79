"""What each modality gives a task of an M4oE head: its share of the routing mass, and what masking it does to the
task's loss and metrics (neurokit's measure; routing mass is not causal importance)."""

from __future__ import annotations

import numpy as np

from neurokit.data.dataset import PatchDataset
from neurokit.evaluation.metrics import score


def contributions(shares: np.ndarray, modalities: list[str], ds: PatchDataset, present: dict[str, list[int]]) -> dict:
    """The report's ``modality_contributions`` of one task: the dataset mean and per-sample values (with subject
    and run) of the routing shares of the task's modalities.

    Parameters
    ----------
    shares : ndarray
        Routing shares ``(n, K)`` of the head's ``K`` modalities (:func:`~neurokit.training.predict.predict_task`).
    modalities : list of str
        The head's modalities, in the order of ``shares``' columns.
    ds : PatchDataset
        The samples scored (their subject and run).
    present : dict
        The task's layout: modality → channels (the modalities it has).

    Returns
    -------
    dict
        ``modalities``, ``mean`` (modality → mean share) and ``per_sample``.
    """
    mods = [m for m in modalities if m in present]
    k = [modalities.index(m) for m in mods]
    subj, run = ds.meta("subject"), ds.meta("run")
    return {
        "modalities": mods,
        "mean": {m: float(shares[:, i].mean()) for m, i in zip(mods, k)},
        "per_sample": [
            {"subject": str(s), "run": str(r), **{m: round(float(v[i]), 5) for m, i in zip(mods, k)}}
            for s, r, v in zip(subj, run, shares)
        ],
    }


def ablation_contributions(
    ablation: dict,
    modalities: list[str],
    ds: PatchDataset,
    present: dict[str, list[int]],
    kind: str,
    labels: np.ndarray,
    outputs: np.ndarray,
) -> dict:
    """The report's ``ablation_contributions`` of one task (neurokit's; the paper reports routing only).

    Parameters
    ----------
    ablation : the fourth item of :func:`~neurokit.training.predict.predict_task` with ``ablate=True``
    modalities : the head's modalities; ``present`` the task's layout (modality → channels)
    kind, labels, outputs : the task's kind, labels and full outputs, for the metrics

    Returns
    -------
    dict with ``modalities``; ``mean_loss_increase`` (modality → mean over samples of the increase of the
    task loss when its tokens are masked, nats for the focal / cross-entropy losses); ``share`` (those
    means kept where positive and normalised to sum 1; all 0 if none is positive); ``score_change``
    (modality → metric → full score − score without the modality, over the split); ``per_sample``
    (subject, run and the loss increase per modality). A task with one modality has nothing to
    ablate: ``modalities`` and a ``note`` only.

    Examples
    --------
    For a task that lives in its EEG, ``share`` is near ``{"eeg": 1, "ecg": 0}`` and ``score_change["eeg"]``
    holds the accuracy lost without the EEG.
    """
    mods = [m for m in modalities if m in present]
    if len(mods) < 2:
        return {"modalities": mods, "note": "one modality: nothing to ablate"}
    k = [modalities.index(m) for m in mods]
    d = ablation["loss_increase"]
    mean = {m: float(np.nanmean(d[:, i])) if np.isfinite(d[:, i]).any() else float("nan") for m, i in zip(mods, k)}
    pos = {m: max(v, 0.0) if np.isfinite(v) else 0.0 for m, v in mean.items()}
    tot = sum(pos.values())
    full = score(kind, labels, outputs)
    change = {}
    for m in mods:
        without = score(kind, labels, ablation["outputs"][m])
        change[m] = {key: float(full[key] - without[key]) for key in full if key in without}
    subj, run = ds.meta("subject"), ds.meta("run")
    return {
        "modalities": mods,
        "measure": "task loss increase and metric drop when the modality's tokens are masked",
        "mean_loss_increase": mean,
        "share": {m: (v / tot if tot > 0 else 0.0) for m, v in pos.items()},
        "score_change": change,
        "per_sample": [
            {
                "subject": str(s),
                "run": str(r),
                **{m: (round(float(v[i]), 5) if np.isfinite(v[i]) else None) for m, i in zip(mods, k)},
            }
            for s, r, v in zip(subj, run, d)
        ],
    }
