"""Multi-task, multi-modal fine-tuning with an M4oE head (``neuro finetune --head m4oe --task CARD:TASK``).

One backbone (CBraMod: any channel count) encodes every store; each task's modalities are named channel
groups of its store (the card's ``modalities``, or ``--modality NAME=CH,CH``), whose tokens go to one
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
from neurokit.data.dataset import PatchDataset
from neurokit.data.splits import class_count, resolve_splits, task_kind
from neurokit.evaluation.metrics import SELECTION, degenerate_predictions, score
from neurokit.store.patch_store import PatchStore
from neurokit.models.checkpoint import load_checkpoint, save_checkpoint
from neurokit.models.heads import M4OE_KIND, M4oEFinetuneModel
from neurokit.models.m4oe import M4oE, M4oEConfig
from neurokit.models.registry import get_model_spec
from neurokit.pipelines.finetune import (
    FinetuneConfig,
    check_finetune_options,
    check_resume,
    finetune_backbone,
    finetune_record,
    init_fingerprint,
    make_augmenter,
)
from neurokit.pipelines.outputs import run_in_folder
from neurokit.training import distributed as dist
from neurokit.training.optim import (
    EpochSampler,
    OptimConfig,
    make_loader,
    seed_everything,
)
from neurokit.training.trainer import Trainer

logger = logging.getLogger("neurokit")
KIND = M4OE_KIND


def parse_tasks(specs: Sequence[str]) -> list[tuple[str, str]]:
    """``["bonn_epilepsy:seizure", ...]`` → ``[("bonn_epilepsy", "seizure"), ...]``; refuses a task named twice."""
    out: list[tuple[str, str]] = []
    for s in specs:
        if s.count(":") != 1 or not all(s.split(":")):
            raise ConfigError(f"--task {s!r}: give CARD:TASK (e.g. bonn_epilepsy:seizure)")
        ct = tuple(s.split(":"))
        if ct in out:
            raise ConfigError(f"--task {s!r} is named twice; give each task once")
        out.append(ct)  # type: ignore[arg-type]
    if not out:
        raise ConfigError("--head m4oe needs at least one --task CARD:TASK")
    return out


def parse_modalities(specs: Sequence[str] | None) -> dict[str, list[str] | None] | None:
    """``["eeg=Fp1,Fp2", "ecg=ECG", "eeg"]`` → ``{"eeg": [...], "ecg": ["ECG"]}``; a bare name keeps the
    card's channels for it (``None``)."""
    if not specs:
        return None
    out: dict[str, list[str] | None] = {}
    for s in specs:
        name, _, chans = s.partition("=")
        name = name.strip()
        if not name or name in out:
            raise ConfigError(f"--modality {s!r}: {'empty name' if not name else 'modality named twice'}")
        out[name] = [c.strip() for c in chans.split(",") if c.strip()] if chans else None
    return out


def task_layout(name: str, store: PatchStore, requested: dict[str, list[str] | None] | None) -> dict[str, list[int]]:
    """Modality → channel indices of ``store`` for task ``name``.

    Raises
    ------
    ConfigError
        A requested modality the store's card does not define or whose channels the store lacks, or two
        modalities sharing a channel (message names the task, the store and ``--modality``).
    """
    ch = list(store.info.ch_names or [])
    card_mods = store.info.card_body.get("modalities") or {"eeg": None}
    if requested:
        wanted = {}
        for m, chans in requested.items():
            if chans is None:
                if m not in card_mods:
                    raise ConfigError(
                        f"task {name}: store {store.path} (card {store.info.card}) has no modality "
                        f"{m!r} (its card defines {sorted(card_mods)}); give --modality {m}=CH,CH"
                    )
                chans = card_mods[m]
            wanted[m] = chans
    else:
        wanted = dict(card_mods)
    out: dict[str, list[int]] = {}
    for m, chans in wanted.items():
        chans = ch if chans is None else list(chans)
        missing = [c for c in chans if c not in ch]
        if missing:
            raise ConfigError(
                f"task {name}: store {store.path} lacks the channels {missing} of modality {m!r} "
                f"(--modality); its channels: {ch[:8]}{'…' if len(ch) > 8 else ''}"
            )
        out[m] = [ch.index(c) for c in chans]
    seen: dict[int, str] = {}
    for m, idx in out.items():
        for i in idx:
            if i in seen:
                raise ConfigError(
                    f"task {name}: modalities {seen[i]!r} and {m!r} overlap on channel {ch[i]!r} "
                    f"in store {store.path} (--modality); a channel belongs to one modality"
                )
            seen[i] = m
    return out


