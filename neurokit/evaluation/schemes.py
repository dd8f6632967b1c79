"""Evaluation schemes of the BCI literature around one fine-tuning run per fold.

Schemes (``neuro finetune --scheme``):

``card``            the data card's train/val/test subjects (one fold; CBraMod's protocol)
``loso``            leave one subject out: each subject is the test set once (MOABB's CrossSubject with
                    ``LeaveOneGroupOut``)
``kfold-subject``   k folds of whole subjects (sklearn ``GroupKFold``)
``cross-session``   per subject, leave one session out (MOABB's CrossSession)
``within-session``  per subject and session, stratified k-fold over its trials (MOABB's WithinSession)

Model selection needs a validation set that the test fold never sees: in the cross-subject schemes it is
a fifth of the remaining subjects (those following the test subjects in sorted order, at least one); in
the within-subject schemes a stratified fifth of the training trials. Every fold goes through
:func:`check_no_leak`. Results: one row per fold with MOABB's result-table columns (``dataset``,
``subject``, ``session``, ``score``, ``time``, ``samples``, ``channels``, ``n_sessions``, ``pipeline``,
``evaluation``), mean ± std over folds of every metric, ``results.csv``.

Reference: Jayaram & Barachant, MOABB, J Neural Eng 15:066011, 2018; Chevallier et al., arXiv 2404.15319.
"""
from __future__ import annotations

import csv
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from neurokit._utils.errors import ConfigError
from neurokit.data.dataset import PatchDataset
from neurokit.data.splits import check_no_leak, sample_columns

logger = logging.getLogger("neurokit")

SCHEMES = ("card", "loso", "kfold-subject", "cross-session", "within-session")
#: MOABB's evaluation names
MOABB_EVALUATION = {"card": "CardSplit", "loso": "CrossSubject", "kfold-subject": "CrossSubject",
                    "cross-session": "CrossSession", "within-session": "WithinSession"}
#: the unit no fold may share between its test set and its training/validation sets
LEAK_UNIT = {"card": "subject", "loso": "subject", "kfold-subject": "subject", "cross-session": "session",
             "within-session": "window"}
RESULT_COLUMNS = ("dataset", "subject", "session", "score", "time", "samples", "channels", "n_sessions",
                  "pipeline", "evaluation", "fold", "score_metric")
VAL_FRACTION = 0.2


@dataclass
class Fold:
    """One train/val/test split of a labelled dataset.

    ``splits`` maps ``train``/``val``/``test`` to :class:`PatchDataset` keyword arguments (``samples=``
    numbers, or ``subjects=`` for the card scheme); ``subject``/``session`` name what the test set holds.
    """

    name: str
    subject: str
    session: str
    splits: dict[str, dict[str, list]]


def _val_subjects(rest: list[str], test: list[str], all_subjects: list[str]) -> list[str]:
    """The subjects following the test subjects in sorted order (cyclically), a fifth of ``rest``, >= 1."""
    n_val = max(1, int(round(VAL_FRACTION * len(rest))))
    start = (all_subjects.index(max(test)) + 1) % len(all_subjects)
    order = all_subjects[start:] + all_subjects[:start]
    return [s for s in order if s in rest][:n_val]


