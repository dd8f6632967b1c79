"""Supervised fine-tuning (``neuro finetune``) and evaluation (``neuro evaluate``) on labelled stores.

Follows CBraMod's protocol (Wang et al., ICLR 2025, §4.1 and appendix): AdamW with separate backbone and
head learning rates, per-step cosine schedule, gradient clipping, label smoothing for multi-class
cross-entropy, BCE on one logit for binary tasks, MSE for regression; model selection on the validation
split (Cohen's kappa / AUROC / R²) and one final score on the test split. Splits are by subject, taken
from the store's data card (or by run when the store holds a single subject).
"""

from __future__ import annotations

import json
import logging
import re
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Collection, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError
from neurokit.data.dataset import PatchDataset, open_labelled
from neurokit.data.provenance import check_split_recordings, pretraining_overlap, warn_overlap
from neurokit.data.splits import resolve_splits
from neurokit.evaluation.metrics import SELECTION, degenerate_predictions, mark_undefined, score
from neurokit.store.patch_store import StoreMeta
from neurokit.models.checkpoint import (
    check_allow_mismatch,
    check_resume_data,
    data_differences,
    load_checkpoint,
    save_checkpoint,
)
from neurokit.models.heads import HEADS, FinetuneModel, Head, backbone_features
from neurokit.models.input_norm import fit_input_norm
from neurokit.models.registry import build_backbone, get_model_spec
from neurokit.pipelines.outputs import run_in_folder
from neurokit.training import distributed as dist
from neurokit.training.optim import OptimConfig, seed_everything
from neurokit.training.predict import predict
from neurokit.training.trainer import Trainer

logger = logging.getLogger("neurokit")
#: what one run found in its results (degenerate predictions, a confound): a comparison of many runs quiets it
#: and reports the same findings in its own table
run_logger = logging.getLogger("neurokit.run")


#: how a fine-tuning run adapts the backbone (:class:`FinetuneConfig` ``strategy``)
STRATEGIES = ("full", "frozen", "linear-probe", "lora")

#: linear layers that take LoRA adapters, per model family (checked against ``named_modules()``; CBraMod's
#: attention input projections are raw parameters, not ``nn.Linear``, so they take none)
LORA_TARGETS = {"cbramod": ("out_proj", "linear1", "linear2"), "sit": ("to_qkv", "to_out.0")}

#: FinetuneConfig fields added after runs were first saved, with the value an older run had
_LATER_DEFAULTS = {
    "label_fraction": 1.0,
    "strategy": "full",
    "lora_rank": 8,
    "lora_alpha": 16.0,
    "allow_duplicate_recordings": False,
}


