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
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from neurokit._utils.errors import ConfigError
from neurokit.data.augment import make_augmenter
from neurokit.data.dataset import PatchDataset, open_labelled
from neurokit.data.provenance import check_split_recordings, pretraining_overlap, warn_overlap
from neurokit.data.splits import resolve_splits
from neurokit.evaluation.metrics import SELECTION, degenerate_predictions, mark_undefined, score
from neurokit.evaluation.protocol import paper_figures
from neurokit.store.patch_store import StoreMeta
from neurokit.models.checkpoint import (
    check_resume_data,
    data_differences,
    init_fingerprint,
    load_checkpoint,
    save_checkpoint,
)
from neurokit.models.heads import HEADS, FinetuneModel, Head, backbone_features
from neurokit.models.input_norm import fit_input_norm
from neurokit.models.lora import add_lora, merge_lora, trainable_parameters
from neurokit.models.registry import build_backbone, get_model_spec
from neurokit.training.config import LATER_DEFAULTS, RESUME_MAY_CHANGE, FinetuneConfig, finetune_record
from neurokit.pipelines.finetune_config import check_finetune_options
from neurokit.pipelines.outputs import run_in_folder
from neurokit.training import distributed as dist
from neurokit.training.losses import supervised_loss
from neurokit.training.optim import lr_groups, seed_everything, two_rate_optim
from neurokit.training.predict import predict
from neurokit.training.trainer import Trainer

logger = logging.getLogger("neurokit")
#: what one run found in its results (degenerate predictions, a confound): a comparison of many runs quiets it
#: and reports the same findings in its own table
run_logger = logging.getLogger("neurokit.run")


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
    the same settings there (``last.pt`` only) is resumed.

    Parameters
    ----------
    store : path or sequence of paths
        Labelled patch store(s).
    out_dir : path
        The run's folder.
    cfg : FinetuneConfig
        The run's settings.
    init : path or str, optional
        Initial weights, as :func:`finetune`'s.
    overwrite : bool
        Replace a run of other settings in ``out_dir``.

    Returns
    -------
    (dict, bool)
        The report, and whether it was reused.

    Raises
    ------
    FileExistsError
        ``out_dir`` holds a run of other settings and ``overwrite`` is not given.
    """
    out = Path(out_dir)
    if not overwrite and not (out / "best.pt").exists() and (out / "last.pt").exists():
        try:
            return finetune(store, out, cfg, init=init, resume=True), False
        except ConfigError as exc:
            raise FileExistsError(
                f"{out} holds another fine-tuning run ({exc}); pass overwrite=True to "
                "replace it, or choose another output folder"
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
            "to replace it, or choose another output folder"
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
        and not (k not in saved and k in LATER_DEFAULTS and v == LATER_DEFAULTS[k])
        and _norm_json(v) != _norm_json(saved.get(k))
    ]


def _norm_json(v):
    return json.loads(json.dumps(v, default=str))


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
        The ``init`` given now (compared by SHA-256).
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
            "(only epochs may grow) or start a new run with overwrite=True"
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
    rates = (cfg.lr_backbone, cfg.lr_head)
    ocfg = two_rate_optim(rates, weight_decay=cfg.weight_decay, min_lr=cfg.min_lr, clip_grad=cfg.clip_grad)
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
        augment=make_augmenter(cfg.augment, ds_all, seed=cfg.seed),
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
                f"(epochs={trainer.epochs_done + 1} or more) to resume"
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
    from neurokit.evaluation.baselines import baseline_verdict, chance_metrics, run_baselines

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
    report["verdict"] = baseline_verdict(kind, report["test"], report.get("baselines"), report["chance"], select)
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

    Parameters
    ----------
    cfg : FinetuneConfig
        The run's settings (``model``, ``model_kwargs``, ``allow_partial_init``, ``allow_mismatch``,
        ``init_sha256``).
    init : path or str, optional
        Initial weights; ``None``: from scratch.
    ds : PatchDataset
        The data (its attributes and sample shape).

    Returns
    -------
    (nn.Module, dict, str)
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
            f"model={cfg.model!r} but init={str(init)!r} holds a {model_name!r} model; the checkpoint's "
            f"family is the run's: drop model={cfg.model!r}"
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
    assert cfg.lr_head is not None  # FinetuneConfig.__post_init__ sets it
    groups = lr_groups(backbone, head, cfg.lr_backbone, cfg.lr_head)
    head_info = {"kind": head_kind, "feature_shape": list(feat_shape), "n_outputs": n_out, "dropout": cfg.dropout}
    return model, groups, model_name, init_info, head_info


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
        "input_adaptation": init_info.get("input_adaptation"),  # foundation models: resampled, scaled, channels
        "head": head_kind,
        **paper_figures(meta.card_body, meta.task),
    }


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
            "init_weights": init_info.get("weights"),  # name, revision, commit, SHA-256 of init
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
