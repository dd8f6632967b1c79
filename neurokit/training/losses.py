"""The supervised losses of fine-tuning: cross-entropy with label smoothing (multi-class), BCE on one logit
(binary), MSE (regression), each able to mix labels for mixup; and the class frequencies the M4oE focal loss
weights by."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def supervised_loss(
    kind: str,
    logits: torch.Tensor,
    y: torch.Tensor,
    label_smoothing: float = 0.0,
    mix: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Cross-entropy with label smoothing (multi-class), BCE on one logit (binary), MSE (regression).

    Parameters
    ----------
    kind : {"multiclass", "binary", "regression"}
        The task kind.
    logits : Tensor
        The model's outputs: ``(B, n_classes)`` for a multi-class task, ``(B,)`` otherwise.
    y : Tensor
        Targets ``(B,)``: class indices, 0/1, or values.
    label_smoothing : float
        Smoothing of the multi-class targets, in ``[0, 1)`` (unused for the other kinds).
    mix : (Tensor, Tensor), optional
        ``(lam, perm)`` from mixup (:class:`~neurokit.data.augment.Augmenter`): each sample's loss is
        ``lam·L(y) + (1 − lam)·L(y[perm])``.

    Returns
    -------
    Tensor
        The mean loss over the batch (0-d).

    Examples
    --------
    >>> round(supervised_loss("regression", torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0])).item(), 3)
    2.0
    """

    def per_sample(target):
        if kind == "multiclass":
            return F.cross_entropy(logits, target.long(), label_smoothing=label_smoothing, reduction="none")
        if kind == "binary":
            return F.binary_cross_entropy_with_logits(logits, target.float(), reduction="none")
        return F.mse_loss(logits, target.float(), reduction="none")

    if mix is None:
        return per_sample(y).mean()
    lam, perm = mix
    return (lam * per_sample(y) + (1 - lam) * per_sample(y[perm])).mean()


def class_frequencies(labels: np.ndarray, n_classes: int) -> list[float]:
    """Class frequencies of a training split's labels (unlabelled ``< 0`` left out), for the focal loss's
    α = 1 − frequency (M4oE release ``main.py``).

    Parameters
    ----------
    labels : ndarray
        Class indices ``(n,)``; negative values are unlabelled.
    n_classes : int
        The number of classes (classes absent from ``labels`` get 0).

    Returns
    -------
    list of float
        ``n_classes`` frequencies summing to 1 (all 0 without labels).

    Examples
    --------
    >>> class_frequencies(np.array([1, 1, 1, 0]), 2)
    [0.25, 0.75]
    """
    y = np.asarray(labels)
    y = y[y >= 0].astype(int)
    counts = np.bincount(y, minlength=n_classes)[:n_classes].astype(float)
    return (counts / max(counts.sum(), 1.0)).tolist()