@dataclass
class FinetuneConfig:
    """Fine-tuning settings; defaults are CBraMod's (50 epochs, batch 64, backbone lr 1e-4, head lr
    1e-3·√(batch/256) (:func:`head_lr`; 5e-4 at batch 64), weight decay 0.05, cosine to 1e-6, clip 1.0,
    label smoothing 0.1).

    ``frozen``: the backbone's weights are not trained (only the head is). As in the CBraMod release
    (``finetune_trainer.py`` sets ``requires_grad=False`` on the backbone and then calls ``model.train()`` on
    the whole model), the backbone stays in training mode, so its dropout is active while the head trains;
    it is in eval mode for validation and test like the rest of the model.

    ``strategy``: how the backbone is adapted (:data:`STRATEGIES`). ``full`` trains every weight; ``frozen``
    trains the head only (``frozen=True`` is the same, and contradicting it is refused); ``lora`` adds LoRA
    adapters (Hu et al., ICLR 2022) through the ``peft`` library to the backbone's linear layers
    (:data:`LORA_TARGETS`; rank ``lora_rank``, scaling ``lora_alpha / lora_rank``, learning rate
    ``lr_backbone``) and trains them with the head, the backbone's own weights fixed; the adapters are merged
    into the weights of ``best.pt``. ``linear-probe`` trains nothing by gradient: a logistic regression
    (ridge for regression) on the frozen backbone's features averaged over tokens, its ``C`` chosen on the
    validation split (:func:`neurokit.evaluation.probe.fit_linear_probe`), stored as an ``avgpool`` head.

    ``label_fraction``: learn from this fraction of the training split's labels, in ``(0, 1]``: a subset
    stratified by class, drawn with ``seed``, whole subjects kept together where the split is by subject and
    enough subjects hold every class, else windows stratified by (class, subject)
    (:func:`neurokit.data.splits.label_fraction_subset`). Validation and test splits stay whole; the report's
    ``label_fraction`` says which subset was taken and its counts.

    ``model``: the model family of a from-scratch backbone; ``None`` (the default) takes the family of the
    ``init`` checkpoint, else ``cbramod``. A family that differs from the ``init`` checkpoint's is refused.

    Raises
    ------
    ConfigError
        Out-of-range values, an unknown head or model, an augmentation that does not parse.
    """

    model: str | None = None  # None: the family of the ``init`` checkpoint, else cbramod
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    head: str = "auto"  # "auto": the model family's default (CBraMod: all_patch_reps; SiT: avgpool)
    epochs: int = 50
    batch_size: int = 64
    lr_backbone: float = 1e-4
    lr_head: float | None = None  # None: 1e-3·√(batch_size/256), the CBraMod release's rule (see __post_init__)
    weight_decay: float = 0.05
    min_lr: float = 1e-6
    clip_grad: float = 1.0
    label_smoothing: float = 0.1
    dropout: float = 0.1
    frozen: bool = False
    seed: int = 0
    device: str = "auto"
    num_workers: int = 0
    progress: bool = True
    splits: dict[str, list[str]] | None = None  # split → subject ids; default from the card
    baselines: bool = True  # score the classical baselines (neurokit.evaluation.baselines) on the same split
    confound_check: bool = True  # test the training labels against eye-movement proxies (evaluation.confounds)
    augment: dict[str, float] | str | None = None  # EEG augmentation (neurokit.data.augment.AugmentConfig); off
    allow_partial_init: bool = False  # load an ``init`` file that covers only part of the backbone
    allow_mismatch: list[str] | str | None = None  # data facts (sfreq, patch, units) the store may differ in from init
    allow_duplicate_recordings: bool = False  # score a test split sharing a recording (SHA-256) with train/val
    init_sha256: str | None = None  # the SHA-256 the --init weights file must have (refused otherwise)
    label_fraction: float = 1.0  # fraction of the training labels learnt from (stratified, seeded)
    strategy: str = "full"  # full | frozen | linear-probe | lora
    lora_rank: int = 8  # strategy="lora": rank r of each adapter
    lora_alpha: float = 16.0  # strategy="lora": adapter scaling alpha / r

    def __post_init__(self) -> None:
        if self.init_sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", str(self.init_sha256)):
            raise ConfigError(
                f"init_sha256={self.init_sha256!r} (CLI: --init-sha256): give the 64 hexadecimal digits of a SHA-256"
            )
        from neurokit.data.augment import AugmentConfig

        aug = AugmentConfig.parse(self.augment)
        self.augment = aug.to_dict() if aug.enabled else None
        if self.epochs < 1 or self.batch_size < 1:
            bad = "epochs" if self.epochs < 1 else "batch_size"
            raise ConfigError(f"{bad}={getattr(self, bad)}: must be >= 1")
        if self.lr_head is None:  # CBraMod release, finetune_trainer.py: 'lr': 0.001*(batch_size/256)**0.5
            self.lr_head = head_lr(self.batch_size)
        if self.head not in HEADS + ("auto",):
            raise ConfigError(
                f"head={self.head!r}: allowed {', '.join(HEADS + ('auto',))} (and m4oe with several "
                "tasks in the CLI: --head m4oe --task CARD:TASK)"
            )
        if self.model is not None:
            get_model_spec(self.model)  # ConfigError naming the known families
        if not 0 <= self.label_smoothing < 1:
            raise ConfigError(f"label_smoothing={self.label_smoothing} must be in [0, 1)")
        self.allow_mismatch = check_allow_mismatch(self.allow_mismatch) or None
        self._check_strategy()

    def _check_strategy(self) -> None:
        """``strategy``, ``frozen``, ``label_fraction`` and the LoRA sizes agree; ``frozen`` ⇔ ``strategy="frozen"``."""
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"strategy={self.strategy!r} (CLI: --strategy): allowed {', '.join(STRATEGIES)}")
        if self.frozen and self.strategy not in ("full", "frozen"):
            raise ConfigError(
                f"frozen=True (CLI: --frozen) and strategy={self.strategy!r} contradict each other: "
                "--frozen is --strategy frozen; give one of them"
            )
        if self.frozen or self.strategy == "frozen":
            self.frozen, self.strategy = True, "frozen"
        if not 0 < self.label_fraction <= 1:
            raise ConfigError(f"label_fraction={self.label_fraction}: must be in (0, 1] (CLI: --label-fractions)")
        if self.lora_rank < 1 or self.lora_alpha <= 0:
            raise ConfigError(f"lora_rank={self.lora_rank}, lora_alpha={self.lora_alpha}: need rank >= 1 and alpha > 0")
        if self.strategy == "linear-probe" and self.head not in ("auto", "avgpool"):
            raise ConfigError(
                f"strategy='linear-probe' reads features averaged over tokens (an avgpool head); "
                f"head={self.head!r} does not apply: drop --head or give --head avgpool"
            )


def head_lr(batch_size: int) -> float:
    """The head's learning rate when none is given: ``1e-3 · √(batch_size / 256)``.

    Source: the CBraMod release, ``finetune_trainer.py`` (``multi_lr``, on by default in ``finetune_main.py``):
    the parameters outside the backbone train at ``0.001*(batch_size/256)**0.5``. An explicit ``lr_head``
    (CLI ``--lr-head``) wins.

    Examples
    --------
    >>> head_lr(64)
    0.0005
    """
    return 1e-3 * math.sqrt(batch_size / 256)


