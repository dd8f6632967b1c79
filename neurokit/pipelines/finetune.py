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
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Collection, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from neurokit._utils.errors import ConfigError, Interrupted
from neurokit.data.dataset import PatchDataset, open_labelled
from neurokit.data.provenance import pretraining_overlap, warn_overlap
from neurokit.data.splits import resolve_splits
from neurokit.evaluation.metrics import SELECTION, degenerate_predictions, score
from neurokit.io.store import StoreMeta
from neurokit.models.checkpoint import (
    data_differences,
    load_checkpoint,
    save_checkpoint,
)
from neurokit.models.heads import HEADS, FinetuneModel, Head
from neurokit.models.input_norm import fit_input_norm
from neurokit.models.registry import build_backbone, get_model_spec
from neurokit.training import distributed as dist
from neurokit.training.objectives import get_objective
from neurokit.training.optim import OptimConfig, seed_everything
from neurokit.training.predict import predict
from neurokit.training.trainer import Trainer

logger = logging.getLogger("neurokit")







@dataclass
class FinetuneConfig:
    """Fine-tuning settings; defaults are CBraMod's (50 epochs, batch 64, backbone lr 1e-4, head lr
    5e-4, weight decay 0.05, cosine to 1e-6, clip 1.0, label smoothing 0.1).

    ``frozen``: the backbone's weights are not trained (only the head is). As in the CBraMod release
    (``finetune_trainer.py`` sets ``requires_grad=False`` on the backbone and then calls ``model.train()`` on
    the whole model), the backbone stays in training mode, so its dropout is active while the head trains;
    it is in eval mode for validation and test like the rest of the model.

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
            bad = "epochs" if self.epochs < 1 else "batch_size"
            raise ConfigError(f"{bad}={getattr(self, bad)}: must be >= 1")
        if self.head not in HEADS + ("auto",):
            raise ConfigError(f"head={self.head!r}: allowed {', '.join(HEADS + ('auto',))} (and m4oe with several "
                              "tasks in the CLI: --head m4oe --task CARD:TASK)")
        if self.model is not None:
            get_model_spec(self.model)  # ConfigError naming the known families
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
        raise ConfigError("--augment mixup: the M4oE head's multi-task loss does not mix labels; drop mixup "
                          "from --augment (the other transforms apply)")
    if ds.info.modality != "eeg" or len(ds.sample_shape) != 3:
        raise ConfigError(f"augmentation is defined for EEG patch stores (C, N, P); this store holds "
                          f"{ds.info.modality} samples {ds.sample_shape}")
    scale = float(ds.info.recipe.get("scale") or 1e4)  # data units per volt
    return Augmenter(aug, sfreq=float(ds.info.sfreq or 200.0), units_per_uv=scale * 1e-6, seed=cfg.seed)




#: options of ``neuro finetune`` that only the M4oE head uses (CLI flag → what it does)
M4OE_ONLY = {"--task": "names the tasks of the multi-task head", "--modality": "names the M4oE modalities",
             "--m4oe-preset": "sizes the M4oE experts", "--alpha": "weights the M4oE routing term",
             "--focal-gamma": "sets the M4oE focal loss"}

#: evaluation schemes whose fold count ``n_folds`` (CLI ``--folds``) sets
FOLDED_SCHEMES = ("kfold-subject", "within-session")


def check_finetune_options(cfg: FinetuneConfig, *, head: str | None = None, scheme: str = "card",
                           resume: bool = False, overwrite: bool = False, given: Collection[str] = (),
                           init: str | Path | None = None, stores: Sequence[str | Path] | None = None) -> None:
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
        raise ConfigError("--allow-partial-init: it lets --init weights cover part of the backbone; without --init "
                          "the backbone is trained from scratch")
    if "--label-smoothing" in given and stores and head != "m4oe":
        kind = open_labelled(stores)[3]
        if kind != "multiclass":
            raise ConfigError(f"--label-smoothing: it smooths multi-class targets; {', '.join(map(str, stores))} "
                              f"holds a {kind} task (one logit, no smoothing)")
    if cfg.frozen and "--lr-backbone" in given:
        raise ConfigError("--lr-backbone: --frozen keeps the backbone's weights fixed, so it has no learning rate; "
                          "drop one of them")
    if head == "m4oe":
        if scheme != "card":
            raise ConfigError(f"--scheme {scheme}: --head m4oe trains and scores every task on its card's splits; "
                              "evaluation schemes are for the single-task heads (avgpool, all_patch_reps)")
        if cfg.splits is not None:
            raise ConfigError("--train-subjects/--val-subjects/--test-subjects: --head m4oe splits each task by its "
                              "own card; subject splits are for the single-task heads")
        if "--folds" in given:
            raise ConfigError("--folds: --head m4oe runs no evaluation scheme, so there are no folds to count")
        from neurokit.data.augment import AugmentConfig

        if AugmentConfig.parse(cfg.augment).mixup:
            raise ConfigError("--augment mixup: the M4oE head's multi-task loss does not mix labels; drop mixup "
                              "from --augment (the other transforms apply)")
        return
    for flag in M4OE_ONLY:
        if flag in given:
            raise ConfigError(f"{flag}: {M4OE_ONLY[flag]}, so it needs --head m4oe (got --head {head})")
    if "--folds" in given and scheme not in FOLDED_SCHEMES:
        raise ConfigError(f"--folds: only the {' and '.join(FOLDED_SCHEMES)} schemes have a fold count "
                          f"(got --scheme {scheme})")
    if scheme != "card":
        if resume:
            raise ConfigError(f"--resume: a --scheme {scheme} run is one run per fold; run it again with --overwrite")
        if cfg.splits is not None:
            raise ConfigError(f"--train-subjects/--val-subjects/--test-subjects: --scheme {scheme} makes its own "
                              "folds; subject splits go with --scheme card")


def finetune(store: str | Path | Sequence[str | Path], out_dir: str | Path, cfg: FinetuneConfig | None = None,
             *, init: str | Path | None = None, overwrite: bool = False, scheme: str = "card",
             n_folds: int = 5, resume: bool = False) -> dict[str, Any]:
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
        Replace an earlier run in ``out_dir`` (otherwise :class:`FileExistsError`).
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
    """
    cfg = cfg or FinetuneConfig()
    out = Path(out_dir)
    check_finetune_options(cfg, scheme=scheme, resume=resume, overwrite=overwrite, init=init)
    if resume:
        if not (out / "last.pt").exists():
            raise FileNotFoundError(f"{out / 'last.pt'}: nothing to resume (run without resume=True (CLI: --resume) first)")
    elif any((out / f).exists() for f in ("report.json", "best.pt", "last.pt")):
        if not overwrite:
            raise FileExistsError(f"{out} already holds a fine-tuning run; pass overwrite=True (CLI: --overwrite), "
                                  "resume=True (CLI: --resume) to continue it, or choose another output folder")
        for f in ("metrics.jsonl", "last.pt"):
            (out / f).unlink(missing_ok=True)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    from neurokit.evaluation.schemes import run_scheme

    info = dist.setup(cfg.device)
    try:
        if scheme != "card":
            stores = list(store) if isinstance(store, (list, tuple)) else [store]
            return run_scheme(stores, out, cfg, scheme, n_folds=n_folds,
                              fit_fold=lambda d, kw, unit: _finetune(stores, d, cfg, init, info, split_kw=kw, leak_unit=unit))
        return _finetune(store, out, cfg, init, info, resume=resume)
    except BaseException as exc:
        saved = scheme == "card" and (out / "last.pt").exists()
        if created and not saved and not (out / "report.json").exists():
            import shutil

            shutil.rmtree(out, ignore_errors=True)  # made by this call, holding no result: leave nothing behind
        if isinstance(exc, KeyboardInterrupt) and not saved:
            raise Interrupted(f"interrupted: fine-tuning saves last.pt at the end of each epoch, and none had ended, "
                              f"so nothing was saved{f' ({out} removed)' if created else ''}; run the same command "
                              "again") from None
        if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Interrupted):
            raise Interrupted(f"interrupted after training: {out / 'last.pt'} holds it; the same command with "
                              "--resume scores it") from None
        raise
    finally:
        dist.cleanup(info)


