"""Figures of a fine-tuning run (``neuro plot-report``, ``neuro finetune --plots``).

:func:`report_data` gathers what a run folder holds (``report.json``; ``predictions.npz`` and
``metrics.jsonl`` of the run or of each fold of a ``--scheme`` run) and computes the numbers to draw:
confusion matrix, ROC and precision-recall curves (scikit-learn), per-fold and per-subject scores, and
the training curves. :func:`plot_report` draws them with matplotlib as PNG files. Computing and drawing
are kept apart so that the numbers can be checked without looking at pictures.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from neurokit._utils.errors import ConfigError


@dataclass
class RunData:
    """What :func:`plot_report` draws: a run's report and its test predictions, pooled over folds.

    Attributes
    ----------
    report : dict
        The run's ``report.json``.
    kind : {"binary", "multiclass", "regression"}
        The task kind (``report["kind"]``).
    label_names : list of str
        Class names, in label order (empty when the report has none).
    y : ndarray, shape (n_test,)
        True labels (or targets) of the test windows.
    scores : ndarray, shape (n_test,) or (n_test, n_classes)
        The model's outputs: one logit for binary tasks, one logit per class otherwise.
    subject : ndarray of str, shape (n_test,)
        Subject of each test window.
    fold : ndarray of str, shape (n_test,)
        Fold of each test window (``"run"`` for a run without folds).
    curves : dict of str to list of dict
        Fold → its ``metrics.jsonl`` records (one per epoch); empty when none were saved.

    Examples
    --------
    >>> import numpy as np
    >>> data = RunData(report={"test": {"balanced_accuracy": 0.75}}, kind="binary", label_names=["rest", "task"],
    ...                y=np.array([0, 0, 1, 1]), scores=np.array([-1.0, 0.5, 2.0, 1.0]),
    ...                subject=np.array(["s1", "s1", "s2", "s2"]), fold=np.array(["run"] * 4))
    >>> data.folds
    ['run']
    """

    report: dict[str, Any]
    kind: str
    label_names: list[str]
    y: np.ndarray
    scores: np.ndarray
    subject: np.ndarray
    fold: np.ndarray
    curves: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # fold → metrics.jsonl records

    @property
    def folds(self) -> list[str]:
        return list(dict.fromkeys(self.fold.tolist()))


def _load_run(path: str | Path) -> tuple[Path, dict]:
    p = Path(path)
    rp = p / "report.json" if p.is_dir() else p
    if not rp.exists():
        raise FileNotFoundError(f"{rp}: no such report (give a run folder of neuro finetune or its report.json)")
    try:
        return rp.parent, json.loads(rp.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{rp}: not a neuro finetune report ({exc})") from exc


def report_data(path: str | Path) -> RunData:
    """Read a run folder (or its ``report.json``) into :class:`RunData`.

    Parameters
    ----------
    path : str or Path
        A run folder of ``neuro finetune`` (or :func:`neurokit.pipelines.finetune`), or its ``report.json``; for a
        run with folds, each fold's sub-folder holds its ``predictions.npz``.

    Returns
    -------
    RunData
        The report and the test predictions, pooled over folds, with the training curves where saved.

    Raises
    ------
    FileNotFoundError
        No report, or a run without ``predictions.npz`` (made before predictions were saved).
    ConfigError
        ``report.json`` is not valid JSON.

    Examples
    --------
    >>> data = report_data("runs/finetune-bcic2a")  # doctest: +SKIP
    >>> data.kind, data.label_names  # doctest: +SKIP
    ('multiclass', ['left_hand', 'right_hand', 'feet', 'tongue'])
    """
    run, rep = _load_run(path)
    fold_dirs = [(f["fold"], run / f["fold"]) for f in rep["folds"]] if "folds" in rep else [("run", run)]
    ys, ss, subj, fold, curves = [], [], [], [], {}
    for name, d in fold_dirs:
        pp = d / "predictions.npz"
        if not pp.exists():
            raise FileNotFoundError(
                f"{pp}: no test predictions; rerun neuro finetune (runs save them since this version)"
            )
        z = np.load(pp)
        ys.append(z["y"])
        ss.append(z["scores"])
        subj.append(z["subject"].astype(str))
        fold.append(np.full(len(z["y"]), name))
        mp = d / "metrics.jsonl"
        if mp.exists():
            curves[name] = [json.loads(line) for line in mp.read_text().splitlines() if line.strip()]
    return RunData(
        report=rep,
        kind=rep["kind"],
        label_names=list(rep.get("label_names") or []),
        y=np.concatenate(ys),
        scores=np.concatenate(ss),
        subject=np.concatenate(subj),
        fold=np.concatenate(fold),
        curves=curves,
    )


def predicted_class(kind: str, scores: np.ndarray) -> np.ndarray:
    """Class decisions from a model's outputs: logit ≥ 0 (sigmoid ≥ 0.5) for one binary logit, argmax otherwise.

    Parameters
    ----------
    kind : str
        The task kind; ``"binary"`` reads ``scores`` as one logit per window.
    scores : ndarray, shape (n,) or (n, n_classes)
        Logits.

    Returns
    -------
    ndarray of int, shape (n,)
        Predicted class of each window.

    Examples
    --------
    >>> import numpy as np
    >>> predicted_class("binary", np.array([-1.0, 0.5])).tolist()
    [0, 1]
    >>> predicted_class("multiclass", np.array([[0.1, 2.0], [3.0, 1.0]])).tolist()
    [1, 0]
    """
    return (np.asarray(scores) >= 0).astype(int) if kind == "binary" else np.asarray(scores).argmax(axis=1)


def confusion(data: RunData) -> np.ndarray:
    """Confusion matrix of a run's test predictions, pooled over folds.

    Parameters
    ----------
    data : RunData
        From :func:`report_data`.

    Returns
    -------
    ndarray of int, shape (n_classes, n_classes)
        Counts; rows are the true class, columns the predicted one.

    Examples
    --------
    >>> import numpy as np
    >>> data = RunData(report={"test": {"balanced_accuracy": 0.75}}, kind="binary", label_names=["rest", "task"],
    ...                y=np.array([0, 0, 1, 1]), scores=np.array([-1.0, 0.5, 2.0, 1.0]),
    ...                subject=np.array(["s1", "s1", "s2", "s2"]), fold=np.array(["run"] * 4))
    >>> confusion(data).tolist()
    [[1, 1], [0, 2]]
    """
    from sklearn.metrics import confusion_matrix

    n = max(len(data.label_names), 2 if data.kind == "binary" else data.scores.shape[1])
    return confusion_matrix(data.y.astype(int), predicted_class(data.kind, data.scores), labels=list(range(n)))


def curves(data: RunData, which: str = "roc") -> list[dict[str, Any]]:
    """ROC or precision-recall curves of a run's test predictions.

    Binary tasks get one curve per fold (when there are several) plus the pooled one (``name="pooled"``);
    multi-class tasks one one-vs-rest curve per class (from the softmax of the logits). A curve whose windows
    hold a single class is left out.

    Parameters
    ----------
    data : RunData
        From :func:`report_data`.
    which : {"roc", "pr"}
        ROC (x: false positive rate, y: true positive rate, area: AUC) or precision-recall (x: recall,
        y: precision, area: average precision).

    Returns
    -------
    list of dict
        ``{"name", "x", "y", "area"}`` per curve.

    Examples
    --------
    >>> import numpy as np
    >>> data = RunData(report={"test": {"balanced_accuracy": 0.75}}, kind="binary", label_names=["rest", "task"],
    ...                y=np.array([0, 0, 1, 1]), scores=np.array([-1.0, 0.5, 2.0, 1.0]),
    ...                subject=np.array(["s1", "s1", "s2", "s2"]), fold=np.array(["run"] * 4))
    >>> [(c["name"], c["area"]) for c in curves(data, "roc")]
    [('pooled', 1.0)]
    """
    from sklearn.metrics import (
        auc,
        average_precision_score,
        precision_recall_curve,
        roc_curve,
    )

    def one(y, s, name):
        if len(np.unique(y)) < 2:
            return None
        if which == "roc":
            fpr, tpr, _ = roc_curve(y, s)
            return {"name": name, "x": fpr, "y": tpr, "area": float(auc(fpr, tpr))}
        prec, rec, _ = precision_recall_curve(y, s)
        return {"name": name, "x": rec, "y": prec, "area": float(average_precision_score(y, s))}

    out = []
    if data.kind == "binary":
        if len(data.folds) > 1:
            for f in data.folds:
                m = data.fold == f
                out.append(one(data.y[m], data.scores[m], f))
        out.append(one(data.y, data.scores, "pooled"))
    else:
        prob = np.exp(data.scores - data.scores.max(axis=1, keepdims=True))
        prob /= prob.sum(axis=1, keepdims=True)
        for c in range(prob.shape[1]):
            name = data.label_names[c] if c < len(data.label_names) else str(c)
            out.append(one((data.y == c).astype(int), prob[:, c], name))
    return [c for c in out if c is not None]


def per_subject_scores(data: RunData, metric: str = "balanced_accuracy") -> dict[str, float]:
    """A test metric per subject, from the pooled predictions.

    Parameters
    ----------
    data : RunData
        From :func:`report_data`.
    metric : str
        A metric name of :func:`neurokit.evaluation.metrics.score` (e.g. ``"balanced_accuracy"``).

    Returns
    -------
    dict of str to float
        Subject → score (NaN when the metric is undefined for that subject's windows), subjects sorted.

    Examples
    --------
    >>> import numpy as np
    >>> data = RunData(report={"test": {"balanced_accuracy": 0.75}}, kind="binary", label_names=["rest", "task"],
    ...                y=np.array([0, 0, 1, 1]), scores=np.array([-1.0, 0.5, 2.0, 1.0]),
    ...                subject=np.array(["s1", "s1", "s2", "s2"]), fold=np.array(["run"] * 4))
    >>> per_subject_scores(data)
    {'s1': 0.5, 's2': 1.0}
    """
    from neurokit.evaluation.metrics import score

    out = {}
    for s in sorted(set(data.subject.tolist())):
        m = data.subject == s
        out[s] = float(score(data.kind, data.y[m], data.scores[m]).get(metric, np.nan))
    return out


def per_fold_scores(data: RunData) -> tuple[str, dict[str, float]]:
    """The score of each fold of a run with folds (MOABB's metric), else the selection metric on the test set.

    Parameters
    ----------
    data : RunData
        From :func:`report_data`.

    Returns
    -------
    metric : str
        The metric's name.
    scores : dict of str to float
        Fold → score (``{"test": score}`` for a single run; NaN where the metric is undefined).

    Examples
    --------
    >>> import numpy as np
    >>> data = RunData(report={"test": {"balanced_accuracy": 0.75}}, kind="binary", label_names=["rest", "task"],
    ...                y=np.array([0, 0, 1, 1]), scores=np.array([-1.0, 0.5, 2.0, 1.0]),
    ...                subject=np.array(["s1", "s1", "s2", "s2"]), fold=np.array(["run"] * 4))
    >>> per_fold_scores(data)
    ('balanced_accuracy', {'test': 0.75})
    """
    rep = data.report
    if "folds" in rep:
        return rep["folds"][0]["score_metric"], {f["fold"]: float(f["score"]) for f in rep["folds"]}
    metric = rep.get("selection_metric", "balanced_accuracy")
    v = rep["test"].get(metric, np.nan)  # None: undefined on this test split (drawn as nothing)
    return metric, {"test": float("nan") if v is None else float(v)}


def plot_report(path: str | Path, out_dir: str | Path, *, dpi: int = 110) -> dict[str, Path]:
    """Draw the figures of a run as PNG files in ``out_dir``.

    Files: ``confusion_matrix.png``, ``roc.png``, ``pr.png`` (classification), ``scores.png`` (per-fold and
    per-subject scores), ``training_curves.png`` (train loss and validation metric per epoch). A comparison
    folder (one that holds ``comparison.json``: from-scratch, seed or label-fraction comparisons) gets its
    label-efficiency curve instead, ``label_efficiency.png`` (:func:`plot_label_efficiency`).

    Parameters
    ----------
    path : str or Path
        A run folder, its ``report.json``, or a comparison folder or its ``comparison.json``.
    out_dir : str or Path
        Folder for the PNG files (created if needed).
    dpi : int
        Resolution of the PNG files, in dots per inch.

    Returns
    -------
    dict of str to Path
        Figure name → the file written.

    Raises
    ------
    FileNotFoundError
        No report, or a run without ``predictions.npz``.
    ConfigError
        ``report.json`` is not valid JSON.

    Examples
    --------
    >>> plot_report("runs/finetune-bcic2a", "runs/finetune-bcic2a/plots")  # doctest: +SKIP
    {'confusion_matrix': PosixPath('runs/finetune-bcic2a/plots/confusion_matrix.png'), ...}
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    cmp = Path(path) / "comparison.json" if Path(path).is_dir() else Path(path)
    if cmp.name == "comparison.json" and cmp.exists():  # a neuro finetune --compare-scratch/--seeds folder
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        return {"label_efficiency": plot_label_efficiency(cmp, Path(out_dir) / "label_efficiency.png", dpi=dpi)}
    data = report_data(path)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rep = data.report
    title = f"{rep.get('card') or ''} {rep.get('task') or ''} — {rep.get('scheme', 'card')}".strip()
    written: dict[str, Path] = {}

    def save(fig, name):
        p = out / f"{name}.png"
        fig.savefig(p, dpi=dpi, bbox_inches="tight")
        plt.close(fig)
        written[name] = p

    if data.kind != "regression":
        save(_draw_confusion(plt, data, title), "confusion_matrix")
        for which, xl, yl in (("roc", "false positive rate", "true positive rate"), ("pr", "recall", "precision")):
            save(_draw_curves(plt, data, which, xl, yl, title), which)
    save(_draw_scores(plt, data, title), "scores")
    if data.curves:
        save(_draw_training(plt, data, title), "training_curves")
    return written


def _draw_confusion(plt, data: RunData, title: str):
    """The confusion matrix figure: counts and fractions of each true class."""
    cm = confusion(data)
    names = data.label_names or [str(i) for i in range(len(cm))]
    fig, ax = plt.subplots(figsize=(1.2 * len(cm) + 2.5, 1.1 * len(cm) + 2))
    rate = cm / np.maximum(cm.sum(axis=1, keepdims=True), 1)
    im = ax.imshow(rate, cmap="Blues", vmin=0, vmax=1)
    for i in range(len(cm)):
        for j in range(len(cm)):
            ax.text(
                j,
                i,
                f"{cm[i, j]}\n{rate[i, j]:.0%}",
                ha="center",
                va="center",
                color="white" if rate[i, j] > 0.5 else "black",
                fontsize=9,
            )
    ax.set_xticks(range(len(cm)), names, rotation=30, ha="right")
    ax.set_yticks(range(len(cm)), names)
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title(f"confusion matrix ({cm.sum()} test samples)\n{title}", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.046, label="fraction of true class")
    return fig


def _draw_curves(plt, data: RunData, which: str, xl: str, yl: str, title: str):
    """The ROC (``which="roc"``) or precision-recall (``"pr"``) figure, pooled and per fold or class."""
    cs = curves(data, which)
    fig, ax = plt.subplots(figsize=(5, 4.5))
    for c in cs:
        pooled = c["name"] == "pooled" or data.kind != "binary" or len(data.folds) == 1
        ax.plot(
            c["x"],
            c["y"],
            lw=2 if pooled else 0.8,
            alpha=1 if pooled else 0.5,
            drawstyle="default" if which == "roc" else "steps-post",  # AP is the step area
            label=f"{c['name']} ({'AUC' if which == 'roc' else 'AP'} {c['area']:.3f})",
        )
    if which == "roc":
        ax.plot([0, 1], [0, 1], "k--", lw=0.8)
    else:
        base = float(np.mean(data.y == 1)) if data.kind == "binary" else None
        if base is not None:
            ax.axhline(base, color="k", ls="--", lw=0.8)
    ax.set(xlabel=xl, ylabel=yl, xlim=(0, 1), ylim=(0, 1.02))
    ax.set_title(f"{'ROC' if which == 'roc' else 'precision-recall'}\n{title}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right" if which == "roc" else "lower left")
    return fig


def _draw_scores(plt, data: RunData, title: str):
    """Bars of the per-fold and per-subject scores, with their mean and chance."""
    metric, folds = per_fold_scores(data)
    subj_metric = "balanced_accuracy" if data.kind != "regression" else "r2"
    subjects = per_subject_scores(data, subj_metric)
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 0.45 * (len(folds) + len(subjects)) + 4), 4))
    for ax, vals, lab in ((axes[0], folds, f"{metric} per fold"), (axes[1], subjects, f"{subj_metric} per subject")):
        v = np.asarray(list(vals.values()), dtype=float)
        ax.bar(range(len(v)), v, color="tab:blue")
        ax.set_xticks(range(len(v)), [k.replace("fold-", "") for k in vals], rotation=60, ha="right", fontsize=7)
        ok = v[np.isfinite(v)]
        if len(ok):
            ax.axhline(ok.mean(), color="tab:red", lw=1.2, label=f"mean {ok.mean():.3f} ± {ok.std():.3f}")
            ax.legend(fontsize=8)
        if data.kind != "regression":
            chance = 0.5 if metric in ("roc_auc", "auroc") or "balanced" in lab else 1 / max(len(data.label_names), 2)
            ax.axhline(chance, color="k", ls="--", lw=0.8)
            ax.set_ylim(0, 1)
        ax.set_title(lab, fontsize=9)
    fig.suptitle(title, fontsize=9)
    return fig