def supervised_loss(
    kind: str,
    logits: torch.Tensor,
    y: torch.Tensor,
    label_smoothing: float = 0.0,
    mix: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> torch.Tensor:
    """Cross-entropy with label smoothing (multi-class), BCE on one logit (binary), MSE (regression).

    ``mix = (lam, perm)`` from mixup: each sample's loss is ``lam·L(y) + (1 − lam)·L(y[perm])``.
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


def make_augmenter(cfg: FinetuneConfig, ds: PatchDataset, *, mixup: bool = True):
    """The training batches' :class:`~neurokit.data.augment.Augmenter` for the store(s) of ``ds``
    (``None`` when ``cfg.augment`` is off).

    Raises
    ------
    ConfigError
        A store that is not an EEG patch store ``(C, N, P)``, or mixup where the loss cannot mix labels
        (``mixup=False``: the M4oE head).
    """
    from neurokit.data.augment import AugmentConfig, Augmenter

    aug = AugmentConfig.parse(cfg.augment)
    if not aug.enabled:
        return None
    if not mixup and aug.mixup:
        raise ConfigError(
            "--augment mixup: the M4oE head's multi-task loss does not mix labels; drop mixup "
            "from --augment (the other transforms apply)"
        )
    if ds.info.modality != "eeg" or len(ds.sample_shape) != 3:
        raise ConfigError(
            f"augmentation is defined for EEG patch stores (C, N, P); this store holds "
            f"{ds.info.modality} samples {ds.sample_shape}"
        )
    scale = float(ds.info.recipe.get("scale") or 1e4)  # data units per volt
    return Augmenter(aug, sfreq=float(ds.info.sfreq or 200.0), units_per_uv=scale * 1e-6, seed=cfg.seed)


#: options of ``neuro finetune`` that only the M4oE head uses (CLI flag → what it does)
M4OE_ONLY = {
    "--task": "names the tasks of the multi-task head",
    "--modality": "names the M4oE modalities",
    "--m4oe-preset": "sizes the M4oE experts",
    "--alpha": "weights the M4oE routing term",
    "--focal-gamma": "sets the M4oE focal loss",
}

#: evaluation schemes whose fold count ``n_folds`` (CLI ``--folds``) sets
FOLDED_SCHEMES = ("kfold-subject", "within-session")


def check_finetune_options(
    cfg: FinetuneConfig,
    *,
    head: str | None = None,
    scheme: str = "card",
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
    head : str, optional
        The head asked for: ``"m4oe"`` or one of ``cfg.head``'s values (default ``cfg.head``).
    scheme : str
        Evaluation scheme (``"card"`` or one of :data:`neurokit.evaluation.schemes.SCHEMES`).
    resume, overwrite : bool
        ``--resume`` / ``--overwrite``.
    given : collection of str
        The CLI flags the user gave explicitly (``"--folds"``, ``"--task"``, ``"--lr-backbone"``…), for the
        options whose default cannot be told from a value given.
    init : path or str, optional
        The ``--init`` weights (``allow_partial_init`` needs them).
    stores : sequence of paths, optional
        The labelled store(s) of a single-task run: an explicit ``--label-smoothing`` needs a multi-class task.

    Raises
    ------
    ConfigError
        One line naming the option and why it does not apply: ``--scheme`` other than ``card``,
        ``--train/val/test-subjects``, ``--folds`` or augmentation mixup with ``--head m4oe``; M4oE-only options
        (:data:`M4OE_ONLY`) with another head; ``--folds`` with a scheme that has no fold count; ``--resume``
        with a scheme (each fold is a run of its own) or with ``--overwrite``; subject splits with a scheme (it
        makes its folds); ``--lr-backbone`` with ``--frozen`` (the backbone does not train);
        ``--allow-partial-init`` without ``--init``; ``--label-smoothing`` for a binary or regression task (it
        smooths multi-class targets only).
    """
    from neurokit.evaluation.schemes import SCHEMES

    head = head or cfg.head
    given = set(given)
    if scheme not in SCHEMES:
        raise ConfigError(f"scheme={scheme!r}; allowed: {', '.join(SCHEMES)}")
    if resume and overwrite:
        raise ConfigError("--resume continues the run in OUT and --overwrite replaces it: give one of them")
    if cfg.allow_partial_init and init is None:
        raise ConfigError(
            "--allow-partial-init: it lets --init weights cover part of the backbone; without --init "
            "the backbone is trained from scratch"
        )
    if "--label-smoothing" in given and stores and head != "m4oe":
        kind = open_labelled(stores)[3]
        if kind != "multiclass":
            raise ConfigError(
                f"--label-smoothing: it smooths multi-class targets; {', '.join(map(str, stores))} "
                f"holds a {kind} task (one logit, no smoothing)"
            )
    if cfg.strategy == "linear-probe" and ("--lr-backbone" in given or "--lr-head" in given or cfg.augment or resume):
        what = "--resume" if resume else "--augment" if cfg.augment else "--lr-backbone/--lr-head"
        raise ConfigError(
            f"{what}: --strategy linear-probe fits a logistic regression on frozen features "
            "(no gradient steps, no epochs to resume, no augmented batches); drop one of them"
        )
    if cfg.strategy != "lora" and ({"--lora-rank", "--lora-alpha"} & given):
        raise ConfigError(
            f"{sorted({'--lora-rank', '--lora-alpha'} & given)[0]}: sizes the LoRA adapters, so it "
            f"needs --strategy lora (got --strategy {cfg.strategy})"
        )
    if cfg.frozen and "--lr-backbone" in given:
        raise ConfigError(
            "--lr-backbone: --frozen keeps the backbone's weights fixed, so it has no learning rate; drop one of them"
        )
    if head == "m4oe":
        if cfg.strategy not in ("full", "frozen") or cfg.label_fraction < 1:
            what = f"--strategy {cfg.strategy}" if cfg.strategy not in ("full", "frozen") else "--label-fractions"
            raise ConfigError(
                f"{what}: for the single-task heads (avgpool, all_patch_reps); --head m4oe trains "
                "its backbone in full or --frozen on every label"
            )
        if scheme != "card":
            raise ConfigError(
                f"--scheme {scheme}: --head m4oe trains and scores every task on its card's splits; "
                "evaluation schemes are for the single-task heads (avgpool, all_patch_reps)"
            )
        if cfg.splits is not None:
            raise ConfigError(
                "--train-subjects/--val-subjects/--test-subjects: --head m4oe splits each task by its "
                "own card; subject splits are for the single-task heads"
            )
        if "--folds" in given:
            raise ConfigError("--folds: --head m4oe runs no evaluation scheme, so there are no folds to count")
        if "--label-smoothing" in given:
            raise ConfigError(
                "--label-smoothing: the M4oE head trains with the release's focal loss (--focal-gamma), "
                "which does not smooth labels; drop --label-smoothing"
            )
        from neurokit.data.augment import AugmentConfig

        if AugmentConfig.parse(cfg.augment).mixup:
            raise ConfigError(
                "--augment mixup: the M4oE head's multi-task loss does not mix labels; drop mixup "
                "from --augment (the other transforms apply)"
            )
        return
    for flag in M4OE_ONLY:
        if flag in given:
            raise ConfigError(f"{flag}: {M4OE_ONLY[flag]}, so it needs --head m4oe (got --head {head})")
    if "--folds" in given and scheme not in FOLDED_SCHEMES:
        raise ConfigError(
            f"--folds: only the {' and '.join(FOLDED_SCHEMES)} schemes have a fold count (got --scheme {scheme})"
        )
    if scheme != "card":
        if resume:
            raise ConfigError(f"--resume: a --scheme {scheme} run is one run per fold; run it again with --overwrite")
        if cfg.splits is not None:
            raise ConfigError(
                f"--train-subjects/--val-subjects/--test-subjects: --scheme {scheme} makes its own "
                "folds; subject splits go with --scheme card"
            )


def finetune(
    store: str | Path | Sequence[str | Path],
    out_dir: str | Path,
    cfg: FinetuneConfig | None = None,
    *,
    init: str | Path | None = None,
    overwrite: bool = False,
    scheme: str = "card",
    n_folds: int = 5,
    resume: bool = False,
) -> dict[str, Any]:
    """Fine-tune on a labelled store and score the test split once.

    Parameters
    ----------
    store : path(s) of labelled patch store(s)
    out_dir : folder for ``best.pt``, ``last.pt``, ``report.json`` and ``metrics.jsonl``
    cfg : FinetuneConfig
    init : path, optional
        A ``neuro pretrain`` checkpoint, a released CBraMod ``state_dict`` or a Hub name; ``None`` trains from
        scratch. The checkpoint's model family is the run's (``cfg.model`` must agree when given). CBraMod's
        weights do not depend on the montage, so the store may have other channels than the pretraining data
        (a warning lists the difference).
    overwrite : bool
        Replace an earlier run in ``out_dir`` (otherwise :class:`FileExistsError`): the new run is written
        beside it and swapped in when finished, so a stopped overwrite leaves the earlier run whole; only the
        earlier run's own files are replaced, the user's other entries in ``out_dir`` stay.
    scheme : str
        Evaluation scheme (:mod:`neurokit.evaluation.schemes`): ``"card"`` (one run on the card's splits),
        ``"loso"``, ``"kfold-subject"``, ``"cross-session"`` or ``"within-session"`` (one run per fold in
        ``out_dir/<fold>/``).
    n_folds : int
        k of the ``kfold-subject`` and ``within-session`` schemes.
    resume : bool
        Continue the run in ``out_dir`` from its ``last.pt`` (written at each epoch end) up to ``cfg.epochs``
        with the same settings; a run that finished its epochs but was stopped before scoring is scored.

    Returns
    -------
    The report dict (also written to ``out_dir/report.json``): model family, task kind, class names, split
    subjects, per-epoch validation metrics, the selected epoch, and ``test`` metrics; for a scheme other
    than ``card``, the per-fold results, their mean and std, and MOABB's result rows (also ``results.csv``).
    The test predictions go to ``predictions.npz`` (``y``, ``scores``, ``subject``, ``session``).

    Raises
    ------
    FileExistsError
        ``out_dir`` holds a run and neither ``overwrite`` nor ``resume`` is given.
    FileNotFoundError
        ``resume`` without ``out_dir/last.pt``.
    ConfigError
        Options that do not go together (:func:`check_finetune_options`), a ``last.pt`` of other settings.
    Interrupted
        Ctrl-C; the message says what was saved.
    OutputLockedError
        Another process is writing into ``out_dir`` (named: pid, host, start time).
    """
    cfg = cfg or FinetuneConfig()
    out = Path(out_dir)
    check_finetune_options(cfg, scheme=scheme, resume=resume, overwrite=overwrite, init=init)
    return _finetune_locked(
        store, out, cfg, init=init, overwrite=overwrite, scheme=scheme, n_folds=n_folds, resume=resume
    )


#: FinetuneConfig fields a resumed run may change (``--epochs`` may grow); every other one is checked
RESUME_MAY_CHANGE = ("epochs", "progress", "device", "num_workers", "baselines", "confound_check")


def finetune_record(cfg: FinetuneConfig, *, head: str | None = None, **call: Any) -> dict[str, Any]:
    """The record of a fine-tuning run (:func:`~neurokit.pipelines.outputs.record_run`): ``settings``, every
    field of ``cfg`` and every argument of the call (given or defaulted), and ``resume``, what a resumed run
    must repeat (``checked``: the settings, ``init`` by SHA-256, the store's identity) and may change.

    Examples
    --------
    >>> finetune_record(FinetuneConfig(epochs=3), scheme="card")["settings"]["epochs"]
    3
    """
    head_settings = sorted(call.pop("head_settings", {}) or {})
    settings = {**asdict(cfg), **({"head": head} if head else {}), **call}
    checked = [f for f in asdict(cfg) if f not in RESUME_MAY_CHANGE] + ["init (SHA-256)", "store identity"]
    return {
        "settings": settings,
        "resume": {
            "checked": checked + [f"head: {k}" for k in head_settings],
            "may_change": list(RESUME_MAY_CHANGE),
            "resumable": call.get("scheme", "card") == "card",
        },
    }


def _finetune_locked(
    store, out: Path, cfg: FinetuneConfig, *, init, overwrite: bool, scheme: str, n_folds: int, resume: bool
) -> dict[str, Any]:
    """:func:`finetune` in its run folder (:func:`~neurokit.pipelines.outputs.run_in_folder`: locked, an earlier
    run replaced by ``overwrite`` kept whole until the new one has finished)."""
    from neurokit.evaluation.schemes import run_scheme

    def job(work: Path) -> dict[str, Any]:
        info = dist.setup(cfg.device)
        try:
            if scheme != "card":
                stores = list(store) if isinstance(store, (list, tuple)) else [store]
                return run_scheme(
                    stores,
                    work,
                    cfg,
                    scheme,
                    n_folds=n_folds,
                    fit_fold=lambda d, kw, unit: _finetune(stores, d, cfg, init, info, split_kw=kw, leak_unit=unit),
                )
            return _finetune(store, work, cfg, init, info, resume=resume)
        finally:
            dist.cleanup(info)

    record = finetune_record(
        cfg, store=store, out_dir=out, init=init, overwrite=overwrite, scheme=scheme, n_folds=n_folds, resume=resume
    )
    return run_in_folder(out, job, overwrite=overwrite, resume=resume, resumable=scheme == "card", record=record)


def finetune_or_reuse(
    store, out_dir: str | Path, cfg: FinetuneConfig, *, init: str | Path | None = None, overwrite: bool = False
) -> tuple[dict[str, Any], bool]:
    """:func:`finetune`, or the report already in ``out_dir`` when it came from the same settings, the same
    ``init`` file (by SHA-256) and data of the same card, recipe, channels and units; an interrupted run of
    the same settings there (``last.pt`` only) is resumed. Returns ``(report, reused)``. A different run
    there raises :class:`FileExistsError` unless ``overwrite``."""
    out = Path(out_dir)
    if not overwrite and not (out / "best.pt").exists() and (out / "last.pt").exists():
        try:
            return finetune(store, out, cfg, init=init, resume=True), False
        except ConfigError as exc:
            raise FileExistsError(
                f"{out} holds another fine-tuning run ({exc}); pass overwrite=True (CLI: "
                "--overwrite) to replace it, or choose another output folder"
            ) from None
    if overwrite or not (out / "best.pt").exists():
        return finetune(store, out, cfg, init=init, overwrite=overwrite), False
    ck = load_checkpoint(out / "best.pt")
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    diff = _config_differences(
        cfg, ck.get("finetune_config") or {}, ("progress", "device", "num_workers", "confound_check")
    )
    if init_fingerprint(init) != ck.get("init_sha256"):
        diff.append("init")
    attrs = PatchDataset(stores).attrs
    diff += list(
        data_differences({"card": ck.get("card"), "recipe": ck.get("recipe"), "ch_names": ck.get("ch_names")}, attrs)
    )
    if diff:
        raise FileExistsError(
            f"{out} holds a fine-tuning run that differs in {', '.join(diff)}; pass overwrite=True "
            "(CLI: --overwrite) to replace it, or choose another output folder"
        )
    return json.loads((out / "report.json").read_text()), True


def _config_differences(cfg: FinetuneConfig, saved: dict, ignore: Sequence[str]) -> list[str]:
    """Fields of ``cfg`` that differ from a saved ``finetune_config`` (``model=None`` matches the saved family)."""
    return [
        k
        for k, v in asdict(cfg).items()
        if k not in ignore
        and not (k == "model" and v is None)
        and not (k == "head" and v == "auto" and saved.get(k) in (*HEADS, "m4oe"))
        and not (k not in saved and k in _LATER_DEFAULTS and v == _LATER_DEFAULTS[k])
        and _norm_json(v) != _norm_json(saved.get(k))
    ]


def _norm_json(v):
    return json.loads(json.dumps(v, default=str))


def init_fingerprint(init) -> str | None:
    """SHA-256 of an ``--init`` file (its name for Hub weights, ``None`` without ``init``): what a resumed or
    reused run must start from."""
    if init is None:
        return None
    from neurokit._utils.hashing import file_sha256

    path = Path(str(init)).expanduser()
    if not path.is_file():  # a Hub name: its revision, commit and hash are recorded under init_weights
        return str(init)
    return file_sha256(path)


def check_resume(
    ck: dict, cfg: FinetuneConfig, init, path: Path, *, kind: str = "finetune_last", head: dict | None = None
) -> None:
    """A resumed fine-tuning run must have the settings, ``init`` and head of the run in ``last.pt``.

    Parameters
    ----------
    ck : dict
        The ``last.pt`` checkpoint.
    cfg : FinetuneConfig
        The settings given now; only ``epochs`` (and ``progress``, ``device``, ``num_workers``, ``baselines``)
        may differ.
    init : path or str or None
        The ``--init`` given now (compared by SHA-256).
    path : Path
        The checkpoint's path, for messages.
    kind : str
        The checkpoint kind the run writes (``"finetune_last"``; M4oE: ``"finetune_m4oe_last"``).
    head : dict, optional
        Head settings that must match ``ck["head_settings"]`` too (M4oE: preset, alpha, focal γ, …).

    Raises
    ------
    ConfigError
        Another kind of checkpoint, or settings that differ (naming them).
    """
    if ck.get("kind") != kind:
        raise ConfigError(f"{path}: not the last.pt of this kind of run (kind={ck.get('kind')!r}, expected {kind!r})")
    diff = _config_differences(cfg, ck.get("finetune_config") or {}, RESUME_MAY_CHANGE)
    if init_fingerprint(init) != ck.get("init_sha256"):
        diff.append("init")
    saved_head = ck.get("head_settings") or {}
    diff += [k for k, v in (head or {}).items() if _norm_json(v) != _norm_json(saved_head.get(k))]
    if diff:
        raise ConfigError(
            f"{path}: the run was made with other {', '.join(diff)}; resume with the same settings "
            "(only --epochs may grow) or start a new run with --overwrite"
        )


def _finetune(
    store,
    out: Path,
    cfg: FinetuneConfig,
    init,
    info,
    split_kw: dict | None = None,
    leak_unit: str | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Fine-tune on one store (or one evaluation fold of it) into ``out``; returns the run's report."""
    seed_everything(cfg.seed)
    ck = None
    if resume:
        ck = load_checkpoint(out / "last.pt")
        check_resume(ck, cfg, init, out / "last.pt")
    ds_all, label_names, n_classes, kind = open_labelled(store)
    if ck is not None:
        check_resume_data(ck, ds_all.attrs, what=f"{out / 'last.pt'}: resume on {ds_all.stores[0].path}")
    how, split_kw, parts = _split_parts(ds_all, out, cfg, split_kw, leak_unit)
    split_recordings = check_split_recordings(parts, allow=cfg.allow_duplicate_recordings, where=str(out))
    model, groups, model_name, init_info, head_info = _build_finetune_model(ds_all, cfg, init, info, kind, n_classes)
    trainable = trainable_parameters(model)
    train = parts["train"]
    # the pretraining's input normalisation, scaled for this store; test recordings the pretraining saw (by SHA-256)
    init_info["input_norm"] = fit_input_norm(model, train)
    overlap = pretraining_overlap(init_info.get("pretraining_sources"), parts["test"])
    warn_overlap(overlap, str(out))
    select = SELECTION[kind]
    meta = ds_all.info
    saved_cfg = {**asdict(cfg), "model": model_name, "head": head_info["kind"]}  # the family and head used

    def loss(module, b):
        return supervised_loss(kind, module(b.x), b.y, cfg.label_smoothing, b.mix)

    def validate(module):
        yv, ov = predict(module, parts["val"], cfg.batch_size, info.device)
        return {f"val_{k}": v for k, v in score(kind, yv, ov).items()}

    assert cfg.lr_head is not None  # FinetuneConfig.__post_init__ sets it
    ocfg = OptimConfig(
        lr=max(cfg.lr_backbone, cfg.lr_head),
        weight_decay=cfg.weight_decay,
        min_lr=min(cfg.min_lr, cfg.lr_backbone, cfg.lr_head),
        clip_grad=cfg.clip_grad,
    )
    trainer = Trainer(
        model,
        train,
        loss,
        model_name=model_name,
        optim=ocfg,
        batch_size=min(cfg.batch_size, len(train)),
        epochs=cfg.epochs,
        param_groups=groups,
        seed=cfg.seed,
        info=info,
        num_workers=cfg.num_workers,
        out=out,
        validate=validate,
        select=f"val_{select}",
        augment=make_augmenter(cfg, ds_all),
        stage="finetune",
        detail=kind,
        progress=cfg.progress,
        checkpoint_extra=lambda: {
            "kind": "finetune_last",
            "model": model_name,
            "model_config": init_info["model_config"],
            "head": head_info,
            "finetune_config": saved_cfg,
            "init_sha256": init_fingerprint(init),
            **_data_identity(meta),
        },
    )
    if ck is not None:
        trainer.resume(ck)
        if trainer.step >= trainer.total and (out / "report.json").exists():
            raise ConfigError(
                f"{out / 'last.pt'} has done {trainer.epochs_done} epoch(s); ask for more "
                f"(--epochs > {trainer.epochs_done}) to resume"
            )
    t0 = time.perf_counter()
    probe = _fit_probe(model, parts, kind, cfg, info) if cfg.strategy == "linear-probe" else None
    res = probe or trainer.fit()
    fit_seconds = time.perf_counter() - t0  # MOABB's "time": fitting only
    if probe is None:
        trainer.load_best()
    merge_lora(model)  # strategy="lora": adapters folded into the weights best.pt stores
    yt, ot = predict(model, parts["test"], cfg.batch_size, info.device)
    test, undefined = mark_undefined(kind, yt, score(kind, yt, ot), label_names)
    if info.is_main:
        np.savez(
            out / "predictions.npz",
            y=yt,
            scores=ot,
            subject=parts["test"].meta("subject").astype(str),
            session=parts["test"].meta("session").astype(str),
            sample=parts["test"].sample_ids,
        )
    report = _finetune_report(
        meta, model_name, kind, label_names, how, split_kw, parts, select, res, test, init_info, head_info["kind"]
    )
    report["seconds"] = time.perf_counter() - t0
    report["fit_seconds"] = fit_seconds
    if init_info.get("data_mismatch"):  # differences from the init checkpoint's data, accepted by allow_mismatch
        report["data_mismatch_allowed"] = init_info["data_mismatch"]
    report.update(
        strategy=cfg.strategy,
        trainable_params=trainable,
        undefined=undefined,
        label_fraction=getattr(train, "label_fraction_info", None),
    )
    if probe is not None:
        report["probe"] = {"C": probe.C, "candidates": probe.records}
    report.update(
        input_norm=init_info["input_norm"],
        pretraining_overlap=overlap,
        pretraining_sources=init_info.get("pretraining_sources"),
        split_recordings=split_recordings,
    )
    report["degenerate"] = degenerate_predictions(kind, yt, ot, label_names)  # None when the predictions inform
    if report["degenerate"]:
        run_logger.warning("%s: %s", out, report["degenerate"])
    from neurokit.evaluation.baselines import chance_metrics, run_baselines

    report["chance"] = chance_metrics(kind, n_classes)
    if cfg.confound_check:  # are the labels decodable from eye movements? (neurokit.evaluation.confounds)
        from neurokit.evaluation.confounds import check_confounds

        report["confounds"] = check_confounds(parts["train"], "train", seed=cfg.seed).to_dict()
        if report["confounds"]["fired"]:
            run_logger.warning("%s: %s", out, report["confounds"]["message"])
    if cfg.baselines:
        report["baselines"] = run_baselines(parts, kind, sfreq=float(meta.sfreq or 200.0), seed=cfg.seed)
        for r in report["baselines"].values():
            if isinstance(r.get("test"), dict):
                r["test"], r["undefined"] = mark_undefined(kind, yt, r["test"], label_names)
    if info.is_main:
        _save_finetuned(
            out, ds_all, model, model_name, init_info, head_info, kind, label_names, saved_cfg, init, report
        )
    return report


def _split_parts(ds_all, out: Path, cfg: FinetuneConfig, split_kw, leak_unit):
    """Resolve the splits (or take a fold's), check them for leaks and open each; returns ``(how, split_kw, parts)``."""
    if split_kw is None:
        how, split_kw = resolve_splits(ds_all, cfg.splits)
    else:  # one fold of an evaluation scheme
        how = "fold"
    from neurokit.data.splits import check_no_leak, check_training_classes

    fraction_info = None
    if cfg.label_fraction < 1:
        split_kw, fraction_info = _label_fraction_kw(ds_all, split_kw, cfg, by_subject=(leak_unit or how) == "subject")
    check_no_leak(ds_all, split_kw, leak_unit or ("run" if how == "run" else "subject"))
    parts = {k: PatchDataset(ds_all.stores, labelled=True, **kw) for k, kw in split_kw.items()}
    parts["train"].label_fraction_info = fraction_info
    for k, d in parts.items():
        if len(d) == 0:
            raise ConfigError(f"split {k!r} is empty ({split_kw[k]})")
    check_training_classes(parts["train"].labels, ds_all.info.label_names, split_kw["train"])
    out.mkdir(parents=True, exist_ok=True)
    return how, split_kw, parts


def _label_fraction_kw(ds_all, split_kw: dict, cfg: FinetuneConfig, *, by_subject: bool) -> tuple[dict, dict]:
    """The split with its training part cut to ``cfg.label_fraction`` of its labels (``samples=`` ids)."""
    from neurokit.data.splits import label_fraction_subset

    full = PatchDataset(ds_all.stores, labelled=True, **split_kw["train"])
    keep, info = label_fraction_subset(
        full.labels, full.meta("subject"), cfg.label_fraction, cfg.seed, by_subject=by_subject
    )
    kw = {**split_kw["train"], "samples": full.sample_ids[keep].tolist()}
    if "subjects" in kw:
        kw["subjects"] = info["subjects"]
    logger.info(
        "label fraction %g: %d of %d training windows (%s; per class %s)",
        cfg.label_fraction,
        info["n_train"],
        info["n_train_full"],
        f"whole subjects {', '.join(info['subjects'])}"
        if info["mode"] == "subjects"
        else "windows stratified by class and subject",
        info["class_counts"],
    )
    return {**split_kw, "train": kw}, info


def finetune_backbone(cfg: FinetuneConfig, init, ds) -> tuple[torch.nn.Module, dict, str]:
    """The backbone a fine-tuning run starts from (:func:`~neurokit.models.registry.build_backbone` with the run's
    settings) and the model family it belongs to: the ``init`` checkpoint's, else ``cfg.model`` (default cbramod).

    Returns
    -------
    ``(backbone, init_info, model_name)``.

    Raises
    ------
    ConfigError
        ``cfg.model`` names another family than the ``init`` checkpoint's (and what ``build_backbone`` raises).
    """
    backbone, init_info = build_backbone(
        init,
        model=cfg.model or "cbramod",
        model_kwargs=cfg.model_kwargs,
        store_attrs=ds.attrs,
        sample_shape=ds.sample_shape,
        allow_partial=cfg.allow_partial_init,
        allow_mismatch=cfg.allow_mismatch or (),
        store_name=ds.stores[0].path,
        init_sha256=cfg.init_sha256,
    )
    model_name = init_info.get("model", cfg.model or "cbramod")
    if cfg.model is not None and model_name != cfg.model:
        raise ConfigError(
            f"model={cfg.model!r} but --init {init} holds a {model_name!r} model; the checkpoint's family "
            "is the run's: drop --model"
        )
    return backbone, init_info, model_name


def _build_finetune_model(ds_all, cfg: FinetuneConfig, init, info, kind: str, n_classes: int):
    """Backbone from ``init`` plus a fresh head, on the run's device.

    Returns ``(model, param_groups, model_name, init_info, head_info)``.
    """
    backbone, init_info, model_name = finetune_backbone(cfg, init, ds_all)
    backbone.to(info.device)
    with torch.no_grad():
        x0 = ds_all[0][0].unsqueeze(0).to(info.device)
        backbone.eval()
        feat_shape = tuple(backbone_features(backbone, x0).shape[1:])
    n_out = 1 if kind in ("binary", "regression") else n_classes
    head_kind = get_model_spec(model_name).default_head if cfg.head == "auto" else cfg.head
    if cfg.strategy == "linear-probe":
        head_kind = "avgpool"
    head = Head(head_kind, feat_shape, n_out, cfg.dropout).to(info.device)
    if cfg.strategy == "lora":
        backbone = add_lora(backbone, model_name, cfg.lora_rank, cfg.lora_alpha)
    model = FinetuneModel(backbone, head, squeeze=n_out == 1).to(info.device)
    if cfg.frozen or cfg.strategy == "linear-probe":
        for p in backbone.parameters():
            p.requires_grad_(False)
    groups = [{"params": [p for p in head.parameters()], "lr": cfg.lr_head}]
    bb = [p for p in backbone.parameters() if p.requires_grad]
    if bb:
        groups.insert(0, {"params": bb, "lr": cfg.lr_backbone})
    head_info = {"kind": head_kind, "feature_shape": list(feat_shape), "n_outputs": n_out, "dropout": cfg.dropout}
    return model, groups, model_name, init_info, head_info


def add_lora(backbone: torch.nn.Module, model_name: str, rank: int = 8, alpha: float = 16.0) -> torch.nn.Module:
    """LoRA adapters (``peft``) on the backbone's linear layers named in :data:`LORA_TARGETS`; only the
    adapters stay trainable.

    Parameters
    ----------
    backbone : nn.Module
        A CBraMod or SiT backbone (changed in place and returned).
    model_name : str
        Its family (the key of :data:`LORA_TARGETS`).
    rank, alpha : int, float
        LoRA rank r and scaling numerator (the update ``B·A`` is scaled by ``alpha / r``); B starts at zero, so
        the adapted backbone starts as the given one.

    Returns
    -------
    The backbone with ``lora_A`` / ``lora_B`` parameters (trainable) beside its frozen weights.

    Raises
    ------
    ConfigError
        A family without LoRA targets, or ``peft`` not installed (``pip install 'neurokit-fm[lora]'``).

    Examples
    --------
    >>> bb = add_lora(create_model("cbramod", n_layers=1), "cbramod", rank=4)  # doctest: +SKIP
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
    model (and its ``state_dict``) is the architecture without adapters. Returns the number of layers merged
    (0 for a model without adapters)."""
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
    """Counts of trainable and total parameters of a :class:`FinetuneModel`: ``backbone``, ``head``,
    ``total`` (trainable) and ``all`` (every parameter)."""

    def n(ps):
        return int(sum(p.numel() for p in ps if p.requires_grad))

    return {
        "backbone": n(model.backbone.parameters()),
        "head": n(model.head.parameters()),
        "total": n(model.parameters()),
        "all": int(sum(p.numel() for p in model.parameters())),
    }


def _fit_probe(model, parts: dict, kind: str, cfg: FinetuneConfig, info):
    """strategy="linear-probe": fit the probe on pooled frozen features and write it into the avgpool head.
    Returns the :class:`~neurokit.evaluation.probe.LinearProbe`, whose ``best``, ``best_epoch`` and ``records`` read
    as a Trainer result's."""
    from neurokit.evaluation.probe import fit_linear_probe
    from neurokit.training.predict import extract_features

    yt, ft = extract_features(model.backbone, parts["train"], cfg.batch_size, info.device)
    yv, fv = extract_features(model.backbone, parts["val"], cfg.batch_size, info.device)
    probe = fit_linear_probe(ft, yt, fv, yv, kind, seed=cfg.seed)
    lin = model.head.net
    with torch.no_grad():
        lin.weight.copy_(torch.as_tensor(probe.weight, dtype=lin.weight.dtype))
        lin.bias.copy_(torch.as_tensor(probe.bias, dtype=lin.bias.dtype))
    return probe


def _finetune_report(
    meta: StoreMeta, model_name, kind, label_names, how, split_kw, parts, select, res, test, init_info, head_kind
) -> dict[str, Any]:
    """The report of a fine-tuning run, up to its ``seconds`` (added by the caller)."""
    train_labels = parts["train"].labels
    return {
        "task": meta.task,
        "card": meta.card,
        "model": model_name,
        "model_title": get_model_spec(model_name).title or model_name,
        "kind": kind,
        "label_names": label_names,
        "split_by": how,
        "splits": {k: {kk: list(vv) for kk, vv in kw.items()} for k, kw in split_kw.items()},
        "n_samples": {k: len(d) for k, d in parts.items()},
        "class_counts_train": {str(c): int((train_labels == c).sum()) for c in np.unique(train_labels)}
        if kind != "regression"
        else {},
        "selection_metric": select,
        "best_epoch": res.best_epoch,
        "val_best": res.best,
        "test": test,
        "history": res.records,
        "init": init_info.get("init"),
        "init_weights": init_info.get("weights"),
        "head": head_kind,
        **_paper_figures(meta),
    }


def _paper_figures(meta: StoreMeta) -> dict[str, Any]:
    """``{"paper": {model: {metric: figure}}, "paper_metrics": [...]}`` from the store card's task (the figures the
    paper reports for this dataset, printed beside the run's), or ``{}``."""
    from neurokit.evaluation.protocol import card_protocol

    try:
        p = card_protocol(meta.card_body or None, meta.task)
    except Exception:  # a card body another version wrote: no figures rather than no report
        return {}
    return {"paper": p.paper, "paper_metrics": p.metrics} if p.paper else {}


#: FinetuneConfig fields → the ``neuro finetune`` option that sets them (dropout and clip_grad have none)
CONFIG_FLAGS = {
    "epochs": "--epochs",
    "batch_size": "--batch-size",
    "lr_backbone": "--lr-backbone",
    "lr_head": "--lr-head",
    "weight_decay": "--weight-decay",
    "label_smoothing": "--label-smoothing",
    "head": "--head",
}


def card_defaults(cfg: FinetuneConfig, stores, given: Collection[str] = ()) -> tuple[FinetuneConfig, dict[str, Any]]:
    """``cfg`` with the fine-tuning settings of the stores' card task (its ``finetune`` block: the release's
    ``finetune_main.py`` values for that dataset) where the user gave no option (``given``: the flags given, e.g.
    ``{"--epochs"}``); and the settings taken, ``{field: value}`` (empty when the card gives none).

    Raises
    ------
    CardError
        A bad ``finetune`` block (:func:`~neurokit.evaluation.protocol.card_protocol`).
    ConfigError
        A card value that :class:`FinetuneConfig` refuses.
    """
    import dataclasses

    from neurokit.evaluation.protocol import card_protocol

    info = PatchDataset(stores).info
    proto = card_protocol(info.card_body or None, info.task)
    taken = {k: v for k, v in proto.finetune.items() if CONFIG_FLAGS.get(k) not in set(given)}
    if not taken:
        return cfg, {}
    return dataclasses.replace(cfg, **taken), taken


def _save_finetuned(
    out: Path, ds_all, model, model_name, init_info, head_info, kind, label_names, saved_cfg, init, report
) -> None:
    """Write ``best.pt`` (model, head, data identity, settings) and ``report.json``."""
    ident = _data_identity(ds_all.info)
    save_checkpoint(
        out / "best.pt",
        {
            "kind": "finetune",
            "model": model_name,
            "model_config": init_info["model_config"],
            "head": head_info,
            "task_kind": kind,
            "state_dict": model.state_dict(),
            "label_names": label_names,
            "ch_names": ident["ch_names"],
            "sample_shape": list(ds_all.sample_shape),
            "card": ident["card"],
            "card_body": ds_all.info.card_body or None,
            "recipe": ident["recipe"],
            "store_attrs": ident["store_attrs"],
            "finetune_config": saved_cfg,
            "init_weights": init_info.get("weights"),  # name, revision, commit, SHA-256 of --init
            "init_sha256": init_fingerprint(init),
            "report": {k: v for k, v in report.items() if k != "history"},
        },
    )
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float))


def _data_identity(meta: StoreMeta) -> dict[str, Any]:
    """The store's card, recipe and channels as a checkpoint records them (a dict and a list; ``None`` when absent)."""
    return {
        "card": meta.card,
        "recipe": meta.recipe or None,
        "ch_names": None if meta.ch_names is None else list(meta.ch_names),
        "store_attrs": {k: meta.get(k) for k in ("modality", "sfreq", "units") if meta.get(k) is not None},
    }