def match_stores(tasks: list[tuple[str, str]], stores: Sequence[str | Path]) -> dict[str, PatchStore]:
    """Task ``card:task`` → the given store prepared for it.

    Raises
    ------
    ConfigError
        No store of the card, or stores of the card that hold other tasks' labels (or no label).
    """
    opened = [PatchStore(s) for s in stores]
    out = {}
    for card, task in tasks:
        name = f"{card}:{task}"
        same_card = [s for s in opened if s.info.card == card]
        hit = [s for s in same_card if s.info.task == task]
        if not hit:
            if same_card:
                held = ", ".join(f"{s.path} (task {s.info.task!r})" for s in same_card)
                raise ConfigError(
                    f"--task {name}: no store holds labels of task {task!r}: {held}; prepare one with "
                    f"`neuro prepare {card} --task {task}`"
                )
            raise ConfigError(
                f"--task {name}: none of the stores {[str(s.path) for s in opened]} was prepared from card {card!r}"
            )
        st = hit[0]
        lab = st.labels
        if not (lab >= 0).any() if lab.dtype.kind in "iu" else not np.isfinite(lab).any():
            raise ConfigError(f"--task {name}: store {st.path} has none of the task's labels (all unlabelled)")
        out[name] = st
    return out


def predict_task(model: M4oEFinetuneModel, task: str, ds: PatchDataset, bs: int, device, ablate: bool = False):
    """``(labels, outputs, modality shares)`` of ``task`` over ``ds`` in sample order (eval mode, no gradient).

    With ``ablate``, a fourth item: ``{"loss_increase": (n, K) array, "outputs": {modality: outputs
    without it}}`` from :meth:`~neurokit.models.m4oe.M4oE.ablation` (NaN where a modality is absent or
    alone in the sample; the full outputs stand where it could not be dropped).
    """
    model.eval()
    sampler = EpochSampler(len(ds), batch_size=bs, seed=0, shuffle=False, drop_last=False)
    ys, outs, shares, dl = [], [], [], []
    dout: dict[str, list[torch.Tensor]] = {}  # modality → outputs without it, per batch
    p = model.head.task_names.index(task)
    with torch.no_grad():
        for x, y in make_loader(ds, sampler, bs, 0, device):
            res = model(x.to(device), task)
            o = res[task]
            outs.append(o.float().cpu())
            shares.append(model.head.contributions()[:, p].cpu())
            ys.append(y)
            if ablate:
                d, dropped = model.head.ablation({task: y.to(device)}, outputs=res, return_outputs=True)
                dl.append(d[task].float().cpu())
                for m in model.head.modalities:
                    dout.setdefault(m, []).append((dropped[m][task] if m in dropped else o).float().cpu())
    base = (torch.cat(ys).numpy(), torch.cat(outs).numpy(), torch.cat(shares).numpy())
    if not ablate:
        return base
    return (
        *base,
        {"loss_increase": torch.cat(dl).numpy(), "outputs": {m: torch.cat(v).numpy() for m, v in dout.items()}},
    )


def contributions(shares: np.ndarray, modalities: list[str], ds: PatchDataset, present: dict[str, list[int]]) -> dict:
    """The report's ``modality_contributions`` of one task: routing shares ``(n, K)`` → dataset mean and
    per-sample values (with subject and run) of the task's modalities."""
    mods = [m for m in modalities if m in present]
    k = [modalities.index(m) for m in mods]
    subj, run = ds.meta("subject"), ds.meta("run")
    return {
        "modalities": mods,
        "mean": {m: float(shares[:, i].mean()) for m, i in zip(mods, k)},
        "per_sample": [
            {"subject": str(s), "run": str(r), **{m: round(float(v[i]), 5) for m, i in zip(mods, k)}}
            for s, r, v in zip(subj, run, shares)
        ],
    }


