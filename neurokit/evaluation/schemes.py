"""Evaluation schemes of the BCI literature around one fine-tuning run per fold.

Schemes (``neuro finetune --scheme``):

- ``card``: the data card's train/val/test subjects (one fold; CBraMod's protocol)
- ``loso``: leave one subject out: each subject is the test set once (MOABB's CrossSubject with
  ``LeaveOneGroupOut``)
- ``kfold-subject``: k folds of whole subjects (sklearn ``GroupKFold``)
- ``cross-session``: per subject, leave one session out (MOABB's CrossSession)
- ``within-session``: per subject and session, stratified k-fold over its trials (MOABB's WithinSession)

Model selection needs a validation set that the test fold never sees: in the cross-subject schemes it is
a fifth of the remaining subjects (those following the test subjects in sorted order, at least one); in
the within-subject schemes a stratified fifth of the training trials. Every fold goes through
:func:`check_no_leak`. Results: one row per fold with MOABB's result-table columns (``dataset``,
``subject``, ``session``, ``score``, ``time``, ``samples``, ``channels``, ``n_sessions``, ``pipeline``,
``evaluation``), mean ± std over folds of every metric, ``results.csv``.

The rows are MOABB's (1.7.2): a cross-subject fold (``loso``, ``kfold-subject``, ``card``) is scored once
per held-out subject and session, a cross-session fold once, and a within-session subject × session once,
averaged over its folds (:func:`fold_rows`, :func:`average_folds`). ``samples`` is what the pipeline was
fitted on (training + validation samples; within-session: the session's trials, as MOABB), ``samples_test``
the scored samples, ``n_classes`` the classes among them, ``time`` the fitting time in seconds.
neurokit's own summary, one pooled score per fold, stays in ``report.json`` (``folds``, ``mean``, ``std``)
and in the rows' ``fold_score`` column; ``results_score`` is the rows' mean ± std, as MOABB averages them.

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
MOABB_EVALUATION = {
    "card": "CardSplit",
    "loso": "CrossSubject",
    "kfold-subject": "CrossSubject",
    "cross-session": "CrossSession",
    "within-session": "WithinSession",
}
#: the unit no fold may share between its test set and its training/validation sets
LEAK_UNIT = {
    "card": "subject",
    "loso": "subject",
    "kfold-subject": "subject",
    "cross-session": "session",
    "within-session": "window",
}
RESULT_COLUMNS = (
    "dataset",
    "subject",
    "session",
    "score",
    "time",
    "samples",
    "samples_test",
    "n_classes",
    "channels",
    "n_sessions",
    "pipeline",
    "evaluation",
    "fold",
    "score_metric",
    "fold_score",
)
VAL_FRACTION = 0.2


@dataclass
class Fold:
    """One train/val/test split of a labelled dataset (made by :func:`make_folds`).

    Attributes
    ----------
    name : str
        The fold's name, also its run folder (``"fold-01-S001"``; ``"card"`` for the card scheme).
    subject : str
        The test set's subject(s), comma-separated.
    session : str
        The test set's session (``"all"`` when it holds every session).
    splits : dict of str to dict
        ``train``/``val``/``test`` → :class:`~neurokit.data.dataset.PatchDataset` keyword arguments
        (``{"samples": [sample numbers]}``, or ``{"subjects": [...]}`` for the card scheme).

    Examples
    --------
    >>> f = Fold("fold-01-S1", "S1", "all", {"train": {"samples": [0, 1]}, "val": {"samples": [2]},
    ...                                      "test": {"samples": [3]}})
    >>> f.splits["test"]
    {'samples': [3]}
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


