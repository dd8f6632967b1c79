"""Task heads on top of a backbone: the single-task heads (``avgpool``, ``all_patch_reps``) and the M4oE
multi-task model, with their rebuild from a fine-tuning checkpoint."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import numpy as np
import torch
import torch.nn as nn

from neurokit._utils.errors import ChannelMismatchError, ConfigError, WeightsError
from neurokit.models.checkpoint import load_checkpoint
from neurokit.models.docs import fill_doc
from neurokit.models.m4oe import M4oE, M4oEConfig
from neurokit.models.registry import get_model_spec

logger = logging.getLogger("neurokit")


#: checkpoint kind of an M4oE fine-tuning run
M4OE_KIND = "finetune_m4oe"

HEADS = ("avgpool", "all_patch_reps", "flatten")


MAX_HEAD_PARAMS = 200_000_000  # beyond this a flatten head is a mistake, not a model


def backbone_features(backbone: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The features a head reads: ``backbone.forward_features(x)``, the method every backbone family has
    (:class:`~neurokit.models.cbramod.CBraMod`, :class:`~neurokit.models.sit.SiT`, …) and ``nn.Module`` does not
    declare.

    Parameters
    ----------
    backbone : nn.Module
        A backbone with a ``forward_features`` method.
    x : Tensor
        The backbone's input, e.g. EEG patches ``(B, C, N, 200)`` in µV / 100.

    Returns
    -------
    Tensor
        ``(B, *feature_shape, D)``.

    Raises
    ------
    ConfigError
        ``backbone`` has no ``forward_features`` method.

    Examples
    --------
    >>> import neurokit
    >>> bb = neurokit.create_model("cbramod", n_layers=1)
    >>> backbone_features(bb, torch.zeros(2, 3, 4, 200)).shape
    torch.Size([2, 3, 4, 200])
    """
    fn = getattr(backbone, "forward_features", None)
    if not callable(fn):
        raise ConfigError(f"{type(backbone).__name__} has no forward_features method: not a backbone a head can read")
    return fn(x)


class Head(nn.Module):
    """Classification / regression heads over backbone features of shape ``(B, *feature_shape, D)``.

    - ``avgpool``: mean over every token → Linear(D → n_outputs).
    - ``all_patch_reps`` (CBraMod): flatten all tokens → Linear(→ N·D) → ELU → Dropout →
      Linear(→ D) → ELU → Dropout → Linear(→ n_outputs), where N is the second-to-last feature axis.
    - ``flatten`` (EEGNet's classifier, :mod:`neurokit.models.eegnet`): flatten all features → Linear(→ n_outputs),
      no dropout (braindecode's final convolution over the whole feature map is this linear layer).

    ``forward(feats)``: ``(B, *feature_shape, D)`` → ``(B, n_outputs)``.

    Parameters
    ----------
    kind : {"avgpool", "all_patch_reps", "flatten"}
        The head (:data:`HEADS`).
    feature_shape : sequence of int
        Shape of one sample's features, ``D`` last (e.g. ``(C, N, 200)`` for CBraMod); ``all_patch_reps`` and
        ``flatten`` only take inputs of this shape.
    n_outputs : int
        Logits (1 for binary and regression tasks).
    dropout : float
        Dropout of ``all_patch_reps``.

    Raises
    ------
    ConfigError
        An unknown ``kind``, or an ``all_patch_reps`` head over more than :data:`MAX_HEAD_PARAMS` weights.
    ChannelMismatchError
        (at ``forward``) Features of another shape than ``feature_shape`` for a head that fixes it.

    Examples
    --------
    >>> Head("avgpool", (3, 4, 200), n_outputs=2)(torch.randn(5, 3, 4, 200)).shape
    torch.Size([5, 2])
    """

    def __init__(self, kind: str, feature_shape: Sequence[int], n_outputs: int, dropout: float = 0.1) -> None:
        super().__init__()
        if kind not in HEADS:
            raise ConfigError(f"head={kind!r}; allowed: {HEADS}")
        self.kind = kind
        self.feature_shape = tuple(int(s) for s in feature_shape)
        d = self.feature_shape[-1]
        self.net: nn.Module
        if kind == "avgpool":
            self.net = nn.Linear(d, n_outputs)
        elif kind == "flatten":
            self.net = nn.Linear(int(np.prod(self.feature_shape)), n_outputs)
            nn.init.xavier_uniform_(self.net.weight)  # EEGNet's init (Glorot weights, zero bias)
            nn.init.zeros_(self.net.bias)
        else:
            flat = int(np.prod(self.feature_shape))
            n = self.feature_shape[-2] if len(self.feature_shape) >= 2 else 1
            if flat * n * d > MAX_HEAD_PARAMS:
                raise ConfigError(
                    f"head 'all_patch_reps' over features {self.feature_shape} would need a "
                    f"{flat}×{n * d} layer ({flat * n * d / 1e6:.0f} M weights); use head='avgpool'"
                )
            self.net = nn.Sequential(
                nn.Linear(flat, n * d),
                nn.ELU(),
                nn.Dropout(dropout),
                nn.Linear(n * d, d),
                nn.ELU(),
                nn.Dropout(dropout),
                nn.Linear(d, n_outputs),
            )

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        if tuple(feats.shape[1:]) != self.feature_shape and self.kind != "avgpool":
            raise ChannelMismatchError(
                f"features {tuple(feats.shape[1:])} differ from the {self.feature_shape} this head was built for "
                f"({self.kind} fixes the channel and patch counts; use head='avgpool' for varying inputs)"
            )
        if self.kind == "avgpool":
            return self.net(feats.flatten(1, -2).mean(dim=1))
        return self.net(feats.flatten(1))