def _draw_training(plt, data: RunData, title: str):
    """Training loss and the validation metric per epoch, one line per run or fold."""
    rep = data.report
    sel = rep.get("selection_metric") or rep.get("folds", [{}])[0].get("selection_metric")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, recs in data.curves.items():
        ep = [r["epoch"] for r in recs]
        axes[0].plot(ep, [r["train_loss"] for r in recs], marker="o", ms=3, lw=1, label=name)
        key = (
            f"val_{sel}"
            if sel and f"val_{sel}" in recs[0]
            else next((k for k in recs[0] if k.startswith("val_")), None)
        )
        if key:
            axes[1].plot(ep, [r[key] for r in recs], marker="o", ms=3, lw=1, label=name)
            axes[1].set_ylabel(key.replace("_", " "))
    from matplotlib.ticker import MaxNLocator

    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set(xlabel="epoch", ylabel="training loss", title="training loss")
    axes[1].set(xlabel="epoch", title="validation")
    if len(data.curves) <= 12:
        axes[1].legend(fontsize=6)
    fig.suptitle(title, fontsize=9)
    return fig


def label_efficiency_data(comparison: dict, metric: str | None = None) -> dict[str, Any]:
    """The numbers of the label-efficiency figure, from a comparison's result (``comparison.json``).

    Parameters
    ----------
    comparison : dict
        :func:`neurokit.pipelines.compare.compare_pretraining`'s result.
    metric : str, optional
        Default the task's selection metric (``comparison["metric"]``).

    Returns
    -------
    dict
        ``metric``, ``fractions`` (float, ascending), ``arms`` (arm → ``{"mean": [...], "std": [...]}``,
        ``nan`` where undefined), ``baselines`` (method → values per fraction) and ``chance`` (float or
        ``None``).

    Examples
    --------
    >>> d = label_efficiency_data({"metric": "auroc", "fractions": ["0.1", "1"], "arms": ["scratch"],
    ...     "summary": {"scratch": {"0.1": {"auroc": {"mean": 0.7, "std": 0.1}}, "1": {"auroc": {"mean": 0.9, "std": 0.0}}}},
    ...     "baselines": {}, "chance": {"auroc": 0.5}})
    >>> d["fractions"], d["arms"]["scratch"]["mean"], d["chance"]
    ([0.1, 1.0], [0.7, 0.9], 0.5)
    """
    metric = metric or comparison["metric"]
    keys = sorted(comparison["fractions"], key=float)
    arms = {}
    for arm in comparison["arms"]:
        by_f = comparison["summary"].get(arm, {})
        st = [by_f.get(k, {}).get(metric) or {} for k in keys]
        arms[arm] = {
            "mean": [float("nan") if s.get("mean") is None else s["mean"] for s in st],
            "std": [float("nan") if s.get("std") is None else s["std"] for s in st],
        }
    names = list(dict.fromkeys(n for k in keys for n in (comparison.get("baselines") or {}).get(k, {})))
    base = {
        n: [
            float("nan") if (v := comparison["baselines"].get(k, {}).get(n, {}).get(metric)) is None else v
            for k in keys
        ]
        for n in names
    }
    chance = (comparison.get("chance") or {}).get(metric)
    return {"metric": metric, "fractions": [float(k) for k in keys], "arms": arms, "baselines": base, "chance": chance}


