"""Does pretraining help on this data? Pretrained vs from-scratch fine-tuning over seeds and label fractions.

:func:`compare_pretraining` runs every (arm, label fraction, seed) as an ordinary fine-tuning run
(:func:`neurokit.pipelines.finetune.finetune_or_reuse`, so a stopped comparison resumes where it stopped) in
``out/<arm>/frac<F>/seed<S>/``, then writes ``comparison.json`` and ``comparison.csv`` beside them. The arms
are the ways the literature measures what pretraining is worth (CBraMod, LaBraM, BIOT, EEGPT; the Open EEG
Bench's strategies):

- ``pretrained`` (``strategy="full"``) and ``pretrained-<strategy>`` (``frozen``, ``lora``): the ``init``
  weights fine-tuned;
- ``scratch``: the same architecture from random weights, with the same settings, split, seeds and label
  subsets;
- ``eegnet``: EEGNet-8,2 (:mod:`neurokit.models.eegnet`, the compact network BCI papers train as their deep
  baseline) from random weights with its ``flatten`` classifier, wherever ``scratch`` runs, with the same
  optimiser settings, epochs, split, seeds and label subsets; EEG stores only (a surface store's table says
  :data:`EEG_ONLY`);
- ``linear-probe`` and ``linear-probe-random``: a logistic regression on the pooled features of the frozen
  pretrained backbone and of the same backbone at random initial values;

plus the classical baselines and chance once per fraction (on the first seed's subset). Means and standard
deviations are over seeds (sample std, ``ddof=1``; 0 for one seed); a paired difference is taken seed by seed
(the two arms of a seed share the label subset and the seed), with the number of seeds where the first arm
scored higher. The ``verdict`` (:func:`~neurokit.evaluation.comparison.verdicts`) says per pretrained arm and fraction whether it beats the best of
``scratch``, ``eegnet`` and the classical baselines, and in how many seeds.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from neurokit._utils.errors import ConfigError
from neurokit.data.dataset import PatchDataset, open_labelled
from neurokit.data.splits import resolve_splits
from neurokit.evaluation.baselines import METHODS, MI_BAND
from neurokit.evaluation.comparison import (
    finish_comparison,
    training_subset,
    COMPARE_METRICS,
    EEG_ONLY,
    EEGNET,
    PROBE,
    PROBE_RANDOM,
    SCRATCH,
    aggregate,
    frac_key,
    paired_arms,
)
from neurokit.evaluation.metrics import SELECTION
from neurokit.models.eegnet import eegnet_dropout
from neurokit.pipelines.finetune import finetune, finetune_backbone, finetune_or_reuse
from neurokit.training.config import STRATEGIES, FinetuneConfig

logger = logging.getLogger("neurokit")

#: EEGNet's learning rate, the same for every weight: Adam's default, with which Lawhern et al. (2018) trained it
#: (the backbone rate of CBraMod's recipe, 1e-4, leaves it nearly untrained in a few epochs)
EEGNET_LR = 1e-3
#: the fewest epochs the EEGNet arm of a comparison trains for (EEGNet is ~1,000× cheaper per step than CBraMod;
#: at 2 % of Bonn's labels, 2 epochs are 2 optimiser steps: test AUROC 0.43, 10 epochs 0.65, 20 epochs 0.82)
EEGNET_MIN_EPOCHS = 10


def eegnet_config(
    base: FinetuneConfig, split_by: str, *, min_epochs: int = EEGNET_MIN_EPOCHS, **changes: Any
) -> FinetuneConfig:
    """The settings of an EEGNet run beside ``base``: the same batch, weight decay, schedule, seed and split, with
    ``model="eegnet"``, its ``flatten`` classifier, the paper's dropout for the split (:func:`eegnet_dropout`:
    0.25 across subjects, 0.5 within one subject's runs), its authors' learning rate for every weight
    (:data:`EEGNET_LR`) and at least ``min_epochs`` epochs (:data:`EEGNET_MIN_EPOCHS`: the arm a user would train
    instead is trained as its users train it, not with a foundation model's fine-tuning budget);
    ``base.model_kwargs`` (another family's) are dropped; ``changes`` override any field.

    Parameters
    ----------
    base : FinetuneConfig
        The comparison's shared settings.
    split_by : str
        How the data are split (``"subject"``, ``"run"``…), which sets EEGNet's dropout.
    min_epochs : int
        The fewest epochs the EEGNet run trains for.
    **changes
        Fields set last.

    Returns
    -------
    FinetuneConfig

    Examples
    --------
    >>> c = eegnet_config(FinetuneConfig(model_kwargs={"n_layers": 2}, epochs=3), "subject")
    >>> c.model, c.head, c.model_kwargs, c.lr_backbone, c.lr_head, c.epochs
    ('eegnet', 'flatten', {'dropout': 0.25}, 0.001, 0.001, 10)
    """
    fields: dict[str, Any] = {
        "model": "eegnet",
        "model_kwargs": {"dropout": eegnet_dropout(split_by)},
        "head": "flatten",
        "frozen": False,
        "strategy": "full",
        "lr_backbone": EEGNET_LR,
        "lr_head": EEGNET_LR,
        "epochs": max(base.epochs, min_epochs),
    }
    return replace(base, **{**fields, **changes})


def arm_name(strategy: str) -> str:
    """The name of a comparison's arm that fine-tunes the pretrained weights with ``strategy``.

    Parameters
    ----------
    strategy : str
        One of :data:`~neurokit.pipelines.finetune_config.STRATEGIES`.

    Returns
    -------
    str

    Examples
    --------
    >>> arm_name("full"), arm_name("lora"), arm_name("linear-probe")
    ('pretrained', 'pretrained-lora', 'linear-probe')
    """
    return "pretrained" if strategy == "full" else PROBE if strategy == "linear-probe" else f"pretrained-{strategy}"


def comparison_arms(
    strategies: Sequence[str], *, pretrained: bool, scratch: bool, probe: bool, eegnet: bool = False
) -> dict[str, dict]:
    """The arms of a comparison: name → ``{"pretrained": bool, "strategy": str}``, pretrained arms first;
    ``eegnet`` adds the EEGNet arm beside ``scratch`` (``"model": "eegnet"``).

    Parameters
    ----------
    strategies : sequence of str
        Strategies of the pretrained arms.
    pretrained : bool
        Whether there are pretrained weights (``init``).
    scratch, probe, eegnet : bool
        The from-scratch arm, the linear probes, the EEGNet arm.

    Returns
    -------
    dict

    Raises
    ------
    ConfigError
        An unknown strategy, or no arm at all.
    """
    arms: dict[str, dict] = {}
    for st in strategies:
        if st not in STRATEGIES:
            raise ConfigError(f"strategy={st!r}: allowed {', '.join(STRATEGIES)}")
        if pretrained:
            arms[arm_name(st)] = {"pretrained": True, "strategy": st}
    if scratch:
        arms[SCRATCH] = {"pretrained": False, "strategy": "full"}
        if eegnet:
            arms[EEGNET] = {"pretrained": False, "strategy": "full", "model": "eegnet"}
    if probe:
        if pretrained:
            arms[PROBE] = {"pretrained": True, "strategy": "linear-probe"}
        arms[PROBE_RANDOM] = {"pretrained": False, "strategy": "linear-probe"}
    if not arms:
        raise ConfigError("nothing to compare: give init=PATH (pretrained weights) or keep the from-scratch arm")
    return arms


def compare_pretraining(
    stores,
    out: str | Path,
    cfg: FinetuneConfig | None = None,
    *,
    init: str | Path | None,
    seeds: int | Sequence[int] = 3,
    label_fractions: Sequence[float] = (1.0,),
    strategies: Sequence[str] = ("full",),
    scratch: bool = True,
    probe: bool = True,
    eegnet: bool = True,
    overwrite: bool = False,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Fine-tune from ``init`` and from random weights over seeds and label fractions; compare.

    Parameters
    ----------
    stores : path or sequence of paths
        Labelled patch store(s), as for :func:`~neurokit.pipelines.finetune.finetune`.
    out : path
        Folder of the comparison: ``<arm>/frac<F>/seed<S>/`` (one fine-tuning run each), ``comparison.json``
        and ``comparison.csv``.
    cfg : FinetuneConfig
        Settings shared by every run; ``seed``, ``label_fraction`` and ``strategy`` are set per run (a
        ``cfg.frozen`` or ``cfg.strategy`` other than ``full`` is added to ``strategies``).
    init : path or str or None
        Pretrained weights (as ``finetune``'s ``init``); ``None`` runs the random-weight arms only.
    seeds : int or sequence of int
        ``n`` → seeds ``cfg.seed … cfg.seed + n − 1``; or the seeds themselves.
    label_fractions : sequence of float
        Fractions of the training labels, each in ``(0, 1]`` (e.g. ``(0.02, 0.1, 1)``).
    strategies : sequence of str
        Strategies of the pretrained arms (:data:`~neurokit.pipelines.finetune_config.STRATEGIES`).
    scratch, probe : bool
        Also run the ``scratch`` arm; also run the linear probes of the pretrained and the random backbone.
    eegnet : bool
        Run the ``eegnet`` arm wherever ``scratch`` runs (:func:`eegnet_config`); on a store that is not EEG it
        is listed as :data:`EEG_ONLY` (``not_applicable``) and not run.
    overwrite : bool
        Replace sub-runs made with other settings (otherwise they raise :class:`FileExistsError`); sub-runs of
        the same settings are reused either way.
    show_progress : bool
        One progress bar over the runs (also shown when ``cfg.progress``, which shows each run's bar too).

    Returns
    -------
    dict (also ``out/comparison.json``): ``arms``, ``fractions``, ``seeds``, ``kind``, ``label_names``,
    ``metric`` (the task's selection metric), ``runs`` (one row per arm × fraction × seed: test metrics,
    ``None`` where undefined, training windows, subset mode, folder, whether reused), ``summary`` and
    ``differences`` (:func:`~neurokit.evaluation.comparison.aggregate`), ``baselines`` (fraction → method → test metrics), ``chance``,
    ``subsets`` (fraction → seed → the label subset's mode and counts), ``verdict`` (:func:`~neurokit.evaluation.comparison.verdicts`),
    ``not_applicable`` (arm → why it was not run).

    Raises
    ------
    ConfigError
        Bad fractions, seeds or strategies, and whatever a run refuses.
    FileExistsError
        A sub-run folder holds a run of other settings and ``overwrite`` is not given.

    Examples
    --------
    >>> res = compare_pretraining("runs/bonn.h5", "runs/cmp", FinetuneConfig(epochs=5), init="runs/pre/best.pt",
    ...                           seeds=3, label_fractions=(0.02, 0.1, 1))  # doctest: +SKIP
    >>> res["differences"]["pretrained − scratch"]["0.02"]["auroc"]  # doctest: +SKIP
    {'mean': 0.031, 'std': 0.012, 'n': 3, 'better': 3}
    """
    cfg = cfg or FinetuneConfig()
    out = Path(out)
    seed_list = list(range(cfg.seed, cfg.seed + int(seeds))) if isinstance(seeds, (int, np.integer)) else list(seeds)
    if not seed_list or len(set(seed_list)) != len(seed_list):
        raise ConfigError(f"seeds={seeds!r}: give a count >= 1 or distinct seeds")
    fractions = [float(f) for f in label_fractions]
    bad = [f for f in fractions if not 0 < f <= 1]
    if bad or not fractions:
        raise ConfigError(
            f"label_fractions={','.join(f'{f:g}' for f in fractions)}: each must be in (0, 1] (e.g. 0.02,0.1,1)"
        )
    fractions = sorted(dict.fromkeys(fractions))
    strategies = list(dict.fromkeys([*strategies, *([cfg.strategy] if cfg.strategy != "full" else [])]))
    arms = comparison_arms(
        strategies, pretrained=init is not None, scratch=scratch or init is None, probe=probe, eegnet=eegnet
    )
    stores = list(stores) if isinstance(stores, (list, tuple)) else [stores]
    ds_all, label_names, _, kind = open_labelled(stores)
    not_applicable = {EEGNET: EEG_ONLY} if EEGNET in arms and (ds_all.info.modality or "eeg") != "eeg" else {}
    base = replace(cfg, frozen=False, strategy="full")
    random_kw = dict(base.model_kwargs)
    model_name = cfg.model
    if init is not None:  # the random arms get the init checkpoint's architecture
        _, init_info, model_name = finetune_backbone(base, init, PatchDataset(stores))
        random_kw = {**init_info["model_config"], **base.model_kwargs}

    rows, reports, baselines, chance = [], {}, {}, None
    subsets: dict[str, dict] = {}
    confounds = None  # the eye-movement check of the training split (the same for every run)
    from neurokit._utils.progress import progress_bar

    jobs = [
        (f, seed, arm, spec)
        for f in fractions
        for seed in seed_list
        for arm, spec in arms.items()
        if arm not in not_applicable
    ]
    split_by = resolve_splits(ds_all, base.splits)[0] if EEGNET in arms and not not_applicable else "subject"
    done_first: set[float] = set()
    with quiet_runs():  # each run's findings (degenerate predictions) are this comparison's rows
        for f, seed, arm, spec in progress_bar(
            jobs, description=f"compare {Path(str(stores[0])).stem}", enabled=cfg.progress or show_progress
        ):
            fk = frac_key(f)
            first = f not in done_first
            done_first.add(f)
            probe_arm = spec["strategy"] == "linear-probe"
            own: dict[str, Any] = {} if spec["pretrained"] else {"model": model_name, "model_kwargs": random_kw}
            run_cfg = replace(
                base,
                seed=seed,
                label_fraction=f,
                strategy=spec["strategy"],
                baselines=base.baselines and first,
                head="auto" if probe_arm else base.head,
                augment=None if probe_arm else base.augment,
                **own,
            )
            if spec.get("model") == "eegnet":
                run_cfg = eegnet_config(run_cfg, split_by)
            d = out / arm / f"frac{fk}" / f"seed{seed}"
            rep, reused = finetune_or_reuse(
                stores, d, run_cfg, init=init if spec["pretrained"] else None, overwrite=overwrite
            )
            logger.info(
                "%s fraction %s seed %d: %s%s",
                arm,
                fk,
                seed,
                {m: rep["test"].get(m) for m in (SELECTION[kind],)},
                " (reused)" if reused else "",
            )
            reports[(arm, fk, seed)] = rep
            subsets.setdefault(fk, {}).setdefault(str(seed), training_subset(rep))
            rows.append(
                {
                    "arm": arm,
                    "fraction": fk,
                    "seed": seed,
                    "strategy": spec["strategy"],
                    "pretrained": spec["pretrained"],
                    "n_train": rep["n_samples"]["train"],
                    "subset_mode": (rep.get("label_fraction") or {}).get("mode", "all"),
                    **{m: rep["test"].get(m) for m in COMPARE_METRICS if m in rep["test"]},
                    "undefined": rep.get("undefined") or {},
                    "degenerate": rep.get("degenerate"),
                    "dir": str(d),
                    "reused": reused,
                }
            )
            if rep.get("baselines") and fk not in baselines:
                baselines[fk] = {name: r["test"] for name, r in rep["baselines"].items() if "test" in r}
            chance = chance or rep.get("chance")
            confounds = confounds or rep.get("confounds")
    metrics = [m for m in COMPARE_METRICS if any(m in r for r in rows)]
    agg = aggregate(rows, metrics, paired_arms([a for a in arms if a not in not_applicable]))
    result = {
        "init": None if init is None else str(init),
        "kind": kind,
        "label_names": label_names,
        "metric": SELECTION[kind],
        "metrics": metrics,
        "arms": list(arms),
        "fractions": [frac_key(f) for f in fractions],
        "seeds": seed_list,
        "runs": rows,
        **agg,
        "baselines": baselines,
        "chance": chance,
        "subsets": subsets,
        "confounds": confounds,
        "not_applicable": not_applicable,
        "std": "sample standard deviation over seeds (ddof=1; 0 for one seed)",
    }
    return finish_comparison(result, out)


def baseline_with_eegnet(
    stores,
    *,
    methods: Sequence[str] | None = None,
    splits: dict[str, list[str]] | None = None,
    seed: int = 0,
    band: tuple[float, float] | None = MI_BAND,
    epochs: int = 50,
    batch_size: int = 64,
    device: str = "auto",
    out: str | Path | None = None,
    overwrite: bool = False,
    progress: bool = False,
) -> dict[str, Any]:
    """``neuro baseline``: the classical baselines (:func:`neurokit.evaluation.baselines.baseline`) and, when
    ``methods`` names ``eegnet``, EEGNet trained from random weights on the same split by ``neuro finetune``'s run
    (:func:`eegnet_config` of the default :class:`FinetuneConfig`: the same optimiser, best epoch chosen on the
    validation split, ``report.json`` and ``best.pt`` in ``out``).

    Parameters
    ----------
    stores : path or sequence of paths
        Labelled patch store(s).
    methods : sequence of str, optional
        :data:`~neurokit.evaluation.baselines.METHODS` and ``"eegnet"``; default the classical ones that apply.
    splits, seed, band
        As :func:`~neurokit.evaluation.baselines.baseline`.
    epochs, batch_size, device : int, int, str
        EEGNet's training (the fine-tuning defaults: 50 epochs, batch 64).
    out : path, optional
        EEGNet's run folder; default a temporary folder, removed afterwards. A folder that holds a run is
        refused (``FileExistsError``, naming its files) unless ``overwrite``.
    overwrite : bool
        Replace the run in ``out``.
    progress : bool
        EEGNet's progress bar.

    Returns
    -------
    :func:`~neurokit.evaluation.baselines.baseline`'s dict; ``baselines["eegnet"]`` holds ``val`` (the selected
    epoch's validation metrics), ``test``, ``undefined``, ``seconds``, ``best_epoch`` and ``run`` (the folder, or
    ``None`` for a temporary one), or ``{"error": "n/a: EEG only"}`` for a store that is not EEG.

    Raises
    ------
    ConfigError
        An unknown method, and whatever the baselines or the run refuse.

    Examples
    --------
    >>> res = baseline_with_eegnet("lr.h5", methods=["eegnet", "csp_lda"], epochs=20)  # doctest: +SKIP
    >>> res["baselines"]["eegnet"]["test"]["balanced_accuracy"]  # doctest: +SKIP
    """
    import tempfile

    from neurokit.evaluation.baselines import baseline

    wants = list(methods) if methods else None
    unknown = [m for m in wants or () if m not in (*METHODS, EEGNET)]
    if unknown:  # before any store is read; the classical baselines alone do not know eegnet
        raise ConfigError(f"method={unknown[0]!r}: unknown baseline; allowed: {', '.join((*METHODS, EEGNET))}")
    classical = [m for m in wants if m != EEGNET] if wants is not None else None
    res = baseline(stores, methods=classical, splits=splits, seed=seed, band=band)
    if not wants or EEGNET not in wants:
        return res
    stores = list(stores) if isinstance(stores, (list, tuple)) else [stores]
    ds_all = open_labelled(stores)[0]
    if (ds_all.info.modality or "eeg") != "eeg":
        res["baselines"][EEGNET] = {"error": EEG_ONLY}
        return res
    cfg = eegnet_config(
        FinetuneConfig(
            epochs=epochs,
            batch_size=batch_size,
            seed=seed,
            device=device,
            splits=splits,
            progress=progress,
            baselines=False,
            confound_check=False,
        ),
        resolve_splits(ds_all, splits)[0],
        min_epochs=1,  # neuro baseline --epochs is the user's
    )
    with tempfile.TemporaryDirectory(prefix="neurokit-eegnet-") as tmp:
        run = Path(out) if out is not None else Path(tmp) / "eegnet"
        rep = finetune(stores, run, cfg, overwrite=overwrite and out is not None)
    best: dict[str, Any] = next((r for r in rep["history"] if r.get("epoch") == rep["best_epoch"]), {})
    res["baselines"][EEGNET] = {
        "val": {k[4:]: v for k, v in best.items() if k.startswith("val_")},
        "test": rep["test"],
        "undefined": rep.get("undefined") or {},
        "seconds": rep["seconds"],
        "best_epoch": rep["best_epoch"],
        "run": None if out is None else str(out),
    }
    return res


@contextmanager
def quiet_runs():
    """Within: the per-run warnings of fine-tuning (logger ``neurokit.run``: degenerate predictions, a confound)
    are not printed; a comparison reports them in its own rows."""
    lg = logging.getLogger("neurokit.run")
    level = lg.level
    lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        lg.setLevel(level)