def finetune_or_reuse(store, out_dir: str | Path, cfg: FinetuneConfig, *, init: str | Path | None = None,
                      overwrite: bool = False) -> tuple[dict[str, Any], bool]:
    """:func:`finetune`, or the report already in ``out_dir`` when it came from the same settings, the same
    ``init`` file (by SHA-256) and data of the same card, recipe, channels and units; an interrupted run of
    the same settings there (``last.pt`` only) is resumed. Returns ``(report, reused)``. A different run
    there raises :class:`FileExistsError` unless ``overwrite``."""
    out = Path(out_dir)
    if not overwrite and not (out / "best.pt").exists() and (out / "last.pt").exists():
        try:
            return finetune(store, out, cfg, init=init, resume=True), False
        except ConfigError as exc:
            raise FileExistsError(f"{out} holds another fine-tuning run ({exc}); pass overwrite=True (CLI: "
                                  "--overwrite) to replace it, or choose another output folder") from None
    if overwrite or not (out / "best.pt").exists():
        return finetune(store, out, cfg, init=init, overwrite=overwrite), False
    ck = load_checkpoint(out / "best.pt")
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    diff = _config_differences(cfg, ck.get("finetune_config") or {}, ("progress", "device", "num_workers"))
    if init_fingerprint(init) != ck.get("init_sha256"):
        diff.append("init")
    attrs = PatchDataset(stores).attrs
    diff += list(data_differences({"card": ck.get("card"), "recipe": ck.get("recipe"), "ch_names": ck.get("ch_names")}, attrs))
    if diff:
        raise FileExistsError(f"{out} holds a fine-tuning run that differs in {', '.join(diff)}; pass overwrite=True "
                              "(CLI: --overwrite) to replace it, or choose another output folder")
    return json.loads((out / "report.json").read_text()), True