def make_folds(
    ds: PatchDataset, scheme: str, *, n_folds: int = 5, seed: int = 0, card_splits: dict[str, dict] | None = None
) -> list[Fold]:
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

    Returns
    -------
    list of Fold
        The folds, in order (cross-subject: by test subject; within-subject: by subject, session and k).

    Raises
    ------
    ConfigError
        Unknown scheme, or too few subjects / sessions / trials for it.

    Examples
    --------
    >>> from neurokit.data.dataset import PatchDataset
    >>> folds = make_folds(PatchDataset(["lr.h5"], labelled=True), "loso")  # doctest: +SKIP
    >>> [f.name for f in folds][:2]  # doctest: +SKIP
    ['fold-01-S001', 'fold-02-S002']
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
        return Fold(
            name,
            ",".join(test),
            "all",
            {"train": {"samples": pick(train)}, "val": {"samples": pick(val)}, "test": {"samples": pick(test)}},
        )

    if scheme in ("loso", "kfold-subject"):
        if len(subjects) < 3:
            raise ConfigError(
                f"scheme {scheme!r} needs >= 3 subjects (train, validation, test); the store has {subjects}"
            )
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
                folds.append(
                    Fold(
                        f"fold-{len(folds) + 1:02d}-{subj}-{sess or 'all'}",
                        subj,
                        sess,
                        {
                            "train": {"samples": tr.tolist()},
                            "val": {"samples": va.tolist()},
                            "test": {"samples": col["id"][te].tolist()},
                        },
                    )
                )
            continue
        for sess in sessions:
            m = in_subj & (col["session"] == sess)
            ids, y = col["id"][m], col["label"][m]
            strat = y.dtype.kind in "iu" and np.bincount(y).min(initial=n_folds) >= n_folds
            if len(ids) < 2 * n_folds:
                raise ConfigError(
                    f"within-session: {subj} session {sess or '(none)'} has {len(ids)} trials, "
                    f"too few for {n_folds} folds"
                )
            splitter = (StratifiedKFold if strat else KFold)(n_splits=n_folds, shuffle=True, random_state=seed)
            for k, (tr_i, te_i) in enumerate(splitter.split(ids, y if strat else None)):
                tr, va = _stratified_val(ids[tr_i], y[tr_i], seed + k)
                folds.append(
                    Fold(
                        f"fold-{len(folds) + 1:02d}-{subj}-{sess or 'all'}-k{k + 1}",
                        subj,
                        sess or "all",
                        {
                            "train": {"samples": tr.tolist()},
                            "val": {"samples": va.tolist()},
                            "test": {"samples": np.sort(ids[te_i]).tolist()},
                        },
                    )
                )
    if not folds:
        raise ConfigError(
            f"scheme {scheme!r} needs subjects with >= 2 sessions; the store's sessions per subject: "
            + ", ".join(f"{s}: {sorted(set(col['session'][col['subject'] == s]))}" for s in subjects[:5])
        )
    return folds


def moabb_score(kind: str, y: np.ndarray, out: np.ndarray) -> tuple[str, float]:
    """MOABB's default score: ROC AUC (binary), accuracy (multi-class), R² (regression).

    Parameters
    ----------
    kind : {"binary", "multiclass", "regression"}
        The task's kind.
    y : numpy.ndarray, shape (n,)
        True classes or targets.
    out : numpy.ndarray, shape (n,) or (n, n_classes)
        Model outputs (binary: one logit; multi-class: logits per class; regression: predictions).

    Returns
    -------
    metric : str
        ``"roc_auc"``, ``"accuracy"`` or ``"r2"``.
    value : float
        The score (NaN for a binary split holding one class).

    Examples
    --------
    >>> moabb_score("binary", np.array([0, 1, 1]), np.array([-1.0, 2.0, 0.5]))
    ('roc_auc', 1.0)
    """
    from sklearn.metrics import accuracy_score, r2_score, roc_auc_score

    if kind == "binary":
        return "roc_auc", float(roc_auc_score(y, out)) if len(np.unique(y)) == 2 else float("nan")
    if kind == "multiclass":
        return "accuracy", float(accuracy_score(y, np.asarray(out).argmax(axis=1)))
    return "r2", float(r2_score(y, out))


