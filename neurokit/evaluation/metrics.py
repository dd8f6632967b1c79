"""Classification and regression metrics as reported by CBraMod (Wang et al., ICLR 2025, §4.1).

Multi-class: balanced accuracy, Cohen's kappa, weighted F1. Binary: balanced accuracy (0.5 threshold on
the sigmoid), AUC-PR, AUROC, plus Cohen's kappa, weighted F1 and average precision. Regression:
Pearson r, R², RMSE. Computed with scikit-learn / scipy.

``auc_pr`` is the paper's AUC-PR as the released evaluator computes it (wjq-learning/CBraMod,
``finetune_evaluator.py``): the trapezoidal area ``sklearn.metrics.auc(recall, precision)`` under
``precision_recall_curve``. It is not average precision (the step-wise sum, typically ~0.01 apart), which
is reported separately as ``average_precision``.
"""

from __future__ import annotations

import contextlib
import logging
import warnings

import numpy as np

#: metric used for model selection on the validation split, per task kind
SELECTION = {"multiclass": "cohen_kappa", "binary": "auroc", "regression": "r2"}


@contextlib.contextmanager
def library_warnings_said(where: str):
    """Turn the warnings scikit-learn (and scipy, pyriemann) raise while a baseline or probe is fitted into one
    ``neurokit`` log line each, naming what was fitted, instead of raw ``UserWarning`` text with a library's source
    line (a logistic regression that did not converge, a class absent from a split…).

    Parameters
    ----------
    where : str
        What is being fitted, for the line (``"baseline bandpower_lr"``).

    Yields
    ------
    None

    Examples
    --------
    >>> with library_warnings_said("baseline x"):
    ...     warnings.warn("lbfgs failed to converge", UserWarning)
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    said: set[str] = set()
    for w in caught:
        if not issubclass(w.category, Warning) or issubclass(w.category, DeprecationWarning):
            continue
        text = " ".join(str(w.message).split())[:300]
        if text not in said:
            said.add(text)
            logging.getLogger("neurokit").info("%s: %s (%s)", where, text, w.category.__name__)


def classification_metrics(y_true: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """Metrics of a classifier.

    Parameters
    ----------
    y_true : numpy.ndarray of int, shape (n,)
        True class per sample.
    scores : numpy.ndarray of float, shape (n,) or (n, n_classes)
        Binary: the logit of class 1 (thresholded at 0, i.e. probability 0.5); multi-class: one logit per class
        (the prediction is the arg-max).

    Returns
    -------
    dict of str to float
        ``balanced_accuracy``, ``cohen_kappa``, ``f1_weighted``; binary also ``auroc``, ``auc_pr`` and
        ``average_precision`` (NaN when the split holds one class).

    Examples
    --------
    >>> m = classification_metrics(np.array([0, 0, 1, 1]), np.array([-2.0, 1.0, 0.5, 3.0]))
    >>> m["balanced_accuracy"], m["auroc"]
    (0.75, 0.75)
    """
    with warnings.catch_warnings():  # a test split that lacks a predicted class: said by mark_undefined instead
        warnings.filterwarnings("ignore", message="y_pred contains classes not in y_true", category=UserWarning)
        return _classification_metrics(np.asarray(y_true).astype(int), np.asarray(scores, dtype=np.float64))


def _classification_metrics(y_true: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import (
        auc,
        average_precision_score,
        balanced_accuracy_score,
        cohen_kappa_score,
        f1_score,
        precision_recall_curve,
        roc_auc_score,
    )

    if scores.ndim == 1:  # binary, one logit
        from scipy.special import expit

        prob = expit(scores)  # the logistic sigmoid without overflow at large |logit|
        pred = (prob >= 0.5).astype(int)
        out = {
            "balanced_accuracy": float(balanced_accuracy_score(y_true, pred)),
            "cohen_kappa": float(cohen_kappa_score(y_true, pred)),
            "f1_weighted": float(f1_score(y_true, pred, average="weighted", zero_division=0)),
        }
        both = len(np.unique(y_true)) == 2
        out["auroc"] = float(roc_auc_score(y_true, prob)) if both else float("nan")
        if both:
            precision, recall, _ = precision_recall_curve(y_true, prob, pos_label=1)
            out["auc_pr"] = float(auc(recall, precision))
            out["average_precision"] = float(average_precision_score(y_true, prob))
        else:
            out["auc_pr"] = out["average_precision"] = float("nan")
        return out
    pred = scores.argmax(axis=1)
    return {
        "balanced_accuracy": float(balanced_accuracy_score(y_true, pred)),
        "cohen_kappa": float(cohen_kappa_score(y_true, pred)),
        "f1_weighted": float(f1_score(y_true, pred, average="weighted", zero_division=0)),
    }


def regression_metrics(y_true: np.ndarray, y_pred: np.ndarray) -> dict[str, float]:
    """Metrics of a regression.

    Parameters
    ----------
    y_true : numpy.ndarray, shape (n,)
        True targets.
    y_pred : numpy.ndarray, shape (n,) or (n, 1)
        Predictions, in the unit of ``y_true``.

    Returns
    -------
    dict of str to float
        ``pearson_r`` (NaN when either side is constant), ``r2`` and ``rmse`` (unit of the targets).

    Examples
    --------
    >>> m = regression_metrics(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0]))
    >>> round(m["pearson_r"], 3), m["r2"], round(m["rmse"], 3)
    (0.982, 0.5, 0.577)
    """
    from scipy.stats import pearsonr
    from sklearn.metrics import mean_squared_error, r2_score

    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64).reshape(y_true.shape)
    with warnings.catch_warnings():  # (nearly) constant predictions: r is undefined (NaN), said by mark_undefined
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", message=".*constant.*")
        r = pearsonr(y_true, y_pred)[0] if np.std(y_pred) > 0 and np.std(y_true) > 0 else float("nan")
    return {
        "pearson_r": float(r),
        "r2": float(r2_score(y_true, y_pred)),
        "rmse": float(np.sqrt(mean_squared_error(y_true, y_pred))),
    }


def degenerate_predictions(
    kind: str, y_true: np.ndarray, out: np.ndarray, label_names: list[str] | None = None
) -> str | None:
    """Say so when a classifier's test predictions carry no information, else ``None``.

    A balanced accuracy of exactly 0.5 with kappa 0 usually means every sample got one class; an AUROC is
    undefined when one class is present, and meaningless when every score is equal. These are named here so
    a report never prints them as a result.

    Parameters
    ----------
    kind : {"binary", "multiclass", "regression"}
        The task's kind.
    y_true : numpy.ndarray of int, shape (n,)
        True class (or target) per test sample.
    out : numpy.ndarray of float, shape (n,) or (n, n_classes)
        Binary logit or regression prediction, or one logit per class.
    label_names : list of str, optional
        Class names, for the message.

    Returns
    -------
    str or None
        E.g. ``"all 140 test samples predicted 'left_fist'"``.

    Examples
    --------
    >>> degenerate_predictions("binary", np.array([0, 1, 1]), np.array([-2.0, -1.0, -3.0]), ["rest", "seizure"])
    "all 3 test samples predicted 'rest'"
    """
    y_true = np.asarray(y_true)
    out = np.asarray(out, dtype=np.float64)
    n = len(y_true)
    if n == 0:
        return "no test sample"
    if kind == "regression":
        return f"all {n} test predictions are equal ({out.ravel()[0]:.4g})" if np.ptp(out) == 0 else None
    names = list(label_names or [])
    pred = (out >= 0).astype(int) if out.ndim == 1 else out.argmax(axis=1)
    if out.ndim == 1 and np.ptp(out) == 0 or out.ndim == 2 and np.ptp(out, axis=0).max() == 0:
        return f"all {n} test scores are equal: no ranking (AUROC and AUC-PR mean nothing)"
    if len(np.unique(pred)) == 1:
        c = int(pred[0])
        return (
            f"all {n} test samples predicted {names[c]!r}"
            if c < len(names)
            else f"all {n} test samples predicted class {c}"
        )
    if len(np.unique(y_true)) == 1:
        return f"one class in the {n} test samples: AUROC and balanced accuracy are undefined"
    return None


def score(kind: str, y: np.ndarray, out: np.ndarray) -> dict[str, float]:
    """The metrics of a task's kind: :func:`regression_metrics` for a regression, else
    :func:`classification_metrics`.

    Parameters
    ----------
    kind : {"binary", "multiclass", "regression"}
        The task's kind.
    y : numpy.ndarray, shape (n,)
        True classes (int) or targets (float).
    out : numpy.ndarray, shape (n,) or (n, n_classes)
        Model outputs: a binary logit, a regression prediction, or one logit per class.

    Returns
    -------
    dict of str to float
        Metric name → value.

    Examples
    --------
    >>> score("multiclass", np.array([0, 1, 2]), np.eye(3))["cohen_kappa"]
    1.0
    """
    return regression_metrics(y, out) if kind == "regression" else classification_metrics(y, out)


#: metrics that need both classes (or every class) in the scored split to mean anything
NEEDS_CLASSES = ("balanced_accuracy", "cohen_kappa", "auroc", "auc_pr", "average_precision")


def mark_undefined(
    kind: str, y_true: np.ndarray, metrics: dict, label_names: list[str] | None = None, split: str = "test"
) -> tuple[dict, dict[str, str]]:
    """Replace the metrics a split cannot define by ``None`` and say why, so no report prints them as numbers.

    With one class in the split, AUROC, AUC-PR and average precision are undefined (no negative or no
    positive to rank) and balanced accuracy and Cohen's kappa are too (one class's recall, a kappa with no
    chance agreement to compare with): they become ``None`` with ``"undefined (only class 'X' in the test
    split)"``. Any other value that is not a finite number (e.g. Pearson r of constant predictions) becomes
    ``None`` with ``"undefined (not a finite number)"``.

    Parameters
    ----------
    kind : {"binary", "multiclass", "regression"}
        The task's kind.
    y_true : numpy.ndarray, shape (n,)
        The split's labels.
    metrics : dict
        Metric name → float (from :func:`score`).
    label_names : list of str, optional
        Class names, for the reason.
    split : str
        The split's name, for the reason.

    Returns
    -------
    (metrics, undefined) : a copy of ``metrics`` with ``None`` for each undefined metric, and metric name →
        reason (empty when every metric is defined).

    Examples
    --------
    >>> m, why = mark_undefined("binary", np.array([1, 1]), {"auroc": float("nan"), "f1_weighted": 1.0}, ["a", "b"])
    >>> m["auroc"], why["auroc"]
    (None, "undefined (only class 'b' in the test split)")
    """
    out, why = dict(metrics), {}
    y_true = np.asarray(y_true)
    if kind != "regression" and len(y_true) and len(np.unique(y_true)) == 1:
        c = int(y_true[0])
        names = list(label_names or [])
        name = names[c] if c < len(names) else str(c)
        for k in NEEDS_CLASSES:
            if k in out:
                out[k] = None
                why[k] = f"undefined (only class {name!r} in the {split} split)"
    for k, v in out.items():
        if isinstance(v, float) and not np.isfinite(v):
            out[k] = None
            why[k] = "undefined (not a finite number)"
    return out, why