def ablation_contributions(
    ablation: dict,
    modalities: list[str],
    ds: PatchDataset,
    present: dict[str, list[int]],
    kind: str,
    labels: np.ndarray,
    outputs: np.ndarray,
) -> dict:
    """The report's ``ablation_contributions`` of one task (neurokit's; the paper reports routing only).

    Parameters
    ----------
    ablation : the fourth item of :func:`predict_task` with ``ablate=True``
    modalities : the head's modalities; ``present`` the task's layout (modality → channels)
    kind, labels, outputs : the task's kind, labels and full outputs, for the metrics

    Returns
    -------
    dict with ``modalities``; ``mean_loss_increase`` (modality → mean over samples of the increase of the
    task loss when its tokens are masked, nats for the focal / cross-entropy losses); ``share`` (those
    means kept where positive and normalised to sum 1; all 0 if none is positive); ``score_change``
    (modality → metric → full score − score without the modality, over the split); ``per_sample``
    (subject, run and the loss increase per modality). A task with one modality has nothing to
    ablate: ``modalities`` and a ``note`` only.

    Examples
    --------
    For a task that lives in its EEG, ``share`` is near ``{"eeg": 1, "ecg": 0}`` and ``score_change["eeg"]``
    holds the accuracy lost without the EEG.
    """
    mods = [m for m in modalities if m in present]
    if len(mods) < 2:
        return {"modalities": mods, "note": "one modality: nothing to ablate"}
    k = [modalities.index(m) for m in mods]
    d = ablation["loss_increase"]
    mean = {m: float(np.nanmean(d[:, i])) if np.isfinite(d[:, i]).any() else float("nan") for m, i in zip(mods, k)}
    pos = {m: max(v, 0.0) if np.isfinite(v) else 0.0 for m, v in mean.items()}
    tot = sum(pos.values())
    full = score(kind, labels, outputs)
    change = {}
    for m in mods:
        without = score(kind, labels, ablation["outputs"][m])
        change[m] = {key: float(full[key] - without[key]) for key in full if key in without}
    subj, run = ds.meta("subject"), ds.meta("run")
    return {
        "modalities": mods,
        "measure": "task loss increase and metric drop when the modality's tokens are masked",
        "mean_loss_increase": mean,
        "share": {m: (v / tot if tot > 0 else 0.0) for m, v in pos.items()},
        "score_change": change,
        "per_sample": [
            {
                "subject": str(s),
                "run": str(r),
                **{m: (round(float(v[i]), 5) if np.isfinite(v[i]) else None) for m, i in zip(mods, k)},
            }
            for s, r, v in zip(subj, run, d)
        ],
    }


def class_frequencies(labels: np.ndarray, n_classes: int) -> list[float]:
    """Class frequencies of a training split's labels (unlabelled ``< 0`` left out), for the focal loss's
    α = 1 − frequency (M4oE release ``main.py``). ``[0.25, 0.75]`` for labels ``[1, 1, 1, 0]``."""
    y = np.asarray(labels)
    y = y[y >= 0].astype(int)
    counts = np.bincount(y, minlength=n_classes)[:n_classes].astype(float)
    return (counts / max(counts.sum(), 1.0)).tolist()


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
        (:func:`~neurokit.pipelines.finetune.check_finetune_options`), a backbone that is not an EEG model.
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
    ocfg = OptimConfig(
        lr=max(cfg.lr_backbone, cfg.lr_head),
        weight_decay=cfg.weight_decay,
        min_lr=min(cfg.min_lr, cfg.lr_backbone, cfg.lr_head),
        clip_grad=cfg.clip_grad,
    )
    augment = {}
    for n, d in tdata.items():
        aug = make_augmenter(cfg, d["parts"]["train"], mixup=False)
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
                f"{out / 'last.pt'} has done {ck['epoch']} epoch(s); ask for more (--epochs > {ck['epoch']}) to resume"
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
            f"--head m4oe routes the channel groups of EEG stores; {spec.title or model_name} is a "
            f"{spec.modality} model: use --head avgpool"
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
    groups = [{"params": list(head.parameters()), "lr": cfg.lr_head}]
    bb = [p for p in backbone.parameters() if p.requires_grad]
    if bb:
        groups.insert(0, {"params": bb, "lr": cfg.lr_backbone})
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