def fold_rows(
    scheme: str,
    kind: str,
    y: np.ndarray,
    scores: np.ndarray,
    subjects: np.ndarray,
    sessions: np.ndarray,
    *,
    n_train: int,
    fit_seconds: float,
    fold: str = "",
    **common: Any,
) -> list[dict[str, Any]]:
    """MOABB's result rows of one fold: its test predictions scored per (subject, session).

    MOABB 1.7.2 (``moabb/evaluations/base.py``, ``_evaluate_fold``) scores a cross-subject fold once per
    session of the held-out data (``score_per_session``), and a cross-session or within-session fold once;
    this function scores each (subject, session) group of the test set, which is the same for LOSO,
    cross-session and within-session folds (one subject, and one session for the last two) and one row per
    held-out subject for ``kfold-subject`` (MOABB's ``GroupKFold`` path pools a fold's subjects per session
    under the first subject's name).

    Parameters
    ----------
    scheme : str
        One of :data:`SCHEMES` (names the row's ``evaluation``).
    kind : {"binary", "multiclass", "regression"}
    y : ndarray, shape (n_test,)
        Test labels.
    scores : ndarray, shape (n_test,) or (n_test, n_classes)
        The model's test outputs (one logit for binary; logits per class for multi-class).
    subjects, sessions : ndarray of str, shape (n_test,)
        Each test sample's subject and session.
    n_train : int
        Samples the pipeline was fitted on (MOABB's ``n_samples`` = ``len(train_idx)``; in neurokit the
        training and validation splits, the validation one serving model selection).
    fit_seconds : float
        Fitting time in seconds (MOABB's ``time``).
    fold : str
        The fold's name (kept in the ``fold`` column).
    **common
        Further columns (``dataset``, ``channels``, ``n_sessions``, ``pipeline``).

    Returns
    -------
    list of dict
        One row per (subject, session) in order of appearance, with ``score`` (:func:`moabb_score`),
        ``score_metric``, ``samples`` (= ``n_train``), ``samples_test``, ``n_classes`` (classes present in
        the group's labels), ``time``, ``subject``, ``session``, ``evaluation``, ``fold``.

    Examples
    --------
    >>> import numpy as np
    >>> rows = fold_rows("loso", "binary", np.array([0, 1, 0, 1]), np.array([-1., 1., 1., -1.]),
    ...                  np.array(["S1"] * 4), np.array(["a", "a", "b", "b"]), n_train=10, fit_seconds=1.0)
    >>> [(r["session"], r["score"], r["samples_test"]) for r in rows]
    [('a', 1.0, 2), ('b', 0.0, 2)]
    """
    y, scores = np.asarray(y), np.asarray(scores)
    subjects, sessions = np.asarray(subjects).astype(str), np.asarray(sessions).astype(str)
    rows = []
    for subj, sess in dict.fromkeys(zip(subjects.tolist(), sessions.tolist())):
        m = (subjects == subj) & (sessions == sess)
        metric, sc = moabb_score(kind, y[m], scores[m])
        rows.append(
            {
                **common,
                "subject": subj,
                "session": sess or "all",
                "score": sc,
                "score_metric": metric,
                "time": float(fit_seconds),
                "samples": int(n_train),
                "samples_test": int(m.sum()),
                "n_classes": len(np.unique(y[m])) if kind != "regression" else 0,
                "evaluation": MOABB_EVALUATION[scheme],
                "fold": fold,
            }
        )
    return rows


