"""Which model, on my data? Several models fine-tuned on one card's store with the same seeds, label fractions,
split and schedule, beside EEGNet and the best classical baseline (``neuro compare``).

:func:`compare_models` runs every (model, label fraction, seed) as an ordinary fine-tuning run
(:func:`neurokit.pipelines.finetune.finetune_or_reuse`: a stopped comparison resumes where it stopped, a run of the
same settings is reused) in ``out/<model>/frac<F>/seed<S>/``, then writes ``comparison.json`` and
``comparison.csv`` beside them, in the format of :func:`~neurokit.pipelines.compare.compare_pretraining`'s (the
quick start's table prints both). The models are the families of the model registry (``cbramod``, ``eegnet`` and
those the registry adds) and ``classical``, the classical baselines
(:mod:`neurokit.evaluation.baselines`), fitted once per label fraction on the first seed's label subset, of which the
one of best *validation* score is reported (:func:`~neurokit.evaluation.comparison.best_classical`).

Every run shares the comparison's settings (epochs, batch, optimiser, schedule, split, seed, label subset); EEGNet
takes its authors' learning rate and at least :data:`~neurokit.pipelines.compare.EEGNET_MIN_EPOCHS` epochs
(:func:`~neurokit.pipelines.compare.eegnet_config`), as in every comparison of neurokit. A foundation model starts
from its ``init`` weights when given, otherwise from random weights (its row says so). The figures the papers
report for the compared models on the card's dataset (the card's ``paper``, with their sources) come with the
result; the paired seed-by-seed difference of each foundation model and EEGNet, and per model and fraction whether
it beats the best of EEGNet and the classical baseline, as the quick start gives them.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

import numpy as np

from neurokit._utils.errors import ConfigError
from neurokit.data.dataset import open_labelled
from neurokit.data.splits import resolve_splits
from neurokit.evaluation.comparison import (
    finish_comparison,
    training_subset,
    CLASSICAL,
    COMPARE_METRICS,
    EEGNET,
    aggregate,
    best_classical,
    frac_key,
)
from neurokit.evaluation.metrics import SELECTION
from neurokit.evaluation.protocol import figures_for, paper_figures
from neurokit.models.eegnet import eegnet_dropout
from neurokit.models.foundation import FOUNDATION_MODELS
from neurokit.models.registry import MODELS, get_model_spec
from neurokit.pipelines.compare import EEGNET_MIN_EPOCHS, eegnet_config, quiet_runs
from neurokit.pipelines.finetune import finetune_or_reuse
from neurokit.training.config import FinetuneConfig

logger = logging.getLogger("neurokit")

#: the models of ``neuro compare`` when none are named
DEFAULT_MODELS = ("cbramod", EEGNET, CLASSICAL)
#: the models whose layer count ``n_layers`` sets: CBraMod and the braindecode foundation models (each translates it
#: to its class's own name, :data:`neurokit.models.foundation.LAYER_ARG`)
DEPTH_MODELS = ("cbramod", *FOUNDATION_MODELS)


def depth_kwargs(models: Sequence[str], n_layers: int | None) -> dict[str, dict]:
    """``model_kwargs`` giving every foundation model of ``models`` ``n_layers`` layers (a small CPU comparison: the
    same depth for each; :data:`DEPTH_MODELS`); EEGNet and ``classical`` have none.

    Examples
    --------
    >>> depth_kwargs(["cbramod", "labram", "eegnet", "classical"], 2)
    {'cbramod': {'n_layers': 2}, 'labram': {'n_layers': 2}}
    >>> depth_kwargs(["cbramod"], None)
    {}
    """
    if n_layers is None:
        return {}
    return {m: {"n_layers": int(n_layers)} for m in models if m in DEPTH_MODELS}


def parse_models(models: str | Sequence[str]) -> list[str]:
    """The models of a comparison, checked: model families of the registry and ``"classical"``, in the order given.

    Parameters
    ----------
    models : str or sequence of str
        ``"cbramod,labram,eegnet,classical"`` or a list of those names (any case).

    Returns
    -------
    list of str
        The names, lower case, each once.

    Raises
    ------
    ConfigError
        An unknown name (the message lists the known ones), or no model to train (``classical`` alone).

    Examples
    --------
    >>> parse_models("CBraMod, eegnet,classical,eegnet")
    ['cbramod', 'eegnet', 'classical']
    """
    names = [str(m).strip().lower() for m in (models.split(",") if isinstance(models, str) else models)]
    names = list(dict.fromkeys(n for n in names if n))
    known = [n for n, spec in MODELS.items() if spec.modality == "eeg"] + [CLASSICAL]
    for n in names:
        if n != CLASSICAL and n not in MODELS:
            raise ConfigError(
                f"models={','.join(names)}: {n!r} is not a model neurokit knows; known: {', '.join(known)}"
            )
    if not [n for n in names if n != CLASSICAL]:
        raise ConfigError(
            f"models={','.join(names) or '(none)'}: name at least one model to fine-tune besides 'classical', "
            "e.g. models='cbramod,eegnet,classical'"
        )
    return names


def model_title(name: str, pretrained: bool) -> str:
    """A comparison row's title: the family's printed name, and ``(random weights)`` for a foundation model that
    starts from none (EEGNet always does: it has no pretrained weights).

    Examples
    --------
    >>> model_title("cbramod", False), model_title("cbramod", True), model_title("eegnet", False)
    ('CBraMod (random weights)', 'CBraMod (pretrained)', 'EEGNet-8,2')
    """
    if name == EEGNET:
        return "EEGNet-8,2"
    title = get_model_spec(name).title or name
    return f"{title} ({'pretrained' if pretrained else 'random weights'})"


def _seeds(first: int, seeds: int | Sequence[int]) -> list[int]:
    out = list(range(first, first + int(seeds))) if isinstance(seeds, (int, np.integer)) else [int(s) for s in seeds]
    if not out or len(set(out)) != len(out):
        raise ConfigError(f"seeds={seeds!r}: give a count >= 1 or distinct seeds")
    return out


def _fractions(label_fractions: Sequence[float]) -> list[float]:
    fractions = [float(f) for f in label_fractions]
    if not fractions or any(not 0 < f <= 1 for f in fractions):
        raise ConfigError(
            f"label_fractions={','.join(f'{f:g}' for f in fractions)}: each must be in (0, 1] (e.g. 0.02,0.1,1)"
        )
    return sorted(dict.fromkeys(fractions))


def compare_models(
    stores,
    out: str | Path,
    cfg: FinetuneConfig | None = None,
    *,
    models: str | Sequence[str] = DEFAULT_MODELS,
    init: Mapping[str, str | Path] | None = None,
    model_kwargs: Mapping[str, dict] | None = None,
    heads: Mapping[str, str] | None = None,
    seeds: int | Sequence[int] = 3,
    label_fractions: Sequence[float] = (1.0,),
    eegnet_min_epochs: int = EEGNET_MIN_EPOCHS,
    allow_partial_init: bool = False,
    overwrite: bool = False,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Fine-tune several models on one store with the same seeds, label fractions, split and schedule; compare
    them, EEGNet and the best classical baseline.

    Parameters
    ----------
    stores : path or sequence of paths
        Labelled patch store(s) of one task, as for :func:`~neurokit.pipelines.finetune.finetune`.
    out : path
        Folder of the comparison: ``<model>/frac<F>/seed<S>/`` (one fine-tuning run each), ``comparison.json`` and
        ``comparison.csv``.
    cfg : FinetuneConfig, optional
        Settings every run shares (epochs, batch size, learning rates, schedule, splits, device); ``seed``,
        ``label_fraction``, ``model`` and ``model_kwargs`` are set per run, ``strategy`` is ``full``.
    models : str or sequence of str
        Model families (``"cbramod"``, ``"eegnet"``, and those the registry knows) and ``"classical"``
        (:func:`parse_models`); e.g. ``"cbramod,labram,eegnet,classical"``.
    init : mapping of str to path, optional
        Model family → pretrained weights (as ``finetune``'s ``init``: a file or ``hub:ORG/NAME``); a family not
        in it starts from random weights.
    model_kwargs : mapping of str to dict, optional
        Model family → its options (``{"cbramod": {"n_layers": 2}}``); ``cfg.model_kwargs`` are not used (they
        belong to one family).
    heads : mapping of str to str, optional
        Model family → fine-tuning head; default ``cfg.head`` for CBraMod (the card's, the release's) and each
        other family's own (``"auto"``); EEGNet always its ``flatten`` classifier.
    seeds : int or sequence of int
        ``n`` → seeds ``cfg.seed … cfg.seed + n − 1``; or the seeds themselves.
    label_fractions : sequence of float
        Fractions of the training labels, each in ``(0, 1]``.
    eegnet_min_epochs : int
        The fewest epochs EEGNet trains for (:data:`~neurokit.pipelines.compare.EEGNET_MIN_EPOCHS`: its authors'
        rate needs them; ``1`` trains it for ``cfg.epochs`` like the others).
    allow_partial_init : bool
        Let the ``init`` weights of a family cover only part of its backbone (as ``finetune``'s; the rest keeps its
        random initial values); families without ``init`` are unaffected.
    overwrite : bool
        Replace sub-runs made with other settings (otherwise they raise :class:`FileExistsError`); sub-runs of the
        same settings are reused either way.
    show_progress : bool
        One progress bar over the runs (also shown when ``cfg.progress``).

    Returns
    -------
    dict (also ``out/comparison.json``)
        As :func:`~neurokit.pipelines.compare.compare_pretraining`'s (``arms``: the trained models, ``runs``: one
        row per model × fraction × seed, ``summary``, ``differences``: each foundation model − EEGNet,
        ``baselines``: fraction → the best classical baseline's test metrics, ``chance``, ``verdict``), plus
        ``compare: "models"``, ``models`` (as given), ``arm_titles``, ``classical`` (fraction → ``best``, the
        metric it was chosen on and every baseline's validation and test metrics), ``contenders`` and ``rivals``
        (who the verdict judges, against whom), ``settings`` (what every run shares) and, where the card gives
        them, ``paper`` / ``paper_metrics`` / ``paper_sources``: the figures the papers report for the compared
        families on this dataset.

    Raises
    ------
    ConfigError
        An unknown model, bad seeds or fractions, and whatever a run refuses.
    FileExistsError
        A sub-run folder holds a run of other settings and ``overwrite`` is not given.

    Examples
    --------
    >>> res = compare_models("runs/mi.h5", "runs/cmp", FinetuneConfig(epochs=5),
    ...                      models="cbramod,labram,eegnet,classical", seeds=3)  # doctest: +SKIP
    >>> res["summary"]["labram"]["1"]["cohen_kappa"]  # doctest: +SKIP
    {'mean': 0.21, 'std': 0.03, 'n': 3}
    """
    cfg = cfg or FinetuneConfig()
    out = Path(out)
    names = parse_models(models)
    seed_list = _seeds(cfg.seed, seeds)
    fractions = _fractions(label_fractions)
    init = {str(k).lower(): v for k, v in (init or {}).items()}
    kwargs = {str(k).lower(): dict(v) for k, v in (model_kwargs or {}).items()}
    heads = {str(k).lower(): v for k, v in (heads or {}).items()}
    trained = [n for n in names if n != CLASSICAL]
    for what, given in (("init", init), ("model_kwargs", kwargs), ("heads", heads)):
        stray = [k for k in given if k not in trained]
        if stray:
            raise ConfigError(f"{what} names {', '.join(map(repr, stray))}, not among models={','.join(names)}")
    if EEGNET in init:
        raise ConfigError("init names 'eegnet': EEGNet has no pretrained weights (it trains from random weights)")
    if allow_partial_init and not init:
        raise ConfigError(
            "allow_partial_init=True lets init weights cover part of a backbone; no model has init weights here"
        )
    stores = list(stores) if isinstance(stores, (list, tuple)) else [stores]
    ds_all, label_names, _, kind = open_labelled(stores)
    modality = ds_all.info.modality or "eeg"
    not_applicable = {
        n: f"n/a: {get_model_spec(n).modality} only" for n in trained if get_model_spec(n).modality != modality
    }
    base = replace(cfg, frozen=False, strategy="full")
    split_by = resolve_splits(ds_all, base.splits)[0]
    arms = trained
    titles = {n: model_title(n, n in init) for n in arms}
    contenders = [n for n in arms if n != EEGNET]

    rows, baselines_all, chance, confounds = [], {}, None, None
    subsets: dict[str, dict] = {}
    adaptations: dict[str, Any] = {}
    from neurokit._utils.progress import progress_bar

    jobs = [(f, seed, n) for f in fractions for seed in seed_list for n in arms if n not in not_applicable]
    done_first: set[float] = set()
    with quiet_runs():  # each run's findings (degenerate predictions) are this comparison's rows
        for f, seed, name in progress_bar(
            jobs, description=f"compare {Path(str(stores[0])).stem}", enabled=cfg.progress or show_progress
        ):
            fk = frac_key(f)
            first = f not in done_first
            done_first.add(f)
            run_cfg = replace(
                base,
                seed=seed,
                label_fraction=f,
                model=name,
                model_kwargs=kwargs.get(name, {}),
                head=heads.get(name, base.head if name == "cbramod" else "auto"),
                baselines=CLASSICAL in names and first,
                allow_partial_init=bool(allow_partial_init and name in init),
            )
            if name == EEGNET:
                run_cfg = eegnet_config(
                    run_cfg,
                    split_by,
                    min_epochs=eegnet_min_epochs,
                    model_kwargs={"dropout": eegnet_dropout(split_by), **kwargs.get(EEGNET, {})},
                )
            d = out / name / f"frac{fk}" / f"seed{seed}"
            rep, reused = finetune_or_reuse(stores, d, run_cfg, init=init.get(name), overwrite=overwrite)
            logger.info("%s fraction %s seed %d: %s%s", name, fk, seed, rep["test"].get(SELECTION[kind]),
                        " (reused)" if reused else "")  # fmt: skip
            subsets.setdefault(fk, {}).setdefault(str(seed), training_subset(rep))
            rows.append(
                {
                    "arm": name,
                    "fraction": fk,
                    "seed": seed,
                    "strategy": "full",
                    "pretrained": name in init,
                    "n_train": rep["n_samples"]["train"],
                    "subset_mode": (rep.get("label_fraction") or {}).get("mode", "all"),
                    **{m: rep["test"].get(m) for m in COMPARE_METRICS if m in rep["test"]},
                    "undefined": rep.get("undefined") or {},
                    "degenerate": rep.get("degenerate"),
                    "epochs": run_cfg.epochs,
                    "dir": str(d),
                    "reused": reused,
                }
            )
            if rep.get("input_adaptation"):  # how the store was fed to the model (its input contract)
                adaptations.setdefault(name, rep["input_adaptation"])
            if rep.get("baselines") and fk not in baselines_all:
                baselines_all[fk] = {n: r for n, r in rep["baselines"].items() if "test" in r}
            chance = chance or rep.get("chance")
            confounds = confounds or rep.get("confounds")
    metric = SELECTION[kind]
    classical, baselines = {}, {}
    for fk, found in baselines_all.items():
        best = best_classical(found, metric)
        classical[fk] = {"best": best, "chosen_on": f"validation {metric}", "all": found}
        if best is not None:
            baselines[fk] = {best: found[best]["test"]}
    metrics = [m for m in COMPARE_METRICS if any(m in r for r in rows)]
    ran = [n for n in arms if n not in not_applicable]
    pairs = [(n, EEGNET) for n in contenders if n in ran and EEGNET in ran]
    agg = aggregate(rows, metrics, pairs)
    figures = figures_for(paper_figures(ds_all.info.card_body or None, ds_all.info.task), trained)
    eegnet_cfg = eegnet_config(base, split_by, min_epochs=eegnet_min_epochs)
    result: dict[str, Any] = {
        "compare": "models",
        "models": names,
        "init": {n: str(p) for n, p in init.items()},
        "kind": kind,
        "label_names": label_names,
        "metric": metric,
        "metrics": metrics,
        "arms": arms,
        "arm_titles": titles,
        "contenders": [n for n in contenders if n in ran],
        "rivals": [EEGNET] if EEGNET in ran else [],
        "fractions": [frac_key(f) for f in fractions],
        "seeds": seed_list,
        "runs": rows,
        **agg,
        "baselines": baselines,
        "classical": classical,
        "chance": chance,
        "subsets": subsets,
        "confounds": confounds,
        "not_applicable": not_applicable,
        "adaptations": adaptations,
        "settings": {
            "split_by": split_by,
            "epochs": base.epochs,
            "eegnet_epochs": eegnet_cfg.epochs if EEGNET in arms else None,
            "batch_size": base.batch_size,
            "lr_backbone": base.lr_backbone,
            "lr_head": base.lr_head,
            "weight_decay": base.weight_decay,
            "min_lr": base.min_lr,
            "schedule": "AdamW, per-step cosine from the learning rate to min_lr",
        },
        "std": "sample standard deviation over seeds (ddof=1; 0 for one seed)",
        **figures,
    }
    return finish_comparison(result, out)


def comparison_settings(
    stores: Sequence[str | Path], given: Collection[str] = (), **settings: Any
) -> tuple[FinetuneConfig, dict[str, Any]]:
    """The settings every run of a model comparison shares: ``settings``, then the store's card's fine-tuning
    protocol (the release's, :func:`~neurokit.pipelines.finetune_config.card_defaults`) for the fields not ``given``.

    Parameters
    ----------
    stores : sequence of paths
        The comparison's store(s).
    given : collection of str
        The :class:`~neurokit.training.config.FinetuneConfig` fields the user set (the card does not change them).
    **settings
        :class:`~neurokit.training.config.FinetuneConfig` fields.

    Returns
    -------
    (FinetuneConfig, dict)
        The settings, and those taken from the card (``{field: value}``).

    Raises
    ------
    ConfigError
        Settings :class:`~neurokit.training.config.FinetuneConfig` refuses; a bad card ``finetune`` block.

    Examples
    --------
    >>> cfg, taken = comparison_settings(["mi.h5"], {"epochs"}, epochs=2)  # doctest: +SKIP
    """
    from neurokit.pipelines.finetune_config import card_defaults

    return card_defaults(FinetuneConfig(**settings), [Path(s) for s in stores], set(given))
