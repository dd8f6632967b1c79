"""Model outputs over a dataset in sample order (no gradient, eval mode): what validation, test scoring and
evaluation schemes read."""
from __future__ import annotations

import logging

import numpy as np
import torch
import torch.nn as nn

from neurokit.data.dataset import PatchDataset
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
