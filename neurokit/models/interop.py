"""Weights of other toolkits' implementations of neurokit's models, through explicit name maps.

braindecode (``braindecode.models.CBraMod``, version 1.8) names CBraMod's tensors as the authors' release
does (``patch_embedding.*``, ``encoder.layers.{i}.self_attn_s.*``…, ``proj_out.0.*``), so its backbone
tensors map one to one onto :class:`~neurokit.models.cbramod.CBraMod`; its classifier ``final_layer``
(``Flatten`` → ``Linear(n_chans · n_patches · emb_dim → n_outputs)``, applied to ``proj_out`` of the
encoder features) has no place in the backbone and is returned apart. Its forward takes ``(batch, n_chans,
n_times)`` and cuts the series into 200-sample patches; neurokit's takes the patches ``(batch, C, N, 200)``.

Reference: braindecode 1.8.1 ``braindecode/models/cbramod.py`` and ``braindecode/modules/attention.py``
(``CrissCrossTransformerEncoderLayer``); Wang et al., CBraMod, ICLR 2025.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

import torch

from neurokit._utils.errors import WeightsError
from neurokit.models.cbramod import CBraMod
from neurokit.models.pretrained import cbramod_layers, load_into
from neurokit.models.weights import read_state_dict

#: braindecode CBraMod tensor name (regular expression) → neurokit CBraMod tensor name (``re.sub`` template);
#: the names agree, the table makes the correspondence explicit and checked
BRAINDECODE_CBRAMOD_MAP: tuple[tuple[str, str], ...] = (
    (r"^patch_embedding\.(mask_encoding)$", r"patch_embedding.\1"),
    (r"^patch_embedding\.positional_encoding\.0\.(weight|bias)$", r"patch_embedding.positional_encoding.0.\1"),
    (r"^patch_embedding\.proj_in\.([0-9])\.(weight|bias)$", r"patch_embedding.proj_in.\1.\2"),
    (r"^patch_embedding\.spectral_proj\.0\.(weight|bias)$", r"patch_embedding.spectral_proj.0.\1"),
    (
        r"^encoder\.layers\.(\d+)\.self_attn_([st])\.(in_proj_weight|in_proj_bias)$",
        r"encoder.layers.\1.self_attn_\2.\3",
    ),
    (
        r"^encoder\.layers\.(\d+)\.self_attn_([st])\.out_proj\.(weight|bias)$",
        r"encoder.layers.\1.self_attn_\2.out_proj.\3",
    ),
    (r"^encoder\.layers\.(\d+)\.(linear1|linear2|norm1|norm2)\.(weight|bias)$", r"encoder.layers.\1.\2.\3"),
    (r"^proj_out\.0\.(weight|bias)$", r"proj_out.0.\1"),
)
#: braindecode's classifier tensors (returned apart by :func:`map_braindecode_cbramod`)
BRAINDECODE_HEAD = re.compile(r"^final_layer\.1\.(weight|bias)$")


def map_braindecode_cbramod(sd: Mapping[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Rename a braindecode CBraMod state dict into neurokit's names.

    Parameters
    ----------
    sd : mapping of str to Tensor
        ``braindecode.models.CBraMod(...).state_dict()`` (or the published ``braindecode/cbramod-pretrained``
        weights read into a dict).

    Returns
    -------
    backbone : dict
        neurokit :class:`CBraMod` tensor names (``proj_out.0.*`` included) → tensors, unchanged.
    head : dict
        ``{"weight": (n_outputs, n_chans·n_patches·emb_dim), "bias": (n_outputs,)}`` of braindecode's
        ``final_layer`` Linear; empty for an encoder-only model (``return_encoder_output=True``).

    Raises
    ------
    WeightsError
        A tensor name that is neither in :data:`BRAINDECODE_CBRAMOD_MAP` nor the classifier (the file is not
        a braindecode CBraMod), naming the first ones.

    Examples
    --------
    >>> import torch
    >>> bb, head = map_braindecode_cbramod({"proj_out.0.bias": torch.zeros(200),
    ...                                     "final_layer.1.bias": torch.zeros(2)})
    >>> list(bb), list(head)
    (['proj_out.0.bias'], ['bias'])
    """
    backbone: dict[str, torch.Tensor] = {}
    head: dict[str, torch.Tensor] = {}
    unknown = []
    for k, v in sd.items():
        m = BRAINDECODE_HEAD.match(k)
        if m:
            head[m.group(1)] = v
            continue
        for pat, tmpl in BRAINDECODE_CBRAMOD_MAP:
            if re.match(pat, k):
                backbone[re.sub(pat, tmpl, k)] = v
                break
        else:
            unknown.append(k)
    if unknown:
        raise WeightsError(
            f"not a braindecode CBraMod state dict: {len(unknown)} tensor names have no place in "
            f"neurokit's CBraMod (e.g. {unknown[:3]})"
        )
    return backbone, head


