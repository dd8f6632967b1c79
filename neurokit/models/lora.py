"""LoRA adapters (Hu et al., ICLR 2022) on a backbone's linear layers, through the ``peft`` library: added for
fine-tuning (``strategy="lora"``), merged into the weights before a checkpoint is written; and the trainable
parameter counts of a fine-tuning model."""

from __future__ import annotations

import torch

from neurokit._utils.errors import ConfigError
from neurokit.models.heads import FinetuneModel

#: linear layers that take LoRA adapters, per model family (checked against ``named_modules()``; CBraMod's
#: attention input projections are raw parameters, not ``nn.Linear``, so they take none)
LORA_TARGETS = {"cbramod": ("out_proj", "linear1", "linear2"), "sit": ("to_qkv", "to_out.0")}


def add_lora(backbone: torch.nn.Module, model_name: str, rank: int = 8, alpha: float = 16.0) -> torch.nn.Module:
    """LoRA adapters (``peft``) on the backbone's linear layers named in :data:`LORA_TARGETS`; only the
    adapters stay trainable.

    Parameters
    ----------
    backbone : nn.Module
        A CBraMod or SiT backbone (changed in place and returned).
    model_name : str
        Its family (the key of :data:`LORA_TARGETS`).
    rank : int
        LoRA rank r.
    alpha : float
        Scaling numerator (the update ``B·A`` is scaled by ``alpha / r``); B starts at zero, so the adapted
        backbone starts as the given one.

    Returns
    -------
    nn.Module
        The backbone with ``lora_A`` / ``lora_B`` parameters (trainable) beside its frozen weights.

    Raises
    ------
    ConfigError
        A family without LoRA targets, or ``peft`` not installed (``pip install 'neurokit-fm[lora]'``).

    Examples
    --------
    >>> import neurokit
    >>> bb = add_lora(neurokit.create_model("cbramod", n_layers=1), "cbramod", rank=4)  # doctest: +SKIP
    """
    targets = LORA_TARGETS.get(model_name)
    if not targets:
        raise ConfigError(
            f"strategy='lora': no LoRA target layers are known for model {model_name!r} "
            f"(known: {', '.join(LORA_TARGETS)})"
        )
    try:
        from peft import LoraConfig, inject_adapter_in_model
    except ImportError:
        raise ConfigError("strategy='lora' needs the peft library: pip install 'neurokit-fm[lora]'") from None
    conf = LoraConfig(
        r=int(rank),
        lora_alpha=float(alpha),  # type: ignore[arg-type]  # peft annotates int; a float scales
        lora_dropout=0.0,
        bias="none",
        target_modules=list(targets),
    )
    backbone = inject_adapter_in_model(conf, backbone)
    for n, p in backbone.named_parameters():
        p.requires_grad_("lora_" in n)
    return backbone


def merge_lora(model: torch.nn.Module) -> int:
    """Fold every LoRA adapter of ``model`` into the weights of its layer and put the plain layer back, so the
    model (and its ``state_dict``) is the architecture without adapters.

    Parameters
    ----------
    model : nn.Module
        A model with or without adapters (changed in place).

    Returns
    -------
    int
        The number of layers merged (0 for a model without adapters).

    Examples
    --------
    >>> merge_lora(torch.nn.Linear(2, 2))
    0
    """
    if not any("lora_" in n for n, _ in model.named_parameters()):
        return 0  # nothing to merge (and no need to import peft)
    from peft.tuners.tuners_utils import BaseTunerLayer

    wrapped = [(n, m) for n, m in model.named_modules() if isinstance(m, BaseTunerLayer)]
    for name, layer in wrapped:
        layer.merge()
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent) if parent else model, child, layer.get_base_layer())
    return len(wrapped)


def trainable_parameters(model: FinetuneModel) -> dict[str, int]:
    """Counts of trainable and total parameters of a :class:`~neurokit.models.heads.FinetuneModel`.

    Parameters
    ----------
    model : FinetuneModel
        A backbone with its head.

    Returns
    -------
    dict
        ``backbone``, ``head``, ``total`` (trainable parameters) and ``all`` (every parameter).
    """

    def n(ps):
        return int(sum(p.numel() for p in ps if p.requires_grad))

    return {
        "backbone": n(model.backbone.parameters()),
        "head": n(model.head.parameters()),
        "total": n(model.parameters()),
        "all": int(sum(p.numel() for p in model.parameters())),
    }
