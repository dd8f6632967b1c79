"""Supervised fine-tuning (``neuro finetune``) and evaluation (``neuro evaluate``) on labelled stores.

Follows CBraMod's protocol (Wang et al., ICLR 2025, §4.1 and appendix): AdamW with separate backbone and
head learning rates, per-step cosine schedule, gradient clipping, label smoothing for multi-class
cross-entropy, BCE on one logit for binary tasks, MSE for regression; model selection on the validation
split (Cohen's kappa / AUROC / R²) and one final score on the test split. Splits are by subject, taken
from the store's data card (or by run when the store holds a single subject).
"""
from __future__ import annotations

import copy
import json
import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError, Interrupted
from neurokit._utils.progress import TrainProgress
from neurokit.data.dataset import PatchDataset
from neurokit.data.splits import open_labelled, resolve_splits
from neurokit.evaluation.metrics import SELECTION, score
from neurokit.models.checkpoint import (
    data_differences,
    load_checkpoint,
    save_checkpoint,
)
from neurokit.models.heads import HEADS, FinetuneModel, Head
from neurokit.models.registry import build_backbone
from neurokit.training import distributed as dist
from neurokit.training.objectives import get_objective
from neurokit.training.optim import (
    EpochSampler,
    OptimConfig,
    build_optimizer,
    make_loader,
    optimizer_step,
    seed_everything,
)
from neurokit.training.predict import predict

logger = logging.getLogger("neurokit")







@dataclass
class FinetuneConfig:
    """Fine-tuning settings; defaults are CBraMod's (50 epochs, batch 64, backbone lr 1e-4, head lr
    5e-4, weight decay 0.05, cosine to 1e-6, clip 1.0, label smoothing 0.1).

    ``frozen``: the backbone's weights are not trained (only the head is). As in the CBraMod release
    (``finetune_trainer.py`` sets ``requires_grad=False`` on the backbone and then calls ``model.train()`` on
    the whole model), the backbone stays in training mode, so its dropout is active while the head trains;
    it is in eval mode for validation and test like the rest of the model.
    """

    model: str = "cbramod"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    head: str = "auto"  # "auto": the model family's default (CBraMod: all_patch_reps; SiT: avgpool)
    epochs: int = 50
    batch_size: int = 64
    lr_backbone: float = 1e-4
    lr_head: float = 5e-4
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
    augment: dict[str, float] | str | None = None  # EEG augmentation (neurokit.data.augment.AugmentConfig); off
    allow_partial_init: bool = False  # load an ``init`` file that covers only part of the backbone

    def __post_init__(self) -> None:
        from neurokit.data.augment import AugmentConfig

        aug = AugmentConfig.parse(self.augment)
        self.augment = aug.to_dict() if aug.enabled else None
        if self.epochs < 1 or self.batch_size < 1:
            raise ConfigError(f"epochs and batch_size must be >= 1 (got {self.epochs}, {self.batch_size})")
        if self.head not in HEADS + ("auto",):
            raise ConfigError(f"head={self.head!r}; allowed: {HEADS + ('auto',)}")
        if not 0 <= self.label_smoothing < 1:
            raise ConfigError(f"label_smoothing={self.label_smoothing} must be in [0, 1)")