def average_folds(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Within-session rows averaged over folds: one row per (subject, session, pipeline), as MOABB's
    ``WithinSessionEvaluation`` (``_aggregate_fold_results``): ``score`` and ``time`` are means over the folds,
    ``samples_test`` the mean test size (an int), ``n_classes`` the largest, ``samples`` the session's trials
    (MOABB's ``n_samples_total``: training plus test samples of a fold), ``fold`` the folds joined by ``+``.

    Parameters
    ----------
    rows : list of dict
        Rows of :func:`fold_rows`, several folds of one (subject, session, pipeline).

    Returns
    -------
    list of dict
        One row per (subject, session, pipeline), in order of first appearance (``fold_score`` averaged too when
        present).

    Examples
    --------
    >>> r = [{"subject": "S1", "session": "a", "pipeline": "p", "score": s, "time": 1.0, "samples": 8,
    ...       "samples_test": 2, "n_classes": 2, "fold": f} for s, f in ((1.0, "k1"), (0.5, "k2"))]
    >>> out = average_folds(r)
    >>> (len(out), out[0]["score"], out[0]["samples"], out[0]["fold"])
    (1, 0.75, 10, 'k1+k2')
    """
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["subject"], r["session"], r.get("pipeline")), []).append(r)
    out = []
    for g in groups.values():
        sc = np.asarray([r["score"] for r in g], dtype=float)
        out.append(
            {
                **g[0],
                "score": float(np.nanmean(sc)) if np.isfinite(sc).any() else float("nan"),
                "time": float(np.mean([r["time"] for r in g])),
                "samples": int(g[0]["samples"] + g[0]["samples_test"]),
                "samples_test": int(np.mean([r["samples_test"] for r in g])),
                "n_classes": int(max(r["n_classes"] for r in g)),
                "fold": "+".join(r["fold"] for r in g),
            }
        )
        if "fold_score" in g[0]:  # neurokit's pooled score of each fold, averaged as the score is
            out[-1]["fold_score"] = float(np.mean([r["fold_score"] for r in g]))
    return out


def _row_summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Mean and standard deviation (ddof 0, NaN ignored) of the MOABB rows' scores, beside the folds' summary."""
    v = np.asarray([r["score"] for r in rows], dtype=float)
    ok = v[np.isfinite(v)]
    return {
        "mean": float(ok.mean()) if len(ok) else float("nan"),
        "std": float(ok.std()) if len(ok) else float("nan"),
        "n_rows": len(rows),
    }


def summarize(folds: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean and standard deviation (ddof 0, NaN ignored) over folds of every test metric and the score.

    Parameters
    ----------
    folds : list of dict
        Per-fold results, each with ``"test"`` (metric name → value) and ``"score"`` (:func:`moabb_score`).

    Returns
    -------
    dict
        ``{"mean": {metric: value}, "std": {metric: value}}`` over every metric any fold reports, and ``score``.

    Examples
    --------
    >>> s = summarize([{"test": {"auroc": 0.8}, "score": 0.8}, {"test": {"auroc": 0.6}, "score": 0.6}])
    >>> round(s["mean"]["auroc"], 3), round(s["std"]["score"], 3)
    (0.7, 0.1)
    """
    names = sorted({k for f in folds for k in f["test"]} | {"score"})
    mean, std = {}, {}
    for k in names:
        v = np.asarray([f["score"] if k == "score" else f["test"].get(k, np.nan) for f in folds], dtype=float)
        ok = v[np.isfinite(v)]
        mean[k] = float(ok.mean()) if len(ok) else float("nan")
        std[k] = float(ok.std()) if len(ok) else float("nan")
    return {"mean": mean, "std": std}


def write_results_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write MOABB-style result rows as CSV with the columns of :data:`RESULT_COLUMNS` (missing values empty).

    Parameters
    ----------
    path : pathlib.Path
        The file to write (replaced).
    rows : list of dict
        Rows of :func:`fold_rows` or :func:`average_folds`; keys outside :data:`RESULT_COLUMNS` are dropped.

    Returns
    -------
    pathlib.Path
        ``path``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = write_results_csv(Path(d) / "results.csv", [{"subject": "S1", "score": 0.9}])
    ...     p.read_text().splitlines()[1]
    ',S1,,0.9,,,,,,,,,,,'
    """
    with path.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(RESULT_COLUMNS))
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in RESULT_COLUMNS})
    return path


