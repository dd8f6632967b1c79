"""The refusals of fine-tuning settings that do not go together, in parameter names
(:func:`check_finetune_options`, which every fine-tuning pipeline and
:func:`~neurokit.pipelines.finetune_plan.plan_finetune` call), and a card's fine-tuning defaults
(:func:`card_defaults`). The settings themselves are :class:`~neurokit.training.config.FinetuneConfig`."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Collection, Sequence

from neurokit._utils.errors import ConfigError
from neurokit.data.dataset import PatchDataset, open_labelled
from neurokit.training.config import (
    FOLDED_SCHEMES,
    FinetuneConfig,
    augment_text,
)


def check_finetune_options(
    cfg: FinetuneConfig,
    *,
    head: str | None = None,
    scheme: str = "card",
    n_folds: int = 5,
    resume: bool = False,
    overwrite: bool = False,
    given: Collection[str] = (),
    init: str | Path | None = None,
    stores: Sequence[str | Path] | None = None,
) -> None:
    """Refuse the option combinations a fine-tuning run would otherwise ignore.

    Parameters
    ----------
    cfg : FinetuneConfig
        The run's settings.
    head : str, optional
        The head asked for: ``"m4oe"`` or one of ``cfg.head``'s values (default ``cfg.head``).
    scheme : str
        Evaluation scheme (``"card"`` or one of :data:`neurokit.evaluation.schemes.SCHEMES`).
    n_folds : int
        The fold count asked for (named ``folds`` in messages, as :func:`~neurokit.pipelines.finetune_plan.plan_finetune`
        names it).
    resume, overwrite : bool
        Continue the run in the output folder; replace it.
    given : collection of str
        The parameters the user set explicitly (:class:`FinetuneConfig` fields such as ``"lr_backbone"``, and
        ``"folds"``), for the options whose default cannot be told from a value given.
    init : path or str, optional
        The initial weights (``allow_partial_init`` needs them).
    stores : sequence of paths, optional
        The labelled store(s) of a single-task run: an explicit ``label_smoothing`` needs a multi-class task.

    Raises
    ------
    ConfigError
        One line naming the parameter and why it does not apply: a ``scheme`` other than ``card``, subject
        ``splits``, ``folds`` or augmentation mixup with the M4oE head; ``folds`` with a scheme that has no fold
        count; ``resume`` with a scheme (each fold is a run of its own) or with ``overwrite``; subject splits with a
        scheme (it makes its folds); ``lr_backbone`` with ``frozen`` (the backbone does not train);
        ``allow_partial_init`` without ``init``; ``label_smoothing`` for a binary or regression task (it smooths
        multi-class targets only); learning rates, augmentation or ``resume`` with ``strategy='linear-probe'``; LoRA
        sizes without ``strategy='lora'``.

    Examples
    --------
    >>> check_finetune_options(FinetuneConfig(), scheme="loso", given={"folds"}, n_folds=3)
    Traceback (most recent call last):
    ...
    neurokit._utils.errors.ConfigError: folds=3: only the kfold-subject and within-session schemes have a fold count (got scheme='loso')
    """
    from neurokit.evaluation.schemes import SCHEMES

    head = head or cfg.head
    given = set(given)
    if scheme not in SCHEMES:
        raise ConfigError(f"scheme={scheme!r}; allowed: {', '.join(SCHEMES)}")
    if resume and overwrite:
        raise ConfigError(
            "resume=True continues the run in the output folder and overwrite=True replaces it: give one of them"
        )
    if cfg.allow_partial_init and init is None:
        raise ConfigError(
            "allow_partial_init=True lets the weights of init=PATH cover part of the backbone; without "
            "init=PATH the backbone is trained from scratch"
        )
    if "label_smoothing" in given and stores and head != "m4oe":
        kind = open_labelled(stores)[3]
        if kind != "multiclass":
            raise ConfigError(
                f"label_smoothing={cfg.label_smoothing:g}: it smooths multi-class targets; "
                f"{', '.join(map(str, stores))} holds a {kind} task (one logit, no smoothing)"
            )
    rates = [k for k in ("lr_backbone", "lr_head") if k in given]
    if cfg.strategy == "linear-probe" and (rates or cfg.augment or resume):
        what = (
            "resume=True"
            if resume
            else f"augment={augment_text(cfg.augment)!r}"
            if cfg.augment
            else f"{rates[0]}={getattr(cfg, rates[0]):g}"
        )
        raise ConfigError(
            f"{what}: strategy='linear-probe' fits a logistic regression on frozen features "
            "(no gradient steps, no epochs to resume, no augmented batches); drop one of them"
        )
    sizes = sorted({"lora_rank", "lora_alpha"} & given)
    if cfg.strategy != "lora" and sizes:
        raise ConfigError(
            f"{sizes[0]}={getattr(cfg, sizes[0]):g}: sizes the LoRA adapters, so it needs strategy='lora' "
            f"(got strategy={cfg.strategy!r})"
        )
    if cfg.frozen and "lr_backbone" in given:
        raise ConfigError(
            f"lr_backbone={cfg.lr_backbone:g}: frozen=True keeps the backbone's weights fixed, so it has no "
            "learning rate; drop one of them"
        )
    if head == "m4oe":
        _check_m4oe(cfg, scheme, n_folds, given)
        return
    if "folds" in given and scheme not in FOLDED_SCHEMES:
        raise ConfigError(
            f"folds={n_folds}: only the {' and '.join(FOLDED_SCHEMES)} schemes have a fold count "
            f"(got scheme={scheme!r})"
        )
    if scheme != "card":
        if resume:
            raise ConfigError(
                f"resume=True: a scheme={scheme!r} run is one run per fold; run it again with overwrite=True"
            )
        if cfg.splits is not None:
            raise ConfigError(
                f"subject splits (splits=): scheme={scheme!r} makes its own folds; subject splits go with scheme='card'"
            )


def _check_m4oe(cfg: FinetuneConfig, scheme: str, n_folds: int, given: set[str]) -> None:
    """:func:`check_finetune_options` for the M4oE head."""
    if cfg.strategy not in ("full", "frozen") or cfg.label_fraction < 1:
        what = (
            f"strategy={cfg.strategy!r}"
            if cfg.strategy not in ("full", "frozen")
            else f"label_fraction={cfg.label_fraction:g}"
        )
        raise ConfigError(
            f"{what}: for the single-task heads (avgpool, all_patch_reps); head='m4oe' trains its backbone in "
            "full or frozen (frozen=True) on every label"
        )
    if scheme != "card":
        raise ConfigError(
            f"scheme={scheme!r}: head='m4oe' trains and scores every task on its card's splits; evaluation "
            "schemes are for the single-task heads (avgpool, all_patch_reps)"
        )
    if cfg.splits is not None:
        raise ConfigError(
            "subject splits (splits=): head='m4oe' splits each task by its own card; subject splits are for the "
            "single-task heads"
        )
    if "folds" in given:
        raise ConfigError(f"folds={n_folds}: head='m4oe' runs no evaluation scheme, so there are no folds to count")
    if "label_smoothing" in given:
        raise ConfigError(
            f"label_smoothing={cfg.label_smoothing:g}: the M4oE head trains with the release's focal loss "
            "(focal_gamma), which does not smooth labels; drop it"
        )
    from neurokit.data.augment import AugmentConfig

    mixup = AugmentConfig.parse(cfg.augment).mixup
    if mixup:
        raise ConfigError(
            f"augment='mixup={mixup:g}': the M4oE head's multi-task loss does not mix labels; drop mixup from the "
            "augmentation (the other transforms apply)"
        )


def card_defaults(
    cfg: FinetuneConfig, stores: Sequence[str | Path], given: Collection[str] = ()
) -> tuple[FinetuneConfig, dict[str, Any]]:
    """``cfg`` with the fine-tuning settings of the stores' card task (its ``finetune`` block: the release's
    ``finetune_main.py`` values for that dataset) where the user set none.

    Parameters
    ----------
    cfg : FinetuneConfig
        The settings so far.
    stores : sequence of paths
        The labelled store(s), whose card and task are read.
    given : collection of str
        The :class:`FinetuneConfig` fields the user set explicitly (e.g. ``{"epochs"}``): the card does not
        change them.

    Returns
    -------
    (FinetuneConfig, dict)
        The settings, and those taken from the card, ``{field: value}`` (empty when the card gives none).

    Raises
    ------
    CardError
        A bad ``finetune`` block (:func:`~neurokit.evaluation.protocol.card_protocol`).
    ConfigError
        A card value that :class:`FinetuneConfig` refuses.
    """
    from neurokit.evaluation.protocol import card_protocol

    info = PatchDataset(stores).info
    proto = card_protocol(info.card_body or None, info.task)
    taken = {k: v for k, v in proto.finetune.items() if k not in set(given)}
    if not taken:
        return cfg, {}
    return dataclasses.replace(cfg, **taken), taken