class FinetuneModel(nn.Module):
    """Backbone (with ``forward_features``) + :class:`Head`.

    ``forward(x)``: the backbone's input (e.g. EEG ``(B, C, N, 200)`` in units of 100 µV) → ``(B,)`` when
    ``squeeze`` (binary, regression), else ``(B, n_outputs)``.

    Parameters
    ----------
    backbone : nn.Module
        A backbone with ``forward_features`` (:func:`backbone_features`).
    head : Head
        The head over its features.
    squeeze : bool
        Drop the last axis of a one-output head.

    Examples
    --------
    >>> from neurokit.models.cbramod import CBraMod
    >>> m = FinetuneModel(CBraMod(n_layers=1), Head("avgpool", (2, 3, 200), 1), squeeze=True)
    >>> m(torch.randn(4, 2, 3, 200)).shape
    torch.Size([4])
    """

    def __init__(self, backbone: nn.Module, head: Head, squeeze: bool) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.squeeze = squeeze

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.head(backbone_features(self.backbone, x))
        return out.squeeze(-1) if self.squeeze else out


@fill_doc
def load_finetuned(path: str | Path, device="cpu") -> tuple[FinetuneModel, dict]:
    """Rebuild a :class:`FinetuneModel` from ``neuro finetune``'s ``best.pt``, in eval mode.

    Parameters
    ----------
    %(checkpoint_path)s
    %(device)s

    Returns
    -------
    model : FinetuneModel
        Backbone and head with the checkpoint's weights, on ``device``, in eval mode.
    checkpoint : dict
        The checkpoint's entries (:func:`~neurokit.models.checkpoint.load_checkpoint`).

    Raises
    ------
    ConfigError
        Not a fine-tuning checkpoint (``kind`` is not ``"finetune"``), or an unknown model family.
    WeightsError
        Tensors missing, unexpected or of another shape than the recorded model's.
    FileNotFoundError
        No such file.

    Examples
    --------
    >>> model, ck = load_finetuned("runs/ft/best.pt")  # doctest: +SKIP
    >>> ck["head"]["kind"]  # doctest: +SKIP
    'all_patch_reps'
    """
    ck = load_checkpoint(path)
    if ck.get("kind") != "finetune":
        raise ConfigError(f"{path}: not a fine-tuned checkpoint (kind={ck.get('kind')!r})")
    objective = get_model_spec(ck["model"])
    backbone = objective.backbone(objective.rebuild(ck["model_config"]))
    h = ck["head"]
    model = FinetuneModel(
        backbone, Head(h["kind"], h["feature_shape"], h["n_outputs"], h["dropout"]), squeeze=h["n_outputs"] == 1
    )
    sd = ck.get("state_dict") or {}
    want = model.state_dict()
    missing = [k for k in want if k not in sd]
    extra = [k for k in sd if k not in want]
    if missing or extra:
        part = "head" if missing and all(k.startswith("head.") for k in missing) else "model"
        raise WeightsError(
            f"{path}: a fine-tuned checkpoint without its {part} tensors ({len(missing)} missing, e.g. "
            f"{missing[:3]}; {len(extra)} unexpected {extra[:3]}); it cannot score. Use the best.pt "
            "that neuro finetune wrote"
        )
    bad = [
        f"{k}: file {tuple(sd[k].shape)}, model {tuple(v.shape)}"
        for k, v in want.items()
        if hasattr(sd[k], "shape") and tuple(sd[k].shape) != tuple(v.shape)
    ]
    if bad:
        raise WeightsError(f"{path}: tensors of another shape than its recorded model ({'; '.join(bad[:2])})")
    model.load_state_dict(sd)
    return model.to(device).eval(), ck