def supervised_loss(kind: str, logits: torch.Tensor, y: torch.Tensor, label_smoothing: float = 0.0,
                    mix: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
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


def _augmenter(cfg: FinetuneConfig, ds: PatchDataset):
    """The training batches' :class:`~neurokit.data.augment.Augmenter` (``None`` when off)."""
    from neurokit.data.augment import AugmentConfig, Augmenter

    aug = AugmentConfig.parse(cfg.augment)
    if not aug.enabled:
        return None
    if ds.attrs.get("modality", "eeg") != "eeg" or len(ds.sample_shape) != 3:
        raise ConfigError(f"augmentation is defined for EEG patch stores (C, N, P); this store holds "
                          f"{ds.attrs.get('modality')} samples {ds.sample_shape}")
    scale = float((ds.attrs.get("recipe") or {}).get("scale") or 1e4)  # data units per volt
    return Augmenter(aug, sfreq=float(ds.attrs.get("sfreq") or 200.0), units_per_uv=scale * 1e-6, seed=cfg.seed)




def finetune(store: str | Path | Sequence[str | Path], out_dir: str | Path, cfg: FinetuneConfig | None = None,
             *, init: str | Path | None = None, overwrite: bool = False, scheme: str = "card",
             n_folds: int = 5) -> dict[str, Any]:
    """Fine-tune on a labelled store and score the test split once.

    Parameters
    ----------
    store : path(s) of labelled patch store(s)
    out_dir : folder for ``best.pt``, ``report.json`` and ``metrics.jsonl``
    cfg : FinetuneConfig
    init : path, optional
        A ``neuro pretrain`` checkpoint or a released CBraMod ``state_dict``; ``None`` trains from scratch.
        CBraMod's weights do not depend on the montage, so the store may have other channels than the
        pretraining data (a warning lists the difference).
    overwrite : bool
        Replace an earlier run in ``out_dir`` (otherwise :class:`FileExistsError`).
    scheme : str
        Evaluation scheme (:mod:`neurokit.evaluation.schemes`): ``"card"`` (one run on the card's splits),
        ``"loso"``, ``"kfold-subject"``, ``"cross-session"`` or ``"within-session"`` (one run per fold in
        ``out_dir/<fold>/``).
    n_folds : int
        k of the ``kfold-subject`` and ``within-session`` schemes.

    Returns
    -------
    The report dict (also written to ``out_dir/report.json``): task kind, class names, split subjects,
    per-epoch validation metrics, the selected epoch, and ``test`` metrics; for a scheme other than
    ``card``, the per-fold results, their mean and std, and MOABB's result rows (also ``results.csv``).
    The test predictions go to ``predictions.npz`` (``y``, ``scores``, ``subject``, ``session``).
    """
    cfg = cfg or FinetuneConfig()
    out = Path(out_dir)
    if (out / "report.json").exists() or (out / "best.pt").exists():
        if not overwrite:
            raise FileExistsError(f"{out} already holds a fine-tuning run; pass overwrite=True (CLI: --overwrite) "
                                  "or choose another output folder")
        (out / "metrics.jsonl").unlink(missing_ok=True)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    from neurokit.evaluation.schemes import SCHEMES, run_scheme

    if scheme not in SCHEMES:
        raise ConfigError(f"scheme={scheme!r}; allowed: {', '.join(SCHEMES)}")
    info = dist.setup(cfg.device)
    try:
        if scheme != "card":
            stores = list(store) if isinstance(store, (list, tuple)) else [store]
            return run_scheme(stores, out, cfg, scheme, n_folds=n_folds,
                              fit_fold=lambda d, kw, unit: _finetune(stores, d, cfg, init, info, split_kw=kw, leak_unit=unit))
        return _finetune(store, out, cfg, init, info)
    except BaseException as exc:
        if created and not (out / "report.json").exists():
            import shutil

            shutil.rmtree(out, ignore_errors=True)  # made by this call, holding no result: leave nothing behind
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
            raise Interrupted(f"interrupted: fine-tuning saves best.pt and report.json when it ends, so nothing was "
                              f"saved{f' ({out} removed)' if created else ''}; run the same command again") from None
        raise
    finally:
        dist.cleanup(info)


def finetune_or_reuse(store, out_dir: str | Path, cfg: FinetuneConfig, *, init: str | Path | None = None,
                      overwrite: bool = False) -> tuple[dict[str, Any], bool]:
    """:func:`finetune`, or the report already in ``out_dir`` when it came from the same settings, the same
    ``init`` file (by SHA-256) and data of the same card, recipe, channels and units. Returns
    ``(report, reused)``. A different run there raises :class:`FileExistsError` unless ``overwrite``."""
    out = Path(out_dir)
    if overwrite or not (out / "best.pt").exists():
        return finetune(store, out, cfg, init=init, overwrite=overwrite), False
    ck = load_checkpoint(out / "best.pt")
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    diff = [k for k, v in asdict(cfg).items() if k not in ("progress", "device", "num_workers")
            and _norm_json(v) != _norm_json((ck.get("finetune_config") or {}).get(k))]
    if _fingerprint(init) != ck.get("init_sha256"):
        diff.append("init")
    attrs = PatchDataset(stores).attrs
    diff += list(data_differences({"card": ck.get("card"), "recipe": ck.get("recipe"), "ch_names": ck.get("ch_names")}, attrs))
    if diff:
        raise FileExistsError(f"{out} holds a fine-tuning run that differs in {', '.join(diff)}; pass overwrite=True "
                              "(CLI: --overwrite) to replace it, or choose another output folder")
    return json.loads((out / "report.json").read_text()), True


def _norm_json(v):
    return json.loads(json.dumps(v, default=str))


def _fingerprint(init) -> str | None:
    if init is None:
        return None
    from neurokit._utils.hashing import file_sha256

    path = Path(str(init)).expanduser()
    if not path.is_file():  # a Hub name: its revision, commit and hash are recorded under init_weights
        return str(init)
    return file_sha256(path)




def _finetune(store, out: Path, cfg: FinetuneConfig, init, info, split_kw: dict | None = None,
              leak_unit: str | None = None) -> dict[str, Any]:
    seed_everything(cfg.seed)
    ds_all, label_names, n_classes, kind = open_labelled(store)
    labels = ds_all.stores[0].labels
    if split_kw is None:
        how, split_kw = resolve_splits(ds_all, cfg.splits)
    else:  # one fold of an evaluation scheme
        how = "fold"
    from neurokit.data.splits import check_no_leak

    check_no_leak(ds_all, split_kw, leak_unit or ("run" if how == "run" else "subject"))
    out.mkdir(parents=True, exist_ok=True)
    parts = {k: PatchDataset(ds_all.stores, labelled=True, **kw) for k, kw in split_kw.items()}
    for k, d in parts.items():
        if len(d) == 0:
            raise ConfigError(f"split {k!r} is empty ({split_kw[k]})")
    backbone, init_info = build_backbone(init, model=cfg.model, model_kwargs=cfg.model_kwargs, store_attrs=ds_all.attrs,
                                          sample_shape=ds_all.sample_shape, allow_partial=cfg.allow_partial_init)
    backbone.to(info.device)
    with torch.no_grad():
        x0 = ds_all[0][0].unsqueeze(0).to(info.device)
        backbone.eval()
        feat_shape = tuple(backbone.forward_features(x0).shape[1:])
    n_out = 1 if kind in ("binary", "regression") else n_classes
    model_name = init_info.get("model", cfg.model)
    head_kind = get_objective(model_name).default_head if cfg.head == "auto" else cfg.head
    head = Head(head_kind, feat_shape, n_out, cfg.dropout).to(info.device)
    model = FinetuneModel(backbone, head, squeeze=n_out == 1).to(info.device)
    if cfg.frozen:
        for p in backbone.parameters():
            p.requires_grad_(False)
    groups = [{"params": [p for p in head.parameters()], "lr": cfg.lr_head}]
    bb = [p for p in backbone.parameters() if p.requires_grad]
    if bb:
        groups.insert(0, {"params": bb, "lr": cfg.lr_backbone})
    train = parts["train"]
    bs = min(cfg.batch_size, len(train))
    per_epoch = EpochSampler(len(train), batch_size=bs, seed=cfg.seed).batches_per_epoch()
    total = per_epoch * cfg.epochs
    ocfg = OptimConfig(lr=max(cfg.lr_backbone, cfg.lr_head), weight_decay=cfg.weight_decay,
                       min_lr=min(cfg.min_lr, cfg.lr_backbone, cfg.lr_head), clip_grad=cfg.clip_grad)
    opt, sched = build_optimizer(groups, ocfg, total)
    train_labels = train.labels
    augment = _augmenter(cfg, ds_all)
    select = SELECTION[kind]
    best, best_epoch, best_state = -np.inf, -1, None
    history = []
    bar = TrainProgress(total, description=f"finetune {cfg.model} ({kind})", enabled=cfg.progress and info.is_main)
    t0 = time.perf_counter()
    try:
        for epoch in range(cfg.epochs):
            model.train()  # frozen or not, the backbone's dropout is on while training (as in the release)
            sampler = EpochSampler(len(train), batch_size=bs, seed=cfg.seed, epoch=epoch)
            losses = []
            for x, y in make_loader(train, sampler, bs, cfg.num_workers, info.device):
                x, y = x.to(info.device), y.to(info.device)
                mix = None
                if augment is not None:
                    x, mix = augment(x)
                logits = model(x)
                loss = supervised_loss(kind, logits, y, cfg.label_smoothing, mix)
                optimizer_step(loss, model, opt, sched, cfg.clip_grad)
                losses.append(float(loss.detach()))
                bar.update(epoch=epoch + 1, loss=losses[-1])
            yv, ov = predict(model, parts["val"], cfg.batch_size, info.device)
            val = score(kind, yv, ov)
            rec = {"epoch": epoch + 1, "train_loss": float(np.mean(losses)), **{f"val_{k}": v for k, v in val.items()}}
            history.append(rec)
            with (out / "metrics.jsonl").open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            v = val[select]
            if np.isfinite(v) and v > best or best_state is None:
                best, best_epoch = v, epoch + 1
                best_state = copy.deepcopy(model.state_dict())
    finally:
        bar.close()
    model.load_state_dict(best_state)
    yt, ot = predict(model, parts["test"], cfg.batch_size, info.device)
    test = score(kind, yt, ot)
    np.savez(out / "predictions.npz", y=yt, scores=ot, subject=parts["test"].meta("subject").astype(str),
             session=parts["test"].meta("session").astype(str), sample=parts["test"].sample_ids)
    a = ds_all.attrs
    report = {
        "task": a.get("task"),
        "card": a.get("card"),
        "kind": kind,
        "label_names": label_names,
        "split_by": how,
        "splits": {k: {kk: list(vv) for kk, vv in kw.items()} for k, kw in split_kw.items()},
        "n_samples": {k: len(d) for k, d in parts.items()},
        "class_counts_train": {str(c): int((train_labels == c).sum()) for c in np.unique(train_labels)} if kind != "regression" else {},
        "selection_metric": select,
        "best_epoch": best_epoch,
        "val_best": best,
        "test": test,
        "history": history,
        "init": init_info.get("init"),
        "init_weights": init_info.get("weights"),
        "head": head_kind,
        "seconds": time.perf_counter() - t0,
    }
    from neurokit.evaluation.baselines import chance_metrics, run_baselines

    report["chance"] = chance_metrics(kind, n_classes)
    if cfg.baselines:
        report["baselines"] = run_baselines(parts, kind, sfreq=float(a.get("sfreq") or 200.0), seed=cfg.seed)
    save_checkpoint(
        out / "best.pt",
        {
            "kind": "finetune",
            "model": model_name,
            "model_config": init_info["model_config"],
            "head": {"kind": head_kind, "feature_shape": list(feat_shape), "n_outputs": n_out, "dropout": cfg.dropout},
            "task_kind": kind,
            "state_dict": model.state_dict(),
            "label_names": label_names,
            "ch_names": a.get("ch_names"),
            "sample_shape": list(ds_all.sample_shape),
            "card": a.get("card"),
            "card_body": a.get("card_body"),
            "recipe": a.get("recipe"),
            "finetune_config": asdict(cfg),
            "init_weights": init_info.get("weights"),  # name, revision, commit, SHA-256 of --init
            "init_sha256": _fingerprint(init),
            "report": {k: v for k, v in report.items() if k != "history"},
        },
    )
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float))
    return report