def plot_label_efficiency(
    path: str | Path | dict, out_png: str | Path, *, metric: str | None = None, dpi: int = 110
) -> Path:
    """Draw the label-efficiency curve: test metric against the fraction of training labels (log x), one line
    per arm with a mean ± std band over seeds (pretrained solid, random-weight arms dashed), the classical
    baselines as thin grey lines and chance as a dotted line.

    Parameters
    ----------
    path : str, Path or dict
        ``comparison.json`` (or the folder holding it), or the result dict itself.
    out_png : str or Path
        The PNG file to write.
    metric : str, optional
        Default the task's selection metric.
    dpi : int
        Resolution of the PNG, in dots per inch.

    Returns
    -------
    Path
        The PNG written.

    Raises
    ------
    FileNotFoundError
        No ``comparison.json`` there.

    Examples
    --------
    >>> plot_label_efficiency("runs/compare", "runs/compare/label_efficiency.png")  # doctest: +SKIP
    PosixPath('runs/compare/label_efficiency.png')
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if isinstance(path, dict):
        comparison = path
    else:
        p = Path(path)
        p = p / "comparison.json" if p.is_dir() else p
        if not p.exists():
            raise FileNotFoundError(
                f"{p}: no comparison (run neuro finetune with compare_scratch=True or seeds= first)"
            )
        comparison = json.loads(p.read_text())
    d = label_efficiency_data(comparison, metric)
    x = np.asarray(d["fractions"])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for arm, st in d["arms"].items():
        m, s = np.asarray(st["mean"]), np.asarray(st["std"])
        style = "-" if arm.startswith("pretrained") or arm == "linear-probe" else "--"
        (line,) = ax.plot(x, m, style, marker="o", label=arm)
        ax.fill_between(x, m - s, m + s, color=line.get_color(), alpha=0.15)
    for n, v in d["baselines"].items():
        ax.plot(x, v, color="0.55", lw=0.8, marker=".", label=n)
    if d["chance"] is not None:
        ax.axhline(d["chance"], color="k", ls=":", lw=1, label="chance")
    ax.set_xscale("log")
    ax.set_xticks(x, [f"{f:.0%}" if f >= 0.01 else f"{f:.1%}" for f in x])
    ax.set_xlabel("fraction of training labels")
    ax.set_ylabel(f"test {d['metric']}")
    n_seeds = len(comparison.get("seeds") or [])
    ax.set_title(f"label efficiency: mean ± std over {n_seeds} seed(s)", fontsize=9)
    # beside the axes: with seven arms and baselines no corner inside is free of curves
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    out = Path(out_png)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return out
