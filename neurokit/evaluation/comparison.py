"""A comparison of fine-tuning arms over seeds and label fractions, as numbers: means and standard deviations per
arm, paired seed-by-seed differences, the verdict against the rivals (from scratch, EEGNet, the classical
baselines), and its CSV (:func:`neurokit.pipelines.compare.compare_pretraining` runs the arms)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Sequence

import numpy as np

#: metrics a comparison aggregates, in the order its tables show them
COMPARE_METRICS = ("balanced_accuracy", "cohen_kappa", "auroc", "auc_pr", "f1_weighted", "pearson_r", "r2", "rmse")
SCRATCH, PROBE, PROBE_RANDOM = "scratch", "linear-probe", "linear-probe-random"
EEGNET = "eegnet"
#: the classical baselines as one contender of a model comparison (the best of them on validation)
CLASSICAL = "classical"
#: what a comparison's table shows for the EEGNet arm of a store that is not EEG
EEG_ONLY = "n/a: EEG only"


#: the arms a pretrained model must beat, besides the classical baselines
RIVALS = (SCRATCH, EEGNET)


def paired_arms(arms: Sequence[str]) -> list[tuple[str, str]]:
    """The (pretrained arm, its random-weight twin) pairs whose seed-by-seed difference is reported, then
    (pretrained arm, ``eegnet``).

    Parameters
    ----------
    arms : sequence of str
        The comparison's arms (``pretrained``, ``pretrained-lora``, ``scratch``, ``eegnet``, …).

    Returns
    -------
    list of (str, str)

    Examples
    --------
    >>> paired_arms(["pretrained", "scratch", "linear-probe", "linear-probe-random"])
    [('pretrained', 'scratch'), ('linear-probe', 'linear-probe-random')]
    """
    pairs = [(a, SCRATCH) for a in arms if a.startswith("pretrained") and SCRATCH in arms]
    pairs += [(a, EEGNET) for a in arms if a.startswith("pretrained") and EEGNET in arms]
    if PROBE in arms and PROBE_RANDOM in arms:
        pairs.append((PROBE, PROBE_RANDOM))
    return pairs


def frac_key(f: float) -> str:
    """A label fraction as a key and folder name part.

    Parameters
    ----------
    f : float
        A fraction of the training labels.

    Returns
    -------
    str

    Examples
    --------
    >>> frac_key(0.02), frac_key(1.0)
    ('0.02', '1')
    """
    return f"{float(f):g}"


def aggregate(rows: Sequence[dict], metrics: Sequence[str], pairs: Sequence[tuple[str, str]] = ()) -> dict:
    """Mean ± std per arm and fraction, and paired differences, from per-run rows.

    Parameters
    ----------
    rows : sequence of dict
        One per run: ``arm``, ``fraction`` (str key), ``seed`` and a value (float or ``None`` when undefined)
        per metric.
    metrics : sequence of str
    pairs : sequence of (arm a, arm b)
        Differences ``a − b`` taken over the seeds both arms have a defined value for.

    Returns
    -------
    dict with ``summary[arm][fraction][metric] = {"mean", "std", "n"}`` (``mean``/``std`` ``None`` when no
    seed gave a number) and ``differences["a − b"][fraction][metric] = {"mean", "std", "better", "n"}``
    (``better``: seeds where ``a`` scored higher). ``std`` is the sample standard deviation (``ddof=1``), 0 for
    one seed.

    Examples
    --------
    >>> rows = [{"arm": a, "fraction": "1", "seed": s, "auroc": v} for a, s, v in
    ...         [("p", 0, 0.9), ("p", 1, 0.8), ("s", 0, 0.7), ("s", 1, 0.85)]]
    >>> out = aggregate(rows, ["auroc"], [("p", "s")])
    >>> round(out["differences"]["p − s"]["1"]["auroc"]["mean"], 3), out["differences"]["p − s"]["1"]["auroc"]["better"]
    (0.075, 1)
    """

    def stats(vals):
        v = np.asarray([x for x in vals if x is not None and np.isfinite(x)], dtype=np.float64)
        if not len(v):
            return {"mean": None, "std": None, "n": 0}
        return {"mean": float(v.mean()), "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0, "n": int(len(v))}

    table: dict[tuple, dict] = {}
    for r in rows:
        table[(r["arm"], r["fraction"], r["seed"])] = r
    arms = list(dict.fromkeys(r["arm"] for r in rows))
    fracs = list(dict.fromkeys(r["fraction"] for r in rows))
    summary = {
        a: {
            f: {m: stats([r.get(m) for (aa, ff, _), r in table.items() if aa == a and ff == f]) for m in metrics}
            for f in fracs
            if any(k[:2] == (a, f) for k in table)
        }
        for a in arms
    }
    differences: dict[str, dict] = {}
    for a, b in pairs:
        d = differences.setdefault(f"{a} − {b}", {})
        for f in fracs:
            seeds = [s for (aa, ff, s) in table if aa == a and ff == f and (b, f, s) in table]
            d[f] = {}
            for m in metrics:
                diff = [
                    table[(a, f, s)][m] - table[(b, f, s)][m]
                    for s in seeds
                    if table[(a, f, s)].get(m) is not None and table[(b, f, s)].get(m) is not None
                ]
                st = stats(diff)
                st["better"] = int(sum(x > 0 for x in diff))
                d[f][m] = st
    return {"summary": summary, "differences": differences}


def best_classical(baselines: dict, metric: str) -> str | None:
    """The classical baseline a comparison reports: the one of highest *validation* ``metric`` (chosen as a user
    would choose it, without looking at the test split; the first of equal ones).

    Parameters
    ----------
    baselines : dict
        :func:`~neurokit.evaluation.baselines.run_baselines`' result: name → ``{"val": metrics, "test": metrics}``.
    metric : str
        The metric to choose on (higher is better: the task's selection metric).

    Returns
    -------
    str or None
        The baseline's name; ``None`` when none has a validation and a test score on ``metric``.

    Examples
    --------
    >>> best_classical({"csp_lda": {"val": {"auroc": 0.7}, "test": {"auroc": 0.6}},
    ...                 "riemann_lr": {"val": {"auroc": 0.8}, "test": {"auroc": 0.5}}}, "auroc")
    'riemann_lr'
    """
    scored = {
        n: r["val"][metric]
        for n, r in baselines.items()
        if (r.get("val") or {}).get(metric) is not None and (r.get("test") or {}).get(metric) is not None
    }
    return max(scored, key=lambda n: scored[n]) if scored else None


def verdicts(result: dict, metric: str | None = None) -> dict[str, dict[str, dict]]:
    """Per pretrained arm and label fraction: does it beat the best of ``scratch``, ``eegnet`` and the classical
    baselines on the test ``metric`` (default the task's selection metric; higher is better), and in how many seeds?
    A model comparison (:func:`~neurokit.pipelines.compare_models.compare_models`) names whom it judges and against
    whom: ``result["contenders"]`` (its foundation models) and ``result["rivals"]`` (EEGNet), always beside the
    classical baselines.

    The best rival is the one of highest mean over seeds (a baseline's one value: it is fitted once per fraction).
    A seed counts as better when the pretrained run of that seed scored above the best rival's run of the same
    seed (above the baseline's value when the best is a baseline).

    Parameters
    ----------
    result : dict
        :func:`compare_pretraining`'s result (``runs``, ``summary``, ``baselines``, ``arms``, ``fractions``).
    metric : str, optional

    Returns
    -------
    ``{arm: {fraction: {"metric", "mean", "best", "best_mean", "beats", "better", "n"}}}``: ``best`` the rival's
    name (``None`` when no rival has a number), ``beats`` ``None`` then; ``better`` of ``n`` seeds.

    Examples
    --------
    >>> runs = [{"arm": a, "fraction": "1", "seed": s, "auroc": v} for a, s, v in
    ...         [("pretrained", 0, 0.8), ("pretrained", 1, 0.7), ("scratch", 0, 0.6), ("scratch", 1, 0.75)]]
    >>> res = {"metric": "auroc", "arms": ["pretrained", "scratch"], "fractions": ["1"], "runs": runs,
    ...        "baselines": {"1": {"bandpower_lr": {"auroc": 0.72}}}}
    >>> v = verdicts(res)["pretrained"]["1"]
    >>> v["best"], v["beats"], v["better"], v["n"]
    ('bandpower_lr', True, 1, 2)
    """
    metric = metric or result["metric"]
    by = {(r["arm"], r["fraction"], r["seed"]): r.get(metric) for r in result.get("runs", [])}
    out: dict[str, dict[str, dict]] = {}
    contenders = result.get("contenders")
    if contenders is None:
        contenders = [a for a in result["arms"] if a.startswith("pretrained")]
    rival_arms: Sequence[str] = RIVALS if result.get("rivals") is None else result["rivals"]
    for arm in contenders:
        for f in result["fractions"]:
            mine = {s: v for (a, ff, s), v in by.items() if a == arm and ff == f and v is not None}
            rivals: dict[str, dict] = {}  # name → seed → value (a baseline: the same value for every seed)
            for r in rival_arms:
                vals = {s: v for (a, ff, s), v in by.items() if a == r and ff == f and v is not None}
                if vals:
                    rivals[r] = vals
            for name, ms in (result.get("baselines") or {}).get(f, {}).items():
                if ms.get(metric) is not None:
                    rivals[name] = {s: ms[metric] for s in mine}
            entry: dict[str, Any] = {
                "metric": metric,
                "mean": float(np.mean(list(mine.values()))) if mine else None,
                "best": None,
                "best_mean": None,
                "beats": None,
                "better": 0,
                "n": 0,
            }
            if rivals and mine:
                best = max(rivals, key=lambda n: float(np.mean(list(rivals[n].values()))))
                seeds = [s for s in mine if s in rivals[best]]
                entry.update(
                    best=best,
                    best_mean=float(np.mean(list(rivals[best].values()))),
                    better=int(sum(mine[s] > rivals[best][s] for s in seeds)),
                    n=len(seeds),
                )
                entry["beats"] = bool(entry["mean"] > entry["best_mean"])
            out.setdefault(arm, {})[f] = entry
    return out


def finish_comparison(result: dict, out: str | Path) -> dict:
    """Add the verdicts (:func:`verdicts`) to a comparison's ``result`` and write ``comparison.json`` and
    ``comparison.csv`` (:func:`write_comparison_csv`) into the folder ``out`` (made if missing).

    Parameters
    ----------
    result : dict
        A comparison's result (:func:`~neurokit.pipelines.compare.compare_pretraining`,
        :func:`~neurokit.pipelines.compare_models.compare_models`).
    out : path
        The comparison's folder.

    Returns
    -------
    dict
        ``result``, with its ``verdict``.

    Examples
    --------
    >>> res = finish_comparison(result, "runs/cmp")  # doctest: +SKIP
    """
    result["verdict"] = verdicts(result)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "comparison.json").write_text(json.dumps(result, indent=2, default=float))
    write_comparison_csv(result, out / "comparison.csv")
    return result


def write_comparison_csv(result: dict, path: str | Path) -> Path:
    """``comparison.csv``: one row per arm × fraction × seed, then per arm × fraction the ``mean`` and ``std``
    rows, the paired differences (``mean``, ``std``, ``better`` = seeds better of ``n``), the baselines and
    chance. Undefined metrics are empty cells.

    Parameters
    ----------
    result : dict
        :func:`~neurokit.pipelines.compare.compare_pretraining`'s result.
    path : path
        The file to write.

    Returns
    -------
    Path
        ``path``.
    """
    metrics = result["metrics"]
    path = Path(path)
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["arm", "fraction", "seed", "n_train", "subset_mode", *metrics])

        def cell(v):
            return "" if v is None else f"{v:.6g}" if isinstance(v, float) else v

        for r in result["runs"]:
            w.writerow(
                [r["arm"], r["fraction"], r["seed"], r["n_train"], r["subset_mode"], *(cell(r.get(m)) for m in metrics)]
            )
        for arm, by_f in result["summary"].items():
            for f, ms in by_f.items():
                for stat in ("mean", "std"):
                    w.writerow([arm, f, stat, "", "", *(cell(ms[m][stat]) for m in metrics)])
        for name, by_f in result["differences"].items():
            for f, ms in by_f.items():
                for stat in ("mean", "std", "better"):
                    w.writerow(
                        [
                            name,
                            f,
                            stat,
                            "",
                            "",
                            *(
                                cell(ms[m][stat]) if stat != "better" else f"{ms[m]['better']}/{ms[m]['n']}"
                                for m in metrics
                            ),
                        ]
                    )
        for f, bs in result["baselines"].items():
            for name, ms in bs.items():
                w.writerow([name, f, "", "", "", *(cell(ms.get(m)) for m in metrics)])
        if result.get("chance"):
            w.writerow(["chance", "", "", "", "", *(cell(result["chance"].get(m)) for m in metrics)])
    return path


def training_subset(report: dict[str, Any]) -> dict[str, Any]:
    """What a fine-tuning run's report says of the training samples it used: its label fraction's record (mode,
    counts, classes, subjects), or ``{"mode": "all", "n_train": …}`` when it trained on every labelled sample.

    Parameters
    ----------
    report : dict
        A fine-tuning run's ``report.json`` (``label_fraction``, ``n_samples``).

    Returns
    -------
    dict

    Examples
    --------
    >>> training_subset({"n_samples": {"train": 12}})
    {'mode': 'all', 'n_train': 12}
    """
    sub = report.get("label_fraction") or {}
    if not sub:
        return {"mode": "all", "n_train": report["n_samples"]["train"]}
    return {k: sub.get(k) for k in ("mode", "n_train", "n_train_full", "class_counts", "subjects")}