def run_scheme(
    stores: list, out: Path, cfg, scheme: str, *, fit_fold: Callable[..., dict[str, Any]], n_folds: int = 5
) -> dict[str, Any]:
    """Fine-tune once per fold of ``scheme`` (each in ``out/<fold name>/``) and write the scheme report
    (``out/report.json``: per-fold metrics, mean ± std, MOABB rows; ``out/results.csv``).

    ``fit_fold(fold_dir, split_kw, leak_unit) -> report`` trains and scores one fold (the fine-tuning
    pipeline passes its own); it writes ``fold_dir/predictions.npz``. ``cfg`` gives ``splits``, ``seed`` and
    ``model``.

    Parameters
    ----------
    stores : list of str or pathlib.Path
        The labelled patch stores, read as one dataset.
    out : pathlib.Path
        The run folder (one sub-folder per fold).
    cfg : FinetuneConfig
        Fine-tuning settings; read here: ``splits`` (the card scheme's split), ``seed`` and ``model``.
    scheme : str
        One of :data:`SCHEMES`.
    fit_fold : callable
        ``fit_fold(fold_dir, split_kw, leak_unit) -> report``: trains and scores one fold; its report has
        ``kind``, ``test``, ``n_samples``, ``best_epoch``, ``seconds``, ``head``, ``init``, ``label_names`` and
        ``selection_metric``.
    n_folds : int
        k of ``kfold-subject`` and ``within-session``.

    Returns
    -------
    dict
        The scheme report (also written to ``out/report.json``): ``folds``, ``mean``, ``std``, ``results`` (the
        MOABB rows), ``results_score``, ``seconds``…

    Raises
    ------
    ConfigError
        No labelled sample; a scheme the data cannot support (:func:`make_folds`); a fold whose test set shares
        its leak unit with training (:func:`~neurokit.data.splits.check_no_leak`).

    Examples
    --------
    >>> rep = run_scheme(["lr.h5"], Path("runs/loso"), cfg, "loso", fit_fold=fit)  # doctest: +SKIP
    >>> rep["mean"]["balanced_accuracy"]  # doctest: +SKIP
    0.68
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
        fold_reps.append(
            {
                "fold": f.name,
                "subject": f.subject,
                "session": f.session,
                "test": rep["test"],
                "score": sc,
                "score_metric": metric,
                "n_samples": rep["n_samples"],
                "best_epoch": rep["best_epoch"],
                "seconds": rep["seconds"],
                "splits": f.splits,
            }
        )
        rows += fold_rows(
            scheme,
            rep["kind"],
            pred["y"],
            pred["scores"],
            pred["subject"],
            pred["session"],
            n_train=rep["n_samples"]["train"] + rep["n_samples"].get("val", 0),
            fit_seconds=rep.get("fit_seconds", rep["seconds"]),
            fold=f.name,
            fold_score=sc,
            dataset=meta.card or "store",
            channels=len(meta.ch_names or ()) or ds.sample_shape[0],
            n_sessions=n_sessions,
            pipeline=f"{rep.get('model', cfg.model)}+{rep['head']}",
        )
    if scheme == "within-session":
        rows = average_folds(rows)
    report = {
        "scheme": scheme,
        "n_folds": len(folds),
        "task": meta.task,
        "card": meta.card,
        "kind": rep["kind"],
        "label_names": rep["label_names"],
        "selection_metric": rep["selection_metric"],
        "init": rep["init"],
        "head": rep["head"],
        "folds": fold_reps,
        **summarize(fold_reps),
        "results": rows,
        "results_score": _row_summary(rows),
        "seconds": time.perf_counter() - t_all,
    }
    write_results_csv(out / "results.csv", rows)
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float))
    return report


def evaluate_scheme(run_dir: str | Path, store, *, batch_size: int = 64, device: str = "auto") -> dict[str, Any]:
    """Score every fold's checkpoint of a scheme run (``neuro finetune --scheme``) on its own test samples
    of ``store`` and summarise them (mean ± std), as :func:`run_scheme` reported.

    Parameters
    ----------
    run_dir : str | pathlib.Path
        The scheme run's folder (holding ``report.json`` and one ``<fold>/best.pt`` per fold).
    store : str | pathlib.Path | sequence of str or pathlib.Path
        The labelled patch store(s) the folds' test samples are read from.
    batch_size : int
        Samples per forward pass.
    device : str
        Where to compute (``"auto"``: a GPU when there is one, else the CPU; ``"cpu"``, ``"cuda"``, ``"cuda:1"``).

    Returns
    -------
    dict
        ``{"scheme", "checkpoint", "folds", "mean", "std"}``: per fold its ``test`` metrics and MOABB ``score``.

    Raises
    ------
    ConfigError
        ``run_dir`` holds no scheme report, a fold's checkpoint is missing, or none of a fold's test samples is
        in ``store``.
    ChannelMismatchError
        The store's channels differ from a checkpoint's.

    Examples
    --------
    >>> evaluate_scheme("runs/loso", "lr.h5")["mean"]["auroc"]  # doctest: +SKIP
    0.74
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
        raise ConfigError(
            f"{run_dir}: no scheme run here (report.json with folds); run neuro finetune with scheme= first"
        )
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
        folds.append(
            {
                "fold": f["fold"],
                "subject": f["subject"],
                "session": f["session"],
                "test": score(ck["task_kind"], y, o),
                "score": sc,
                "score_metric": metric,
                "n_samples": len(ds),
            }
        )
    return {"scheme": rep["scheme"], "checkpoint": str(run_dir), "folds": folds, **summarize(folds)}
