"""Model outputs over a dataset in sample order (no gradient, eval mode): what validation, test scoring and
evaluation schemes read."""

from __future__ import annotations

import logging

import numpy as np
import torch
import torch.nn as nn

from neurokit.data.dataset import PatchDataset
from neurokit.models.heads import M4oEFinetuneModel, backbone_features
from neurokit.training.optim import EpochSampler, make_loader

logger = logging.getLogger("neurokit")


def predict(
    model: nn.Module, ds: PatchDataset, batch_size: int, device, *, progress: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Outputs of ``model`` over every sample of ``ds`` in order, in eval mode without gradient.

    Parameters
    ----------
    model : torch.nn.Module
        A model on ``device`` taking a batch ``x`` (e.g. ``(B, C, N, P)``); it is left in eval mode.
    ds : PatchDataset
        Labelled samples, read in sample order (any dataset of ``(x, y)`` items works).
    batch_size : int
        Samples per forward pass.
    device : torch.device
        Where the model runs.
    progress : bool
        Show a progress bar over the batches (on standard error).

    Returns
    -------
    y : numpy.ndarray, shape (n,)
        The labels, in sample order.
    outputs : numpy.ndarray, shape (n, ...)
        The model's outputs as float32 (logits or predictions).

    Examples
    --------
    >>> ds = torch.utils.data.TensorDataset(torch.ones(3, 2), torch.arange(3))
    >>> y, out = predict(nn.Linear(2, 1), ds, 2, torch.device("cpu"))
    >>> y.tolist(), out.shape
    ([0, 1, 2], (3, 1))
    """
    model.eval()
    sampler = EpochSampler(len(ds), batch_size=batch_size, seed=0, shuffle=False, drop_last=False)
    ys, outs = [], []
    batches = make_loader(ds, sampler, batch_size, 0, device)
    if progress:
        from neurokit._utils.progress import progress_bar

        batches = progress_bar(batches, total=-(-len(ds) // batch_size), description="predict")
    with torch.no_grad():
        for x, y in batches:
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
        Samples per forward pass.
    device : torch.device
        Where the backbone runs.

    Returns
    -------
    y : numpy.ndarray, shape (n,)
        The labels, in sample order.
    features : numpy.ndarray of float32, shape (n, D)
        The pooled features.

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


def predict_task(model: M4oEFinetuneModel, task: str, ds: PatchDataset, bs: int, device, ablate: bool = False):
    """``(labels, outputs, modality shares)`` of ``task`` over ``ds`` in sample order (eval mode, no gradient).

    With ``ablate``, a fourth item: ``{"loss_increase": (n, K) array, "outputs": {modality: outputs
    without it}}`` from :meth:`~neurokit.models.m4oe.M4oE.ablation` (NaN where a modality is absent or
    alone in the sample; the full outputs stand where it could not be dropped).

    Parameters
    ----------
    model : M4oEFinetuneModel
        A backbone with its M4oE head.
    task : str
        The task (``CARD:TASK``), one of the head's.
    ds : PatchDataset
        The task's samples.
    bs : int
        Batch size.
    device : torch.device or str
        Where the model runs.
    ablate : bool
        Also mask each modality in turn.

    Returns
    -------
    tuple
        ``(labels (n,), outputs, shares (n, K))``, and the ablation dict with ``ablate``.
    """
    model.eval()
    sampler = EpochSampler(len(ds), batch_size=bs, seed=0, shuffle=False, drop_last=False)
    ys, outs, shares, dl = [], [], [], []
    dout: dict[str, list[torch.Tensor]] = {}  # modality → outputs without it, per batch
    p = model.head.task_names.index(task)
    with torch.no_grad():
        for x, y in make_loader(ds, sampler, bs, 0, device):
            res = model(x.to(device), task)
            o = res[task]
            outs.append(o.float().cpu())
            shares.append(model.head.contributions()[:, p].cpu())
            ys.append(y)
            if ablate:
                d, dropped = model.head.ablation({task: y.to(device)}, outputs=res, return_outputs=True)
                dl.append(d[task].float().cpu())
                for m in model.head.modalities:
                    dout.setdefault(m, []).append((dropped[m][task] if m in dropped else o).float().cpu())
    base = (torch.cat(ys).numpy(), torch.cat(outs).numpy(), torch.cat(shares).numpy())
    if not ablate:
        return base
    return (
        *base,
        {"loss_increase": torch.cat(dl).numpy(), "outputs": {m: torch.cat(v).numpy() for m, v in dout.items()}},
    )
