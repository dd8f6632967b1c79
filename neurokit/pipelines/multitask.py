"""Multi-task, multi-modal fine-tuning with an M4oE head (``neuro finetune`` with ``head='m4oe'``).

One backbone (CBraMod: any channel count) encodes every store; each task's modalities are named channel
groups of its store (the card's ``modalities``, or ``modalities=["NAME=CH,CH"]``), whose tokens go to one
:class:`~neurokit.models.m4oe.M4oE` head. Each task keeps its own store, split (from its card), loss and
metrics; training steps go round the tasks' batches in a seeded shuffled order. The report gives per
task: test metrics, the classical baselines on the same split, chance, ``modality_contributions`` (the
share of MToE routing mass each modality gives the task: mean and per sample) and, since routing mass is
not causal importance, ``ablation_contributions`` (what masking each modality does to the task's loss,
per sample, and to its test metrics, over the split).
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
from neurokit.data.dataset import PatchDataset
from neurokit.data.splits import class_count, resolve_splits, task_kind
from neurokit.data.tasks import match_stores, parse_modalities, parse_tasks, task_layout
from neurokit.evaluation.contributions import ablation_contributions, contributions
from neurokit.evaluation.metrics import SELECTION, degenerate_predictions, score
from neurokit.models.checkpoint import init_fingerprint, load_checkpoint, save_checkpoint
from neurokit.models.heads import M4OE_KIND, M4oEFinetuneModel
from neurokit.models.m4oe import M4oE, M4oEConfig
from neurokit.models.registry import get_model_spec
from neurokit.pipelines.finetune import check_resume, finetune_backbone
from neurokit.training.config import FinetuneConfig, finetune_record
from neurokit.pipelines.finetune_config import check_finetune_options
from neurokit.pipelines.outputs import run_in_folder
from neurokit.training import distributed as dist
from neurokit.training.losses import class_frequencies
from neurokit.training.optim import lr_groups, seed_everything, two_rate_optim
from neurokit.training.predict import predict_task
from neurokit.training.trainer import Trainer

logger = logging.getLogger("neurokit")
KIND = M4OE_KIND


def finetune_m4oe(
    stores: Sequence[str | Path],
    out_dir: str | Path,
    tasks: Sequence[str],
    cfg: FinetuneConfig | None = None,
    *,
    init: str | Path | None = None,
    preset: str = "small",
    alpha: float = 0.1,
    focal_gamma: float | None = 2.0,
    modalities: Sequence[str] | dict | None = None,
    head_kwargs: dict | None = None,
    baselines: bool = True,
    overwrite: bool = False,
    resume: bool = False,
) -> dict[str, Any]:
    """Fine-tune one backbone with an M4oE head on several tasks at once; select on the mean of the
    tasks' validation selection metrics; score each task's test split once.

    Parameters
    ----------
    stores : labelled patch stores, one per task (matched by the card and task they were prepared for)
    tasks : ``"CARD:TASK"`` strings
    cfg : FinetuneConfig
        Training settings. ``augment`` applies to every task's EEG batches (mixup excepted: the multi-task
        loss does not mix labels); ``allow_partial_init`` as for single-task fine-tuning. ``splits`` is
        refused: each task is split by its own card.
    preset : ``"small"`` (CPU) or ``"paper"`` expert counts; ``head_kwargs`` override single sizes
    alpha : weight of the ``− α · I(M;E|T)`` term
    focal_gamma : focal loss γ (release: 2, with α = 1 − each task's training class frequencies);
        ``None``: plain cross-entropy / BCE (a neurokit option)
    modalities : ``["eeg=Fp1,…", "ecg=ECG"]`` or a dict; default each card's ``modalities``
    resume : continue from ``out_dir/last.pt`` (same tasks and stores), training up to ``cfg.epochs``

    Returns the report (also ``out_dir/report.json``): per task ``test``, ``baselines``, ``chance``,
    ``modality_contributions``, ``ablation_contributions``; ``best.pt`` holds the selected model, ``last.pt`` the state to resume.

    Raises
    ------
    ConfigError
        Bad tasks or modalities, options that do not apply to the M4oE head
        (:func:`~neurokit.pipelines.finetune_config.check_finetune_options`), a backbone that is not an EEG model.
    FileExistsError, FileNotFoundError
        ``out_dir`` holds a run (without ``overwrite``/``resume``); ``resume`` without ``last.pt``.
    """
    cfg = cfg or FinetuneConfig()
    out = Path(out_dir)
    check_finetune_options(cfg, head="m4oe", resume=resume, overwrite=overwrite, init=init)
    specs = parse_tasks(tasks)
    mods_req = parse_modalities(modalities) if not isinstance(modalities, dict) else modalities
    by_task = match_stores(specs, stores)
    layouts = {n: task_layout(n, st, mods_req) for n, st in by_task.items()}

    def job(work: Path) -> dict[str, Any]:
        info = dist.setup(cfg.device)
        try:
            return _run(
                by_task,
                layouts,
                work,
                cfg,
                init,
                info,
                preset,
                alpha,
                focal_gamma,
                head_kwargs or {},
                baselines,
                resume,
            )
        finally:
            dist.cleanup(info)

    record = finetune_record(
        cfg,
        head="m4oe",
        stores=stores,
        out_dir=out,
        tasks=list(tasks),
        init=init,
        preset=preset,
        alpha=alpha,
        focal_gamma=focal_gamma,
        head_kwargs=head_kwargs or {},
        modalities=modalities,
        layouts=layouts,
        baselines=baselines,
        overwrite=overwrite,
        resume=resume,
        head_settings={"preset", "alpha", "focal_gamma", "head_kwargs", "layouts", "tasks"},
    )
    # locked while it runs; an overwritten run stays whole until the new one has finished
    return run_in_folder(out, job, what="M4oE run", overwrite=overwrite, resume=resume, record=record)


def _run(by_task, layouts, out, cfg, init, info, preset, alpha, focal_gamma, head_kwargs, baselines, resume):
    """Train and score the M4oE head over the tasks' stores into ``out``; returns the run's report."""
    seed_everything(cfg.seed)
    dev = info.device
    ck = None
    head_settings = {
        "preset": preset,
        "alpha": alpha,
        "focal_gamma": focal_gamma,
        "head_kwargs": dict(head_kwargs),
        "layouts": layouts,
    }
    if resume:
        ck = load_checkpoint(out / "last.pt")
        if ck.get("kind") == KIND + "_last" and ck.get("tasks") != list(by_task):
            raise ConfigError(f"{out / 'last.pt'}: was written for tasks {ck.get('tasks')}, not {list(by_task)}")
        check_resume(ck, cfg, init, out / "last.pt", kind=KIND + "_last", head=head_settings)
    tdata = _task_data(by_task)
    model, head, backbone, hcfg, groups, model_name, init_info = _build_m4oe_model(
        tdata, layouts, cfg, init, dev, preset, alpha, focal_gamma, head_kwargs
    )
    bs = {n: min(cfg.batch_size, len(d["parts"]["train"])) for n, d in tdata.items()}
    rates = (cfg.lr_backbone, cfg.lr_head)
    ocfg = two_rate_optim(rates, weight_decay=cfg.weight_decay, min_lr=cfg.min_lr, clip_grad=cfg.clip_grad)
    augment = {}
    for n, d in tdata.items():
        aug = make_augmenter(cfg.augment, d["parts"]["train"], seed=cfg.seed, mixup=False)
        if aug is not None:
            augment[n] = aug

    def loss(module, b):
        total, parts = head.loss(module(b.x, b.task), {b.task: b.y}, cfg.label_smoothing)
        return total, {"loss": parts[f"loss_{b.task}"]}

    def train_mode(module):
        module.train()
        if cfg.frozen:
            backbone.eval()

    trainer = Trainer(
        model,
        {n: d["parts"]["train"] for n, d in tdata.items()},
        loss,
        model_name=model_name,
        optim=ocfg,
        batch_size=bs,
        epochs=cfg.epochs,
        param_groups=groups,
        seed=cfg.seed,
        info=info,
        num_workers=cfg.num_workers,
        out=out,
        validate=_m4oe_validator(tdata, cfg, dev),
        select="val_selection_mean",
        augment=augment or None,
        train_mode=train_mode,
        stage="finetune",
        detail="M4oE",
        progress=cfg.progress,
        find_unused_parameters=True,
        checkpoint_extra=lambda: {
            "kind": KIND + "_last",
            "tasks": list(tdata),
            "finetune_config": {**asdict(cfg), "head": "m4oe"},
            "init_sha256": init_fingerprint(init),
            "head_settings": head_settings,
        },
    )
    if ck is not None:
        if ck.get("epoch", 0) >= cfg.epochs:
            raise ConfigError(
                f"{out / 'last.pt'} has done {ck['epoch']} epoch(s); ask for more (epochs={ck['epoch'] + 1} or more) "
                "to resume"
            )
        trainer.resume(ck)
    t0 = time.perf_counter()
    res = trainer.fit()
    trainer.load_best()
    report_tasks = _score_tasks(model, head, tdata, layouts, cfg, dev, baselines)
    report = {
        "head": "m4oe",
        "model": model_name,
        "model_title": get_model_spec(model_name).title or model_name,
        "head_config": hcfg.to_dict(),
        "tasks": report_tasks,
        "selection_metric": "mean of the tasks' " + "/".join(sorted({SELECTION[d["kind"]] for d in tdata.values()})),
        "best_epoch": res.best_epoch,
        "val_best": res.best,
        "history": res.records,
        "init": init_info.get("init"),
        "seconds": time.perf_counter() - t0,
        "note": "modality_contributions are shares of MToE routing mass, not causal importance; "
        "ablation_contributions measure what masking each modality does to the task",
    }
    if info.is_main:
        _save_m4oe(out, model, hcfg, layouts, tdata, cfg, model_name, init_info, report)
    return report


def _task_data(by_task) -> dict[str, dict]:
    """Each task's store, kind, label names, class count and non-empty splits (from its card)."""
    tdata: dict[str, dict] = {}
    for name, st in by_task.items():
        ds_all = PatchDataset([st], labelled=True)
        names = list(st.info.label_names)
        n_classes = class_count(st.labels, names)
        kind = task_kind(st.labels, n_classes)
        how, kw = resolve_splits(ds_all)
        parts = {k: PatchDataset([st], labelled=True, **v) for k, v in kw.items()}
        for k, d in parts.items():
            if len(d) == 0:
                raise ConfigError(f"task {name}: split {k!r} of store {st.path} is empty ({kw[k]})")
        tdata[name] = dict(store=st, kind=kind, label_names=names, n_classes=n_classes, how=how, kw=kw, parts=parts)
    return tdata


def _build_m4oe_model(tdata, layouts, cfg, init, dev, preset, alpha, focal_gamma, head_kwargs):
    """Backbone from ``init`` and an M4oE head over every task and modality, on ``dev``.

    Returns ``(model, head, backbone, head_config, param_groups, model_name, init_info)``.
    """
    first = next(iter(tdata.values()))
    tr = first["parts"]["train"]
    backbone, init_info, model_name = finetune_backbone(cfg, init, tr)
    spec = get_model_spec(model_name)
    if spec.modality != "eeg":
        raise ConfigError(
            f"head='m4oe' routes the channel groups of EEG stores; {spec.title or model_name} is a "
            f"{spec.modality} model: use head='avgpool'"
        )
    backbone.to(dev)
    with torch.no_grad():
        backbone.eval()
        in_dim = int(backbone.forward_features(first["parts"]["train"][0][0][None].to(dev)).shape[-1])
    all_mods = list(dict.fromkeys(m for lay in layouts.values() for m in lay))
    task_specs = [
        dict(
            name=n,
            kind=d["kind"],
            n_outputs=1 if d["kind"] != "multiclass" else d["n_classes"],
            class_frequencies=None
            if d["kind"] == "regression"
            else class_frequencies(_train_labels(d), 2 if d["kind"] == "binary" else d["n_classes"]),
        )
        for n, d in tdata.items()
    ]
    hcfg = M4oEConfig(
        in_dim=in_dim,
        modalities=all_mods,
        tasks=task_specs,
        preset=preset,
        alpha=alpha,
        focal_gamma=focal_gamma,
        dropout=cfg.dropout,
        **head_kwargs,
    )
    head = M4oE(hcfg)
    model = M4oEFinetuneModel(backbone, head, layouts).to(dev)
    if cfg.frozen:
        for p in backbone.parameters():
            p.requires_grad_(False)
    groups = lr_groups(backbone, head, cfg.lr_backbone, cfg.lr_head)
    return model, head, backbone, hcfg, groups, model_name, init_info


def _m4oe_validator(tdata, cfg, dev):
    """The validation callable: every task's validation metrics and the mean of their selection metrics."""

    def validate(module):
        rec, sel = {}, []
        for n, d in tdata.items():
            yv, ov, _ = predict_task(module, n, d["parts"]["val"], cfg.batch_size, dev)
            val = score(d["kind"], yv, ov)
            rec[n] = {f"val_{k}": v for k, v in val.items()}
            v = val[SELECTION[d["kind"]]]
            sel.append(v if np.isfinite(v) else 0.0)
        rec["val_selection_mean"] = float(np.mean(sel))
        logger.info(
            "epoch: %s",
            {
                n: round(r.get("val_" + SELECTION[tdata[n]["kind"]], float("nan")), 3)
                for n, r in rec.items()
                if n in tdata
            },
        )
        return rec

    return validate


def _score_tasks(model, head, tdata, layouts, cfg, dev, baselines) -> dict[str, dict]:
    """Each task's report entry: test metrics, modality contributions, chance and baselines."""
    report_tasks = {}
    for n, d in tdata.items():
        yt, ot, sh, ab = predict_task(model, n, d["parts"]["test"], cfg.batch_size, dev, ablate=True)
        entry = {
            "card": d["store"].info.card,
            "task": d["store"].info.task,
            "store": str(d["store"].path),
            "kind": d["kind"],
            "label_names": d["label_names"],
            "split_by": d["how"],
            "splits": {k: {kk: list(vv) for kk, vv in kw.items()} for k, kw in d["kw"].items()},
            "n_samples": {k: len(p) for k, p in d["parts"].items()},
            "modalities": {m: [d["store"].info.ch_names[i] for i in idx] for m, idx in layouts[n].items()},
            "test": score(d["kind"], yt, ot),
            # one predicted class (or equal scores): the threshold metrics are not results (issue 17 item 4)
            "degenerate": degenerate_predictions(d["kind"], yt, ot, d["label_names"]),
            "modality_contributions": contributions(sh, head.modalities, d["parts"]["test"], layouts[n]),
            "ablation_contributions": ablation_contributions(
                ab, head.modalities, d["parts"]["test"], layouts[n], d["kind"], yt, ot
            ),
        }
        entry.update(_baselines_beside(d, baselines, cfg.seed))
        report_tasks[n] = entry
    return report_tasks


def _save_m4oe(out, model, hcfg, layouts, tdata, cfg, model_name, init_info, report) -> None:
    """Write the M4oE run's ``best.pt`` and ``report.json``."""
    save_checkpoint(
        out / "best.pt",
        {
            "kind": KIND,
            "model": model_name,
            "model_config": init_info["model_config"],
            "head_config": hcfg.to_dict(),
            "layouts": layouts,
            "state_dict": model.state_dict(),
            "tasks": {
                n: {
                    "card": d["store"].info.card,
                    "task": d["store"].info.task,
                    "kind": d["kind"],
                    "label_names": d["label_names"],
                    "ch_names": _as_list(d["store"].info.ch_names),
                }
                for n, d in tdata.items()
            },
            "finetune_config": {**asdict(cfg), "model": model_name, "head": "m4oe"},
            "report": {k: v for k, v in report.items() if k != "history"},
        },
    )
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float))


def _baselines_beside(d: dict, enabled: bool, seed: int) -> dict:
    from neurokit.evaluation.baselines import chance_metrics, run_baselines

    res: dict[str, Any] = {"chance": chance_metrics(d["kind"], d["n_classes"])}
    if enabled:
        res["baselines"] = run_baselines(d["parts"], d["kind"], sfreq=float(d["store"].info.sfreq or 200.0), seed=seed)
    return res


def _train_labels(d: dict) -> np.ndarray:
    """The labels of a task's training split (``d`` from :func:`_task_data`)."""
    return np.asarray(d["parts"]["train"].labels)


def _as_list(v: tuple | None) -> list | None:
    """A typed list field of store metadata as a checkpoint records it: a list, or ``None``."""
    return None if v is None else list(v)
