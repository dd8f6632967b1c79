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
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from .._errors import ChannelMismatchError, ConfigError, Interrupted
from ..data.dataset import PatchDataset
from . import distributed as dist
from ._progress import TrainProgress
from .checkpoint import check_channels, data_differences, load_checkpoint, save_checkpoint
from .metrics import SELECTION, classification_metrics, regression_metrics
from .objectives import get_objective
from .training import EpochSampler, OptimConfig, build_optimizer, make_loader, optimizer_step, seed_everything

logger = logging.getLogger("neurokit")

HEADS = ("avgpool", "all_patch_reps")
MAX_HEAD_PARAMS = 200_000_000  # beyond this a flatten head is a mistake, not a model


class Head(nn.Module):
    """Classification / regression heads over backbone features of shape ``(B, *feature_shape, D)``.

    ``avgpool``: mean over every token → Linear(D → n_outputs).
    ``all_patch_reps`` (CBraMod): flatten all tokens → Linear(→ N·D) → ELU → Dropout →
    Linear(→ D) → ELU → Dropout → Linear(→ n_outputs), where N is the second-to-last feature axis.
    """

    def __init__(self, kind: str, feature_shape: Sequence[int], n_outputs: int, dropout: float = 0.1) -> None:
        super().__init__()
        if kind not in HEADS:
            raise ConfigError(f"head={kind!r}; allowed: {HEADS}")
        self.kind = kind
        self.feature_shape = tuple(int(s) for s in feature_shape)
        d = self.feature_shape[-1]
        if kind == "avgpool":
            self.net = nn.Linear(d, n_outputs)
        else:
            flat = int(np.prod(self.feature_shape))
            n = self.feature_shape[-2] if len(self.feature_shape) >= 2 else 1
            if flat * n * d > MAX_HEAD_PARAMS:
                raise ConfigError(
                    f"head 'all_patch_reps' over features {self.feature_shape} would need a "
                    f"{flat}×{n * d} layer ({flat * n * d / 1e6:.0f} M weights); use head='avgpool' (CLI: --head avgpool)"
                )
            self.net = nn.Sequential(
                nn.Linear(flat, n * d), nn.ELU(), nn.Dropout(dropout),
                nn.Linear(n * d, d), nn.ELU(), nn.Dropout(dropout),
                nn.Linear(d, n_outputs),
            )

    def forward(self, feats: torch.Tensor) -> torch.Tensor:
        if tuple(feats.shape[1:]) != self.feature_shape and self.kind == "all_patch_reps":
            raise ChannelMismatchError(
                f"features {tuple(feats.shape[1:])} differ from the {self.feature_shape} this head was built for "
                "(all_patch_reps fixes the channel and patch counts; use head='avgpool' for varying inputs)"
            )
        if self.kind == "avgpool":
            return self.net(feats.flatten(1, -2).mean(dim=1))
        return self.net(feats.flatten(1))


class FinetuneModel(nn.Module):
    """Backbone (with ``forward_features``) + :class:`Head`. Output ``(B,)`` for binary/regression,
    ``(B, n_classes)`` for multi-class."""

    def __init__(self, backbone: nn.Module, head: Head, squeeze: bool) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.squeeze = squeeze

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.head(self.backbone.forward_features(x))
        return out.squeeze(-1) if self.squeeze else out


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
    baselines: bool = True  # score the classical baselines (neurokit.baselines) on the same split
    augment: dict[str, float] | str | None = None  # EEG augmentation (neurokit.data.augment.AugmentConfig); off
    allow_partial_init: bool = False  # load an ``init`` file that covers only part of the backbone

    def __post_init__(self) -> None:
        from ..data.augment import AugmentConfig

        aug = AugmentConfig.parse(self.augment)
        self.augment = aug.to_dict() if aug.enabled else None
        if self.epochs < 1 or self.batch_size < 1:
            raise ConfigError(f"epochs and batch_size must be >= 1 (got {self.epochs}, {self.batch_size})")
        if self.head not in HEADS + ("auto",):
            raise ConfigError(f"head={self.head!r}; allowed: {HEADS + ('auto',)}")
        if not 0 <= self.label_smoothing < 1:
            raise ConfigError(f"label_smoothing={self.label_smoothing} must be in [0, 1)")


def task_kind(labels: np.ndarray, n_classes: int) -> str:
    if labels.dtype.kind == "f":
        return "regression"
    return "binary" if n_classes == 2 else "multiclass"