def load_braindecode_cbramod(
    source: str | Path | Mapping[str, Any], *, map_location: Any = "cpu", **config: Any
) -> tuple[CBraMod, dict[str, torch.Tensor]]:
    """A neurokit :class:`CBraMod` holding braindecode CBraMod weights, and braindecode's classifier.

    Parameters
    ----------
    source : path or mapping
        A file holding the state dict (read with ``weights_only=True``) or the state dict itself.
    map_location : str or torch.device
        Device of the returned tensors.
    **config
        :class:`~neurokit.models.cbramod.CBraModConfig` fields; ``n_layers`` defaults to the count in the
        tensor names. braindecode's ``emb_dim`` must equal ``patch_size`` (200, its default) for
        ``proj_out`` to fit.

    Returns
    -------
    model : CBraMod
        Every tensor loaded (``proj_out`` kept: braindecode applies it before its classifier and in
        ``return_features``); ``model(x.reshape(B, C, T // 200, 200))`` equals braindecode's
        ``forward(x, return_features=True)["features"]``.
    head : dict
        braindecode's classifier (see :func:`map_braindecode_cbramod`): its logits are
        ``model(patches).flatten(1) @ head["weight"].T + head["bias"]``.

    Raises
    ------
    WeightsError
        Unknown tensor names, tensors of another shape, or tensors missing from the file.

    Examples
    --------
    >>> model, head = load_braindecode_cbramod("cbramod-braindecode.pt")  # doctest: +SKIP
    """
    sd, name = read_state_dict(source)
    backbone, head = map_braindecode_cbramod(sd)
    cfg = dict(config)
    cfg.setdefault("n_layers", cbramod_layers(backbone) or 12)
    model = CBraMod(**cfg)
    load_into(model, backbone, name=f"{name} (braindecode CBraMod)", what="CBraMod")
    return model.to(map_location), {k: v.to(map_location) for k, v in head.items()}


#: braindecode ``EEGNet`` tensor names (braindecode 1.8) → neurokit :class:`~neurokit.models.eegnet.EEGNet` names
BRAINDECODE_EEGNET_MAP = (
    (r"^conv_temporal\.weight$", "conv_temporal.weight"),
    (r"^bnorm_temporal\.(.+)$", r"bn_temporal.\1"),
    (r"^conv_spatial\.(.+)$", r"conv_spatial.\1"),
    (r"^bnorm_1\.(.+)$", r"bn_spatial.\1"),
    (r"^conv_separable_depth\.weight$", "conv_depthwise.weight"),
    (r"^conv_separable_point\.weight$", "conv_pointwise.weight"),
    (r"^bnorm_2\.(.+)$", r"bn_separable.\1"),
    (r"^final_layer\.conv_classifier\.bias$", "classifier.bias"),
)


def map_braindecode_eegnet(sd: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Rename a braindecode ``EEGNet`` state dict into neurokit's :class:`~neurokit.models.eegnet.EEGNet` names.

    braindecode classifies with a convolution over the whole ``(F2, 1, T_out)`` feature map
    (``final_layer.conv_classifier``, weight ``(K, F2, 1, T_out)``); neurokit with a Linear over the same features
    flattened F2-major: the same weights, reshaped to ``(K, F2·T_out)``.

    Parameters
    ----------
    sd : mapping of str to Tensor
        ``braindecode.models.EEGNet(n_chans, n_outputs, n_times).state_dict()`` (braindecode 1.8 names).

    Returns
    -------
    dict
        neurokit names → tensors (the classifier's weight reshaped, the others unchanged).

    Raises
    ------
    WeightsError
        A tensor name that has no place in neurokit's EEGNet (naming the first ones).

    Examples
    --------
    >>> import torch
    >>> sorted(map_braindecode_eegnet({"bnorm_1.weight": torch.ones(16),
    ...                                "final_layer.conv_classifier.weight": torch.ones(3, 16, 1, 12)}).items(),
    ...        key=lambda kv: kv[0])[0][1].shape
    torch.Size([16])
    """
    out: dict[str, torch.Tensor] = {}
    unknown = []
    for k, v in sd.items():
        if k == "final_layer.conv_classifier.weight":
            out["classifier.weight"] = v.reshape(v.shape[0], -1)
            continue
        for pat, tmpl in BRAINDECODE_EEGNET_MAP:
            if re.match(pat, k):
                out[re.sub(pat, tmpl, k)] = v
                break
        else:
            unknown.append(k)
    if unknown:
        raise WeightsError(
            f"not a braindecode EEGNet state dict: {len(unknown)} tensor names have no place in neurokit's EEGNet "
            f"(e.g. {unknown[:3]})"
        )
    return out