def _config_differences(cfg: FinetuneConfig, saved: dict, ignore: Sequence[str]) -> list[str]:
    """Fields of ``cfg`` that differ from a saved ``finetune_config`` (``model=None`` matches the saved family)."""
    return [k for k, v in asdict(cfg).items() if k not in ignore and not (k == "model" and v is None)
            and not (k == "head" and v == "auto" and saved.get(k) in (*HEADS, "m4oe"))
            and _norm_json(v) != _norm_json(saved.get(k))]


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


def check_resume(ck: dict, cfg: FinetuneConfig, init, path: Path, *, kind: str = "finetune_last",
                 head: dict | None = None) -> None:
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
    diff = _config_differences(cfg, ck.get("finetune_config") or {},
                               ("epochs", "progress", "device", "num_workers", "baselines"))
    if init_fingerprint(init) != ck.get("init_sha256"):
        diff.append("init")
    saved_head = ck.get("head_settings") or {}
    diff += [k for k, v in (head or {}).items() if _norm_json(v) != _norm_json(saved_head.get(k))]
    if diff:
        raise ConfigError(f"{path}: the run was made with other {', '.join(diff)}; resume with the same settings "
                          "(only --epochs may grow) or start a new run with --overwrite")


def _finetune(store, out: Path, cfg: FinetuneConfig, init, info, split_kw: dict | None = None,
              leak_unit: str | None = None, resume: bool = False) -> dict[str, Any]:
    """Fine-tune on one store (or one evaluation fold of it) into ``out``; returns the run's report."""
    seed_everything(cfg.seed)
    ck = None
    if resume:
        ck = load_checkpoint(out / "last.pt")
        check_resume(ck, cfg, init, out / "last.pt")
    ds_all, label_names, n_classes, kind = open_labelled(store)
    how, split_kw, parts = _split_parts(ds_all, out, cfg, split_kw, leak_unit)
    model, groups, model_name, init_info, head_info = _build_finetune_model(ds_all, cfg, init, info, kind, n_classes)
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

    ocfg = OptimConfig(lr=max(cfg.lr_backbone, cfg.lr_head), weight_decay=cfg.weight_decay,
                       min_lr=min(cfg.min_lr, cfg.lr_backbone, cfg.lr_head), clip_grad=cfg.clip_grad)
    trainer = Trainer(model, train, loss, model_name=model_name, optim=ocfg, batch_size=min(cfg.batch_size, len(train)),
                      epochs=cfg.epochs, param_groups=groups, seed=cfg.seed, info=info, num_workers=cfg.num_workers,
                      out=out, validate=validate, select=f"val_{select}",
                      augment=make_augmenter(cfg, ds_all), stage="finetune", detail=kind, progress=cfg.progress,
                      checkpoint_extra=lambda: {"kind": "finetune_last", "model": model_name,
                                                "model_config": init_info["model_config"], "head": head_info,
                                                "finetune_config": saved_cfg, "init_sha256": init_fingerprint(init),
                                                **_data_identity(meta)})
    if ck is not None:
        trainer.resume(ck)
        if trainer.step >= trainer.total and (out / "report.json").exists():
            raise ConfigError(f"{out / 'last.pt'} has done {trainer.epochs_done} epoch(s); ask for more "
                              f"(--epochs > {trainer.epochs_done}) to resume")
    t0 = time.perf_counter()
    res = trainer.fit()
    trainer.load_best()
    yt, ot = predict(model, parts["test"], cfg.batch_size, info.device)
    test = score(kind, yt, ot)
    if info.is_main:
        np.savez(out / "predictions.npz", y=yt, scores=ot, subject=parts["test"].meta("subject").astype(str),
                 session=parts["test"].meta("session").astype(str), sample=parts["test"].sample_ids)
    report = _finetune_report(meta, model_name, kind, label_names, how, split_kw, parts, select, res, test, init_info,
                              head_info["kind"])
    report["seconds"] = time.perf_counter() - t0
    report.update(input_norm=init_info["input_norm"], pretraining_overlap=overlap,
                  pretraining_sources=init_info.get("pretraining_sources"))
    report["degenerate"] = degenerate_predictions(kind, yt, ot, label_names)  # None when the predictions inform
    if report["degenerate"]:
        logger.warning("%s: %s", out, report["degenerate"])
    from neurokit.evaluation.baselines import chance_metrics, run_baselines

    report["chance"] = chance_metrics(kind, n_classes)
    if cfg.baselines:
        report["baselines"] = run_baselines(parts, kind, sfreq=float(meta.sfreq or 200.0), seed=cfg.seed)
    if info.is_main:
        _save_finetuned(out, ds_all, model, model_name, init_info, head_info, kind, label_names, saved_cfg, init,
                        report)
    return report