def resolve_splits(ds_all: PatchDataset, override: dict[str, list[str]] | None = None) -> tuple[str, dict[str, dict]]:
    """Split definitions as PatchDataset filters: by subject from the card, or by run for one subject.

    Returns ``(how, {"train": {...}, "val": {...}, "test": {...}})`` where each value holds the keyword
    arguments (``subjects=`` or ``runs=``) for :class:`PatchDataset`.
    """
    subjects = sorted({str(s) for s in ds_all.meta("subject")})
    if override:
        _check_disjoint(override)
        return "subject", {k: {"subjects": v} for k, v in override.items()}
    if len(subjects) == 1:
        runs = sorted({str(r) for r in ds_all.meta("run")})
        if len(runs) < 3:
            raise ConfigError(f"one subject and {len(runs)} run(s): need >= 3 runs to split train/val/test by run")
        return "run", {"train": {"runs": runs[:-2]}, "val": {"runs": [runs[-2]]}, "test": {"runs": [runs[-1]]}}
    from ..cards import DataCard

    attrs = ds_all.attrs
    body = attrs.get("card_body")
    if not body:
        raise ConfigError("the store names no data card: pass splits={'train': [...], 'val': [...], 'test': [...]}")
    card = DataCard(name=body["name"], raw=body)
    sp = card.splits(attrs.get("task"))
    out = {}
    for k in ("train", "val", "test"):
        chosen = [s for s in sp.get(k, []) if s in subjects]
        if not chosen:
            raise ConfigError(
                f"split {k!r} of card {card.name!r} has no subject in the store (store subjects: {subjects}); "
                "pass explicit splits (CLI: --train-subjects/--val-subjects/--test-subjects)"
            )
        out[k] = {"subjects": chosen}
    return "subject", out


def _check_disjoint(splits: dict[str, list[str]]) -> None:
    train = set(splits.get("train", []))
    for k in ("val", "test"):
        both = sorted(train & set(splits.get(k, [])))
        if both:
            raise ConfigError(f"subjects {both} are in both 'train' and {k!r}: the {k} score would leak training data")
    both = sorted(set(splits.get("val", [])) & set(splits.get("test", [])))
    if both:
        logger.warning("subjects %s are in both 'val' and 'test': model selection sees the test subjects", both)


def _build_backbone(init: str | Path | None, cfg: FinetuneConfig, ds: PatchDataset) -> tuple[nn.Module, dict]:
    objective = get_objective(cfg.model)
    info: dict[str, Any] = {"init": str(init) if init else None}
    if init is None:
        module = objective.build(ds.attrs, ds.sample_shape, dict(cfg.model_kwargs))
        return objective.backbone(module), {**info, "model_config": module.config.to_dict()}
    from ..models.hub import fetch_weights
    from ..models.weights import load_weights

    path, weights_info = fetch_weights(str(init))  # hub:ORG/NAME[@REV] or a path; name, revision, commit, sha256
    info["weights"] = weights_info
    ck = load_checkpoint(path)
    if ck.get("kind") == "finetune":
        raise ConfigError(f"{init}: is a fine-tuned checkpoint; start from a pretrain checkpoint or a state_dict")
    model_name = ck.get("model", cfg.model)
    if model_name != cfg.model:
        objective = get_objective(model_name)
    mcfg = dict(ck.get("model_config") or {})
    if ck.get("format") == "state_dict" and model_name == "cbramod" and "n_layers" not in mcfg:
        mcfg["n_layers"] = _cbramod_layers(ck["state_dict"]) or 12
    mcfg.update(cfg.model_kwargs)
    module = objective.rebuild(mcfg)
    report = load_weights(module, ck["state_dict"], allow_partial=cfg.allow_partial_init, name=str(init))
    (logger.info if report.complete else logger.warning)("%s", report.line())
    pre_ch = (ck.get("store_attrs") or {}).get("ch_names")
    now_ch = ds.attrs.get("ch_names")
    if pre_ch and now_ch and list(pre_ch) != list(now_ch):
        logger.warning("%s was pretrained on %d channels, the store has %d (%d in common); the backbone is "
                       "montage-independent, fine-tuning adapts it", init, len(pre_ch), len(now_ch),
                       len(set(pre_ch) & set(now_ch)))
    # coverage (loaded/total, missing, unexpected) and where the file came from (name, revision, commit, SHA-256)
    info.update(model=model_name, model_config=module.config.to_dict(), weights={**report.to_dict(), **weights_info},
                weights_line=report.line(), pretrain_recipe=ck.get("recipe"))
    return objective.backbone(module), info


def _cbramod_layers(sd: dict) -> int | None:
    """Layer count of a CBraMod state dict (``encoder.layers.{i}.…``; wrapper prefixes allowed)."""
    idx = [int(m.group(1)) for k in sd for m in [re.search(r"encoder\.layers\.(\d+)\.", k)] if m]
    return max(idx) + 1 if idx else None


