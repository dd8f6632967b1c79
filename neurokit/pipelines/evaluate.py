"""``neuro evaluate``: score a fine-tuned checkpoint (single-task or M4oE) on a labelled store, on the split the
model was fine-tuned with, refusing samples it has seen unless asked."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

from neurokit._utils.errors import ChannelMismatchError, ConfigError
from neurokit.data.dataset import PatchDataset
from neurokit.data.provenance import check_split_recordings, pretraining_overlap, warn_overlap
from neurokit.data.splits import class_count, resolve_splits, task_kind
from neurokit.evaluation.contributions import ablation_contributions, contributions
from neurokit.evaluation.metrics import degenerate_predictions, score
from neurokit.store.patch_store import PatchStore
from neurokit.models.checkpoint import check_allow_mismatch, check_channels, check_data_facts, data_facts
from neurokit.models.heads import load_finetuned, load_m4oe
from neurokit.models.registry import get_model_spec
from neurokit.training import distributed as dist
from neurokit.training.predict import predict, predict_task

logger = logging.getLogger("neurokit")


def evaluate(
    checkpoint: str | Path,
    store: str | Path | Sequence[str | Path],
    *,
    split: str | None = "test",
    subjects: Sequence[str] | None = None,
    batch_size: int = 64,
    device: str = "auto",
    allow_seen: bool = False,
    allow_mismatch: Sequence[str] | str | None = None,
    allow_duplicate_recordings: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """Score a fine-tuned checkpoint on a labelled store (``progress``: a progress bar over its batches).

    ``split``: ``"train"``, ``"val"`` or ``"test"`` — the subjects (or runs) of that split *as the
    checkpoint was fine-tuned* (its ``splits``, else the card's) — or ``"all"`` (or ``None``) for
    every labelled sample; ``subjects`` overrides it. Scoring samples of subjects (runs) that were in the
    model's training or validation split gives an optimistic number: it is refused unless ``split`` names
    a split of the checkpoint by name, or ``allow_seen=True``.

    ``allow_mismatch``: facts of the data (``sfreq``, ``patch``, ``units``;
    :data:`~neurokit.models.checkpoint.DATA_FACTS`) in which the store may differ from the data the checkpoint
    was fine-tuned on; any other difference is refused.

    The scored recordings are compared by content (SHA-256) with those of the checkpoint's training and
    validation splits in the store (:func:`~neurokit.data.provenance.check_split_recordings`): a copy of a
    training recording under another subject is refused unless ``allow_duplicate_recordings``.

    Returns
    -------
    dict of metrics, plus ``n_samples``, ``split``, ``subjects`` (or ``runs``) scored, ``seen`` (the
    scored ones the model was trained or selected on), ``split_recordings`` (the content check), ``degenerate``
    (why the predictions are not a result, as :func:`~neurokit.evaluation.metrics.degenerate_predictions` says,
    or ``None``), ``data_mismatch_allowed`` when ``allow_mismatch`` accepted a difference, and for a foundation
    model ``input_adaptation`` (how the store is fed to it: channels, rate, window, units; the fine-tuning run's).

    Raises
    ------
    ChannelMismatchError
        The store's channels (names or order) differ from the checkpoint's.
    ConfigError
        Samples the model has seen selected without ``allow_seen``; no sample selected.
    """
    from neurokit.models.heads import is_m4oe_checkpoint
    from neurokit.pipelines.evaluate import evaluate_m4oe

    split = None if split == "all" else split

    if is_m4oe_checkpoint(checkpoint):
        if subjects is not None:
            raise ConfigError(
                "subjects= is not available for M4oE checkpoints (each task has its own store); use split="
            )
        return evaluate_m4oe(
            checkpoint,
            [store] if isinstance(store, (str, Path)) else list(store),
            split=split,
            batch_size=batch_size,
            device=device,
        )
    allow = check_allow_mismatch(allow_mismatch)
    dev = dist.setup(device).device
    model, ck = load_finetuned(checkpoint, dev)
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    ds_all = PatchDataset(stores, labelled=True)
    first = str(stores[0])
    family = get_model_spec(ck["model"])
    have = ds_all.info.modality or "eeg"
    if family.modality != have:
        raise ConfigError(
            f"{first}: holds {have} samples {tuple(ds_all.sample_shape)}; {checkpoint} is a "
            f"{family.title or ck['model']} model fine-tuned on {family.modality} stores"
        )
    trained_facts = data_facts({**(ck.get("store_attrs") or {}), "recipe": ck.get("recipe")}, ck.get("sample_shape"))
    accepted = check_data_facts(
        trained_facts, data_facts(ds_all.attrs, ds_all.sample_shape), checkpoint=checkpoint, store=first, allow=allow
    )
    if len(ds_all) == 0:
        raise ConfigError(f"{first}: no labelled sample (the store was prepared without a labelled task)")
    label_names = list(ds_all.info.label_names)
    kind = task_kind(ds_all.stores[0].labels, class_count(ds_all.stores[0].labels, label_names))
    if kind != ck["task_kind"]:
        raise ConfigError(
            f"{first}: holds a {kind} task, the checkpoint {checkpoint} was fine-tuned for {ck['task_kind']}"
        )
    if ck.get("label_names") and label_names and list(ck["label_names"]) != label_names:
        raise ConfigError(f"{first}: classes {label_names} differ from the checkpoint's {ck['label_names']}")
    check_channels(ck.get("ch_names"), ds_all.info.ch_names, store=first, checkpoint=checkpoint)
    if (
        tuple(ds_all.sample_shape) != tuple(ck.get("sample_shape", ds_all.sample_shape))
        and ck["head"]["kind"] == "all_patch_reps"
    ):
        raise ChannelMismatchError(
            f"{first}: sample shape {ds_all.sample_shape} differs from the checkpoint's {ck['sample_shape']}"
        )
    rep = ck.get("report") or {}
    trained = rep.get("splits")  # {"train": {"subjects": [...]}, ...} as fine-tuned
    if not trained:
        _, trained = resolve_splits(ds_all)
    if subjects is not None:
        ds = PatchDataset(ds_all.stores, labelled=True, subjects=subjects)
    elif split is not None:
        if split not in trained:
            raise ConfigError(
                f"split {split!r}: the checkpoint's splits are {sorted(trained)} (or every sample: split='all')"
            )
        ds = PatchDataset(ds_all.stores, labelled=True, **trained[split])
    else:
        ds = ds_all
    if len(ds) == 0:
        if subjects is not None:
            asked = f"subjects {', '.join(subjects)}"
        else:
            assert split is not None  # no subjects nor split: every sample, and ds_all is not empty (checked above)
            asked = f"the {split} split ({_kw_ids(trained[split])})"
        raise ConfigError(
            f"{first}: no labelled sample of {asked}; subjects in the store: {', '.join(ds_all.store_subjects)}"
        )
    key = "run" if "runs" in trained.get("train", {}) else "subject"
    scored = sorted({str(v) for v in ds.meta(key)})
    seen_ids = {str(v) for k in ("train", "val") for v in next(iter(trained.get(k, {"x": []}).values()))}
    seen = [v for v in scored if v in seen_ids]
    if seen and not allow_seen and (subjects is not None or split is None):
        raise ConfigError(
            f"{checkpoint}: was trained or selected on {key}s {', '.join(seen)}, which the chosen samples include; "
            f"their score would be optimistic. Score its test split (the default), or pass allow_seen=True to "
            "score them anyway"
        )
    overlap = pretraining_overlap(rep.get("pretraining_sources"), ds)  # by SHA-256; None: nothing recorded
    warn_overlap(overlap, str(checkpoint))
    # by content: a copy of a training recording under another name (the seen ones themselves are not copies)
    split_recordings = check_split_recordings(
        {
            **{k: PatchDataset(ds_all.stores, labelled=True, **trained[k]) for k in ("train", "val") if k in trained},
            "scored": ds,
        },
        allow=allow_duplicate_recordings,
        where=str(checkpoint),
        test="scored",
    )
    y, o = predict(model, ds, batch_size, dev, progress=progress)
    from neurokit.evaluation.metrics import mark_undefined

    met, undefined = mark_undefined(
        ck["task_kind"], y, score(ck["task_kind"], y, o), ck.get("label_names"), split or "chosen"
    )
    res = {
        "checkpoint": str(checkpoint),
        "split": split if subjects is None else None,
        "n_samples": len(ds),
        f"{key}s": scored,
        "seen": seen,
        "pretraining_overlap": overlap,
        "split_recordings": split_recordings,
        **met,
        "undefined": undefined,
        # as fine-tuning reports it: predictions that carry no information are not a result (None: they inform)
        "degenerate": degenerate_predictions(ck["task_kind"], y, o, ck.get("label_names")),
    }
    if accepted:
        res["data_mismatch_allowed"] = accepted
    if rep.get("input_adaptation"):  # a foundation model: the store fed to it as in fine-tuning (the model holds it)
        res["input_adaptation"] = rep["input_adaptation"]
    return res


def _kw_ids(kw: dict) -> str:
    return ", ".join(str(v) for vals in kw.values() for v in vals)


def evaluate_m4oe(
    checkpoint: str | Path,
    stores: Sequence[str | Path],
    *,
    split: str | None = "test",
    batch_size: int = 64,
    device: str = "auto",
) -> dict[str, Any]:
    """Score an M4oE checkpoint: every task whose store is given (matched by card and task), on its split.
    Returns ``{"checkpoint", "split", "tasks": {name: {metrics…, "n_samples", "modality_contributions",
    "ablation_contributions"}}}``."""
    from neurokit.models.checkpoint import check_channels

    dev = dist.setup(device).device
    model, ck = load_m4oe(checkpoint, dev)
    specs = [tuple(n.split(":")) for n in ck["tasks"]]
    opened = [PatchStore(s) for s in stores]
    res = {}
    for (card, task), name in zip(specs, ck["tasks"]):
        st = next((s for s in opened if s.info.card == card and s.info.task == task), None)
        if st is None:
            continue
        check_channels(ck["tasks"][name]["ch_names"], st.info.ch_names, store=st.path, checkpoint=checkpoint)
        ds_all = PatchDataset([st], labelled=True)
        if split is None:
            ds = ds_all
        else:
            _, kw = resolve_splits(ds_all)
            if split not in kw:
                raise ConfigError(f"split={split!r}; the store's splits are {sorted(kw)} (or None for all samples)")
            ds = PatchDataset([st], labelled=True, **kw[split])
        y, o, sh, ab = predict_task(model, name, ds, batch_size, dev, ablate=True)
        kind = ck["tasks"][name]["kind"]
        res[name] = {
            "n_samples": len(ds),
            **score(kind, y, o),
            "degenerate": degenerate_predictions(kind, y, o, ck["tasks"][name].get("label_names")),
            "modality_contributions": contributions(sh, model.head.modalities, ds, model.layouts[name]),
            "ablation_contributions": ablation_contributions(
                ab, model.head.modalities, ds, model.layouts[name], kind, y, o
            ),
        }
    if not res:
        raise ConfigError(
            f"none of the stores {[str(s.path) for s in opened]} holds a task of {checkpoint} ({list(ck['tasks'])})"
        )
    return {"checkpoint": str(checkpoint), "split": split, "tasks": res}
