"""Model outputs over a dataset in sample order (no gradient, eval mode): what validation, test scoring and
evaluation schemes read."""

from __future__ import annotations

import logging

import numpy as np
import torch
import torch.nn as nn

from neurokit.data.dataset import PatchDataset
from neurokit.models.heads import backbone_features
from neurokit.training.optim import EpochSampler, make_loader

logger = logging.getLogger("neurokit")


def predict(model: nn.Module, ds: PatchDataset, batch_size: int, device) -> tuple[np.ndarray, np.ndarray]:
    model.eval()
    sampler = EpochSampler(len(ds), batch_size=batch_size, seed=0, shuffle=False, drop_last=False)
    ys, outs = [], []
    with torch.no_grad():
        for x, y in make_loader(ds, sampler, batch_size, 0, device):
            outs.append(model(x.to(device)).float().cpu())
            ys.append(y)
    return torch.cat(ys).numpy(), torch.cat(outs).numpy()


def extract_features(backbone: nn.Module, ds: PatchDataset, batch_size: int, device) -> tuple[np.ndarray, np.ndarray]:
    """Pooled features of a frozen backbone: ``forward_features`` averaged over every token, in eval mode
    without gradient (what a linear probe reads; the same pooling as the ``avgpool`` head).

    Parameters
    ----------
    backbone : nn.Module
        A module with ``forward_features(x) -> (B, *tokens, D)`` (CBraMod: ``(B, C, N, D)``).
    ds : PatchDataset
        Samples in order.
    batch_size : int
    device : torch.device or str

    Returns
    -------
    (y, features) : labels ``(n,)`` and float32 features ``(n, D)``.

    Examples
    --------
    >>> y, f = extract_features(backbone, parts["train"], 64, "cpu")  # doctest: +SKIP
    """
    backbone.eval()
    sampler = EpochSampler(len(ds), batch_size=batch_size, seed=0, shuffle=False, drop_last=False)
    ys, feats = [], []
    with torch.no_grad():
        for x, y in make_loader(ds, sampler, batch_size, 0, device):
            f = backbone_features(backbone, x.to(device)).float()
            feats.append(f.flatten(1, -2).mean(dim=1).cpu())
            ys.append(y)
    return torch.cat(ys).numpy(), torch.cat(feats).numpy()