def _predict(model: nn.Module, ds: PatchDataset, batch_size: int, device) -> tuple[np.ndarray, np.ndarray]:
    model.eval()
    sampler = EpochSampler(len(ds), batch_size=batch_size, seed=0, shuffle=False, drop_last=False)
    ys, outs = [], []
    with torch.no_grad():
        for x, y in make_loader(ds, sampler, batch_size, 0, device):
            outs.append(model(x.to(device)).float().cpu())
            ys.append(y)
    return torch.cat(ys).numpy(), torch.cat(outs).numpy()


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
    from ..data.augment import AugmentConfig, Augmenter

    aug = AugmentConfig.parse(cfg.augment)
    if not aug.enabled:
        return None
    if ds.attrs.get("modality", "eeg") != "eeg" or len(ds.sample_shape) != 3:
        raise ConfigError(f"augmentation is defined for EEG patch stores (C, N, P); this store holds "
                          f"{ds.attrs.get('modality')} samples {ds.sample_shape}")
    scale = float((ds.attrs.get("recipe") or {}).get("scale") or 1e4)  # data units per volt
    return Augmenter(aug, sfreq=float(ds.attrs.get("sfreq") or 200.0), units_per_uv=scale * 1e-6, seed=cfg.seed)


def score(kind: str, y: np.ndarray, out: np.ndarray) -> dict[str, float]:
    return regression_metrics(y, out) if kind == "regression" else classification_metrics(y, out)


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
        Evaluation scheme (:mod:`neurokit.pipelines.schemes`): ``"card"`` (one run on the card's splits),
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
    from .schemes import SCHEMES, run_scheme

    if scheme not in SCHEMES:
        raise ConfigError(f"scheme={scheme!r}; allowed: {', '.join(SCHEMES)}")
    info = dist.setup(cfg.device)
    try:
        if scheme != "card":
            stores = list(store) if isinstance(store, (list, tuple)) else [store]
            return run_scheme(stores, out, cfg, scheme, init=init, info=info, n_folds=n_folds)
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
    from ..io.eeg import file_sha256

    path = Path(str(init)).expanduser()
    if not path.is_file():  # a Hub name: its revision, commit and hash are recorded under init_weights
        return str(init)
    return file_sha256(path)


def open_labelled(store) -> tuple[PatchDataset, list[str], int, str]:
    """The labelled samples of ``store`` (path(s)) with class names, class count and task kind.

    Raises :class:`ConfigError` when the store holds no labelled sample."""
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    ds_all = PatchDataset(stores, labelled=True)
    if len(ds_all) == 0:
        raise ConfigError(f"{', '.join(map(str, stores))}: no labelled samples (prepare the store with a labelled task)")
    label_names = list(ds_all.attrs.get("label_names") or [])
    labels = ds_all.stores[0].labels
    n_classes = len(label_names) or int(labels.max()) + 1
    return ds_all, label_names, n_classes, task_kind(labels, n_classes)


def _finetune(store, out: Path, cfg: FinetuneConfig, init, info, split_kw: dict | None = None,
              leak_unit: str | None = None) -> dict[str, Any]:
    seed_everything(cfg.seed)
    ds_all, label_names, n_classes, kind = open_labelled(store)
    labels = ds_all.stores[0].labels
    if split_kw is None:
        how, split_kw = resolve_splits(ds_all, cfg.splits)
    else:  # one fold of an evaluation scheme
        how = "fold"
    from .schemes import check_no_leak

    check_no_leak(ds_all, split_kw, leak_unit or ("run" if how == "run" else "subject"))
    out.mkdir(parents=True, exist_ok=True)
    parts = {k: PatchDataset(ds_all.stores, labelled=True, **kw) for k, kw in split_kw.items()}
    for k, d in parts.items():
        if len(d) == 0:
            raise ConfigError(f"split {k!r} is empty ({split_kw[k]})")
    backbone, init_info = _build_backbone(init, cfg, ds_all)
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
            yv, ov = _predict(model, parts["val"], cfg.batch_size, info.device)
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
    yt, ot = _predict(model, parts["test"], cfg.batch_size, info.device)
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
    from ..baselines import chance_metrics, run_baselines

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


def load_finetuned(path: str | Path, device="cpu") -> tuple[FinetuneModel, dict]:
    """Rebuild a :class:`FinetuneModel` from ``neuro finetune``'s ``best.pt``."""
    ck = load_checkpoint(path)
    if ck.get("kind") != "finetune":
        raise ConfigError(f"{path}: not a fine-tuned checkpoint (kind={ck.get('kind')!r})")
    objective = get_objective(ck["model"])
    backbone = objective.backbone(objective.rebuild(ck["model_config"]))
    h = ck["head"]
    model = FinetuneModel(backbone, Head(h["kind"], h["feature_shape"], h["n_outputs"], h["dropout"]), squeeze=h["n_outputs"] == 1)
    model.load_state_dict(ck["state_dict"])
    return model.to(device).eval(), ck


def evaluate(checkpoint: str | Path, store: str | Path | Sequence[str | Path], *, split: str | None = "test",
             subjects: Sequence[str] | None = None, batch_size: int = 64, device: str = "auto",
             allow_seen: bool = False) -> dict[str, Any]:
    """Score a fine-tuned checkpoint on a labelled store.

    ``split``: ``"train"``, ``"val"`` or ``"test"`` — the subjects (or runs) of that split *as the
    checkpoint was fine-tuned* (its ``--train/--val/--test-subjects``, else the card's) — or ``None`` for
    every labelled sample; ``subjects`` overrides it. Scoring samples of subjects (runs) that were in the
    model's training or validation split gives an optimistic number: it is refused unless ``split`` names
    a split of the checkpoint by name, or ``allow_seen=True``.

    Returns
    -------
    dict of metrics, plus ``n_samples``, ``split``, ``subjects`` (or ``runs``) scored and ``seen`` (the
    scored ones the model was trained or selected on).

    Raises
    ------
    ChannelMismatchError
        The store's channels (names or order) differ from the checkpoint's.
    ConfigError
        Samples the model has seen selected without ``allow_seen``; no sample selected.
    """
    from .multitask import evaluate_m4oe, is_m4oe_checkpoint

    if is_m4oe_checkpoint(checkpoint):
        if subjects is not None:
            raise ConfigError("subjects= is not available for M4oE checkpoints (each task has its own store); use split=")
        return evaluate_m4oe(checkpoint, list(store) if isinstance(store, (list, tuple)) else [store],
                             split=split, batch_size=batch_size, device=device)
    dev = dist.setup(device).device
    model, ck = load_finetuned(checkpoint, dev)
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    ds_all = PatchDataset(stores, labelled=True)
    first = str(stores[0])
    if len(ds_all) == 0:
        raise ConfigError(f"{first}: no labelled sample (the store was prepared without a labelled task)")
    label_names = list(ds_all.attrs.get("label_names") or [])
    kind = task_kind(ds_all.stores[0].labels, len(label_names) or int(ds_all.stores[0].labels.max()) + 1)
    if kind != ck["task_kind"]:
        raise ConfigError(f"{first}: holds a {kind} task, the checkpoint {checkpoint} was fine-tuned for {ck['task_kind']}")
    if ck.get("label_names") and label_names and list(ck["label_names"]) != label_names:
        raise ConfigError(f"{first}: classes {label_names} differ from the checkpoint's {ck['label_names']}")
    check_channels(ck.get("ch_names"), ds_all.attrs.get("ch_names"), store=first, checkpoint=checkpoint)
    if tuple(ds_all.sample_shape) != tuple(ck.get("sample_shape", ds_all.sample_shape)) and ck["head"]["kind"] == "all_patch_reps":
        raise ChannelMismatchError(f"{first}: sample shape {ds_all.sample_shape} differs from the checkpoint's {ck['sample_shape']}")
    rep = ck.get("report") or {}
    trained = rep.get("splits")  # {"train": {"subjects": [...]}, ...} as fine-tuned
    if not trained:
        _, trained = resolve_splits(ds_all)
    if subjects is not None:
        ds = PatchDataset(ds_all.stores, labelled=True, subjects=subjects)
    elif split is not None:
        if split not in trained:
            raise ConfigError(f"split {split!r}: the checkpoint's splits are {sorted(trained)} (or every sample: split=None, CLI --split all)")
        ds = PatchDataset(ds_all.stores, labelled=True, **trained[split])
    else:
        ds = ds_all
    if len(ds) == 0:
        asked = f"subjects {', '.join(subjects)}" if subjects is not None else f"the {split} split ({_kw_ids(trained[split])})"
        raise ConfigError(f"{first}: no labelled sample of {asked}; subjects in the store: {', '.join(ds_all.store_subjects)}")
    key = "run" if "runs" in trained.get("train", {}) else "subject"
    scored = sorted({str(v) for v in ds.meta(key)})
    seen_ids = {str(v) for k in ("train", "val") for v in next(iter(trained.get(k, {"x": []}).values()))}
    seen = [v for v in scored if v in seen_ids]
    if seen and not allow_seen and (subjects is not None or split is None):
        raise ConfigError(
            f"{checkpoint}: was trained or selected on {key}s {', '.join(seen)}, which the chosen samples include; "
            f"their score would be optimistic. Score its test split (the default), or pass allow_seen=True "
            f"(CLI: --allow-seen) to score them anyway"
        )
    y, o = _predict(model, ds, batch_size, dev)
    return {"checkpoint": str(checkpoint), "split": split if subjects is None else None, "n_samples": len(ds),
            f"{key}s": scored, "seen": seen, **score(ck["task_kind"], y, o)}


def _kw_ids(kw: dict) -> str:
    return ", ".join(str(v) for vals in kw.values() for v in vals)