def _stratified_val(ids: np.ndarray, labels: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Split ``ids`` into (train, val) with a stratified fifth for validation (plain split for targets)."""
    from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

    classes = labels.dtype.kind in "iu"
    n_val = max(len(np.unique(labels)) if classes else 1, int(round(VAL_FRACTION * len(ids))))
    strat = classes and np.bincount(labels)[np.unique(labels)].min() >= 2 and n_val < len(ids)
    splitter = (StratifiedShuffleSplit if strat else ShuffleSplit)(n_splits=1, test_size=n_val, random_state=seed)
    tr, va = next(splitter.split(ids, labels if strat else None))
    return np.sort(ids[tr]), np.sort(ids[va])


def make_folds(ds: PatchDataset, scheme: str, *, n_folds: int = 5, seed: int = 0,
               card_splits: dict[str, dict] | None = None) -> list[Fold]:
    """Folds of ``scheme`` over the labelled dataset ``ds`` (see the module docstring).

    Parameters
    ----------
    ds : PatchDataset
        Labelled samples (``labelled=True``) with ``subject``/``session`` meta columns.
    scheme : str
        One of :data:`SCHEMES`.
    n_folds : int
        k of ``kfold-subject`` and ``within-session``.
    seed : int
        Seed of the trial shuffles (within-subject schemes).
    card_splits : dict, optional
        The ``card`` scheme's split (from :func:`~neurokit.data.splits.resolve_splits`).

    Raises
    ------
    ConfigError
        Unknown scheme, or too few subjects / sessions / trials for it.
    """
    from sklearn.model_selection import GroupKFold, KFold, StratifiedKFold

    if scheme not in SCHEMES:
        raise ConfigError(f"scheme={scheme!r}; allowed: {', '.join(SCHEMES)}")
    if scheme == "card":
        if card_splits is None:
            raise ConfigError("the card scheme needs the card's splits")
        test = card_splits["test"]
        return [Fold("card", ",".join(test.get("subjects", [])) or "card", "all", card_splits)]
    col = sample_columns(ds)
    subjects = sorted(set(col["subject"].tolist()))
    folds: list[Fold] = []

    def by_subject(test: list[str], name: str) -> Fold:
        rest = [s for s in subjects if s not in test]
        val = _val_subjects(rest, test, subjects)
        train = [s for s in rest if s not in val]
        pick = lambda group: col["id"][np.isin(col["subject"], group)].tolist()  # noqa: E731
        return Fold(name, ",".join(test), "all", {"train": {"samples": pick(train)}, "val": {"samples": pick(val)},
                                                  "test": {"samples": pick(test)}})

    if scheme in ("loso", "kfold-subject"):
        if len(subjects) < 3:
            raise ConfigError(f"scheme {scheme!r} needs >= 3 subjects (train, validation, test); the store has {subjects}")
        if scheme == "loso":
            return [by_subject([s], f"fold-{i + 1:02d}-{s}") for i, s in enumerate(subjects)]
        if not 2 <= n_folds <= len(subjects):
            raise ConfigError(f"kfold-subject: folds={n_folds} must lie between 2 and the {len(subjects)} subjects")
        groups = np.asarray(subjects)
        for i, (_, te) in enumerate(GroupKFold(n_splits=n_folds).split(groups, groups=groups)):
            folds.append(by_subject(sorted(groups[te].tolist()), f"fold-{i + 1:02d}"))
        return folds
    for subj in subjects:
        in_subj = col["subject"] == subj
        sessions = sorted(set(col["session"][in_subj].tolist()))
        if scheme == "cross-session":
            if len(sessions) < 2:
                continue
            for sess in sessions:
                te = in_subj & (col["session"] == sess)
                pool = in_subj & ~te
                tr, va = _stratified_val(col["id"][pool], col["label"][pool], seed)
                folds.append(Fold(f"fold-{len(folds) + 1:02d}-{subj}-{sess or 'all'}", subj, sess,
                                  {"train": {"samples": tr.tolist()}, "val": {"samples": va.tolist()},
                                   "test": {"samples": col["id"][te].tolist()}}))
            continue
        for sess in sessions:
            m = in_subj & (col["session"] == sess)
            ids, y = col["id"][m], col["label"][m]
            strat = y.dtype.kind in "iu" and np.bincount(y).min(initial=n_folds) >= n_folds
            if len(ids) < 2 * n_folds:
                raise ConfigError(f"within-session: {subj} session {sess or '(none)'} has {len(ids)} trials, "
                                  f"too few for {n_folds} folds")
            splitter = (StratifiedKFold if strat else KFold)(n_splits=n_folds, shuffle=True, random_state=seed)
            for k, (tr_i, te_i) in enumerate(splitter.split(ids, y if strat else None)):
                tr, va = _stratified_val(ids[tr_i], y[tr_i], seed + k)
                folds.append(Fold(f"fold-{len(folds) + 1:02d}-{subj}-{sess or 'all'}-k{k + 1}", subj, sess or "all",
                                  {"train": {"samples": tr.tolist()}, "val": {"samples": va.tolist()},
                                   "test": {"samples": np.sort(ids[te_i]).tolist()}}))
    if not folds:
        raise ConfigError(f"scheme {scheme!r} needs subjects with >= 2 sessions; the store's sessions per subject: "
                          + ", ".join(f"{s}: {sorted(set(col['session'][col['subject'] == s]))}" for s in subjects[:5]))
    return folds




def moabb_score(kind: str, y: np.ndarray, out: np.ndarray) -> tuple[str, float]:
    """MOABB's default score: ROC AUC (binary), accuracy (multi-class), R² (regression)."""
    from sklearn.metrics import accuracy_score, r2_score, roc_auc_score

    if kind == "binary":
        return "roc_auc", float(roc_auc_score(y, out)) if len(np.unique(y)) == 2 else float("nan")
    if kind == "multiclass":
        return "accuracy", float(accuracy_score(y, np.asarray(out).argmax(axis=1)))
    return "r2", float(r2_score(y, out))


def summarize(folds: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean and standard deviation (ddof 0, NaN ignored) over folds of every test metric and the score."""
    names = sorted({k for f in folds for k in f["test"]} | {"score"})
    mean, std = {}, {}
    for k in names:
        v = np.asarray([f["score"] if k == "score" else f["test"].get(k, np.nan) for f in folds], dtype=float)
        ok = v[np.isfinite(v)]
        mean[k] = float(ok.mean()) if len(ok) else float("nan")
        std[k] = float(ok.std()) if len(ok) else float("nan")
    return {"mean": mean, "std": std}


def write_results_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(RESULT_COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in RESULT_COLUMNS})
    return path


def run_scheme(stores: list, out: Path, cfg, scheme: str, *, fit_fold: Callable[..., dict[str, Any]],
               n_folds: int = 5) -> dict[str, Any]:
    """Fine-tune once per fold of ``scheme`` (each in ``out/<fold name>/``) and write the scheme report
    (``out/report.json``: per-fold metrics, mean ± std, MOABB rows; ``out/results.csv``).

    ``fit_fold(fold_dir, split_kw, leak_unit) -> report`` trains and scores one fold (the fine-tuning
    pipeline passes its own); it writes ``fold_dir/predictions.npz``. ``cfg`` gives ``splits``, ``seed`` and
    ``model``.
    """
    from neurokit.data.splits import resolve_splits

    ds = PatchDataset(stores, labelled=True)
    if len(ds) == 0:
        raise ConfigError(f"{stores}: no labelled samples (prepare the store with a labelled task)")
    card_splits = resolve_splits(ds, cfg.splits)[1] if scheme == "card" else None
    folds = make_folds(ds, scheme, n_folds=n_folds, seed=cfg.seed, card_splits=card_splits)
    for f in folds:  # every fold is checked before any training starts
        check_no_leak(ds, f.splits, LEAK_UNIT[scheme])
    meta = ds.info
    n_sessions = len(set(ds.meta("session").astype(str)))
    fold_reps, rows = [], []
    t_all = time.perf_counter()
    for i, f in enumerate(folds):
        logger.info("%s fold %d/%d: %s", scheme, i + 1, len(folds), f.name)
        (out / f.name / "metrics.jsonl").unlink(missing_ok=True)  # an overwritten run's curves
        rep = fit_fold(out / f.name, f.splits, LEAK_UNIT[scheme])
        pred = np.load(out / f.name / "predictions.npz")
        metric, sc = moabb_score(rep["kind"], pred["y"], pred["scores"])
        fold_reps.append({"fold": f.name, "subject": f.subject, "session": f.session, "test": rep["test"],
                          "score": sc, "score_metric": metric, "n_samples": rep["n_samples"],
                          "best_epoch": rep["best_epoch"], "seconds": rep["seconds"], "splits": f.splits})
        rows.append({"dataset": meta.card or "store", "subject": f.subject, "session": f.session, "score": sc,
                     "time": rep["seconds"], "samples": rep["n_samples"]["train"],
                     "channels": len(meta.ch_names or ()) or ds.sample_shape[0], "n_sessions": n_sessions,
                     "pipeline": f"{rep.get('model', cfg.model)}+{rep['head']}", "evaluation": MOABB_EVALUATION[scheme],
                     "fold": f.name, "score_metric": metric})
    report = {"scheme": scheme, "n_folds": len(folds), "task": meta.task, "card": meta.card,
              "kind": rep["kind"], "label_names": rep["label_names"], "selection_metric": rep["selection_metric"], "init": rep["init"],
              "head": rep["head"], "folds": fold_reps, **summarize(fold_reps), "results": rows,
              "seconds": time.perf_counter() - t_all}
    write_results_csv(out / "results.csv", rows)
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float))
    return report


def evaluate_scheme(run_dir: str | Path, store, *, batch_size: int = 64, device: str = "auto") -> dict[str, Any]:
    """Score every fold's checkpoint of a scheme run (``neuro finetune --scheme``) on its own test samples
    of ``store`` and summarise them (mean ± std), as :func:`run_scheme` reported.

    Raises
    ------
    ConfigError
        ``run_dir`` holds no scheme report, or a fold's checkpoint is missing.
    """
    from neurokit.evaluation.metrics import score
    from neurokit.models.checkpoint import check_channels
    from neurokit.models.heads import load_finetuned
    from neurokit.training import distributed as dist
    from neurokit.training.predict import predict

    run_dir = Path(run_dir)
    rp = run_dir / "report.json"
    rep = json.loads(rp.read_text()) if rp.exists() else {}
    if "folds" not in rep:
        raise ConfigError(f"{run_dir}: no scheme run here (report.json with folds); run neuro finetune --scheme first")
    stores = list(store) if isinstance(store, (list, tuple)) else [store]
    dev = dist.setup(device).device
    folds = []
    for f in rep["folds"]:
        ck_path = run_dir / f["fold"] / "best.pt"
        if not ck_path.exists():
            raise ConfigError(f"{ck_path}: fold checkpoint missing")
        model, ck = load_finetuned(ck_path, dev)
        ds = PatchDataset(stores, labelled=True, **f["splits"]["test"])
        check_channels(ck.get("ch_names"), ds.info.ch_names, store=stores[0], checkpoint=ck_path)
        if len(ds) == 0:
            raise ConfigError(f"{stores[0]}: none of fold {f['fold']}'s test samples is in the store")
        y, o = predict(model, ds, batch_size, dev)
        metric, sc = moabb_score(ck["task_kind"], y, o)
        folds.append({"fold": f["fold"], "subject": f["subject"], "session": f["session"],
                      "test": score(ck["task_kind"], y, o), "score": sc, "score_metric": metric, "n_samples": len(ds)})
    return {"scheme": rep["scheme"], "checkpoint": str(run_dir), "folds": folds, **summarize(folds)}