class M4oEFinetuneModel(nn.Module):
    """Backbone + :class:`~neurokit.models.m4oe.M4oE` head for several tasks, each read from its own store.

    ``forward(x, task)``: ``x`` ``(B, C, N, 200)`` (units of 100 µV) from the task's store → dict task name →
    logits. A modality whose patches are all exactly zero in a sample counts as absent for that sample (masked).

    Parameters
    ----------
    backbone : nn.Module
        A backbone with ``forward_features``, giving ``(B, C, N, D)`` features.
    head : M4oE
        The multi-task head.
    layouts : dict
        Task name → modality name → indices of that modality's channels in the task's store.
    """

    def __init__(self, backbone: nn.Module, head: M4oE, layouts: dict[str, dict[str, list[int]]]) -> None:
        super().__init__()
        self.backbone, self.head, self.layouts = backbone, head, layouts

    def forward(self, x: torch.Tensor, task: str) -> dict[str, torch.Tensor]:
        feats = backbone_features(self.backbone, x)  # (B, C, N, D)
        B, D = feats.shape[0], feats.shape[-1]
        tokens, present = {}, {}
        for m, idx in self.layouts[task].items():
            tokens[m] = feats[:, idx].reshape(B, -1, D)
            present[m] = x[:, idx].abs().flatten(1).amax(dim=1) > 0
        return self.head(tokens, present)


@fill_doc
def load_m4oe(path: str | Path, device="cpu") -> tuple[M4oEFinetuneModel, dict]:
    """Rebuild the model of an M4oE ``best.pt`` (``kind`` :data:`M4OE_KIND`), in eval mode.

    Parameters
    ----------
    %(checkpoint_path)s
    %(device)s

    Returns
    -------
    model : M4oEFinetuneModel
        Backbone and head with the checkpoint's weights, on ``device``, in eval mode.
    checkpoint : dict
        The checkpoint's entries.

    Raises
    ------
    ConfigError
        Not an M4oE checkpoint, or a head written by an earlier version that no longer fits.
    FileNotFoundError
        No such file.

    Examples
    --------
    >>> model, ck = load_m4oe("runs/m4oe/best.pt")  # doctest: +SKIP
    >>> sorted(ck["layouts"])  # doctest: +SKIP
    ['apnea', 'sleep_stage']
    """

    ck = load_checkpoint(path)
    if ck.get("kind") != M4OE_KIND:
        raise ConfigError(f"{path}: not an M4oE fine-tuned checkpoint (kind={ck.get('kind')!r})")
    obj = get_model_spec(ck["model"])
    backbone = obj.backbone(obj.rebuild(ck["model_config"]))
    # heads saved before the gate's logit scale existed computed their gate at scale 1
    hcfg = M4oEConfig(**{"gate_scale": 1.0, **ck["head_config"]})
    model = M4oEFinetuneModel(backbone, M4oE(hcfg), ck["layouts"])
    try:
        model.load_state_dict(ck["state_dict"])
    except RuntimeError as exc:
        raise ConfigError(
            f"{path}: its M4oE head does not fit this neurokit's (written by an earlier head, before it "
            f"matched the M4oE release?); fine-tune again ({str(exc).splitlines()[0]})"
        ) from None
    return model.to(device).eval(), ck


@fill_doc
def is_m4oe_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` is an M4oE fine-tuning checkpoint (``kind`` :data:`M4OE_KIND`).

    Parameters
    ----------
    %(checkpoint_path)s

    Returns
    -------
    bool
        ``False`` also for a missing file or one that is no checkpoint.

    Examples
    --------
    >>> is_m4oe_checkpoint("no/such/best.pt")
    False
    """
    try:
        return load_checkpoint(path).get("kind") == M4OE_KIND
    except (FileNotFoundError, ValueError):
        return False