def _split_parts(ds_all, out: Path, cfg: FinetuneConfig, split_kw, leak_unit):
    """Resolve the splits (or take a fold's), check them for leaks and open each; returns ``(how, split_kw, parts)``."""
    if split_kw is None:
        how, split_kw = resolve_splits(ds_all, cfg.splits)
    else:  # one fold of an evaluation scheme
        how = "fold"
    from neurokit.data.splits import check_no_leak

    check_no_leak(ds_all, split_kw, leak_unit or ("run" if how == "run" else "subject"))
    parts = {k: PatchDataset(ds_all.stores, labelled=True, **kw) for k, kw in split_kw.items()}
    for k, d in parts.items():
        if len(d) == 0:
            raise ConfigError(f"split {k!r} is empty ({split_kw[k]})")
    train_labels = parts["train"].labels
    if train_labels.dtype.kind in "iu" and len(np.unique(train_labels)) < 2:
        names = list(ds_all.info.label_names)
        c = int(train_labels[0])
        one = names[c] if c < len(names) else f"class {c}"
        raise ConfigError(f"split 'train' holds one class only ({one!r}, {len(train_labels)} samples of "
                          f"{_kw_text(split_kw['train'])}): a classifier cannot learn from it; choose training "
                          "subjects (runs) that hold every class")
    out.mkdir(parents=True, exist_ok=True)
    return how, split_kw, parts


def _kw_text(kw: dict) -> str:
    """``{"subjects": [...]}`` → ``"subjects S001, S002"`` for messages."""
    return "; ".join(f"{k} {', '.join(map(str, v))}" for k, v in kw.items())


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
    backbone, init_info = build_backbone(init, model=cfg.model or "cbramod", model_kwargs=cfg.model_kwargs,
                                         store_attrs=ds.attrs, sample_shape=ds.sample_shape,
                                         allow_partial=cfg.allow_partial_init)
    model_name = init_info.get("model", cfg.model or "cbramod")
    if cfg.model is not None and model_name != cfg.model:
        raise ConfigError(f"model={cfg.model!r} but --init {init} holds a {model_name!r} model; the checkpoint's family "
                          "is the run's: drop --model")
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
        feat_shape = tuple(backbone.forward_features(x0).shape[1:])
    n_out = 1 if kind in ("binary", "regression") else n_classes
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
    head_info = {"kind": head_kind, "feature_shape": list(feat_shape), "n_outputs": n_out, "dropout": cfg.dropout}
    return model, groups, model_name, init_info, head_info


def _finetune_report(meta: StoreMeta, model_name, kind, label_names, how, split_kw, parts, select, res, test, init_info,
                     head_kind) -> dict[str, Any]:
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
        "class_counts_train": {str(c): int((train_labels == c).sum()) for c in np.unique(train_labels)} if kind != "regression" else {},
        "selection_metric": select,
        "best_epoch": res.best_epoch,
        "val_best": res.best,
        "test": test,
        "history": res.records,
        "init": init_info.get("init"),
        "init_weights": init_info.get("weights"),
        "head": head_kind,
    }


def _save_finetuned(out: Path, ds_all, model, model_name, init_info, head_info, kind, label_names, saved_cfg, init,
                    report) -> None:
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
            "finetune_config": saved_cfg,
            "init_weights": init_info.get("weights"),  # name, revision, commit, SHA-256 of --init
            "init_sha256": init_fingerprint(init),
            "report": {k: v for k, v in report.items() if k != "history"},
        },
    )
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float))


def _data_identity(meta: StoreMeta) -> dict[str, Any]:
    """The store's card, recipe and channels as a checkpoint records them (a dict and a list; ``None`` when absent)."""
    return {"card": meta.card, "recipe": meta.recipe or None,
            "ch_names": None if meta.ch_names is None else list(meta.ch_names)}
