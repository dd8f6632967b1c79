"""A dataset's fine-tuning protocol as its data card gives it: the task kind, the metrics the paper reports, the
release's fine-tuning settings and the paper's figures, so that ``neuro finetune`` on the card's store runs with the
release's defaults and prints the user's result beside the paper's.

A card task may hold (``data_cards/tuab.yaml``)::

    kind: binary
    metrics: [balanced_accuracy, auc_pr, auroc]
    finetune: {epochs: 50, batch_size: 64, lr: 1.0e-4, weight_decay: 0.05, dropout: 0.1, label_smoothing: 0.1,
               clip: 1.0, head: all_patch_reps}
    paper:
      CBraMod: {balanced_accuracy: 0.8289, auc_pr: 0.9258, auroc: 0.9227,
                source: "CBraMod (Wang et al., ICLR 2025, arXiv 2412.07236), Table 14"}

Each model under ``paper`` names where its figures come from (``source``: the paper and its table); a figure without
a source is refused. Metric names are neurokit's (:mod:`neurokit.evaluation.metrics`); the usual spellings ``pr_auc``, ``roc_auc``,
``weighted_f1``, ``kappa``, ``bac`` are read as them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from neurokit._utils.errors import CardError

#: other spellings of neurokit's metric names
METRIC_ALIASES = {
    "pr_auc": "auc_pr",
    "aucpr": "auc_pr",
    "roc_auc": "auroc",
    "weighted_f1": "f1_weighted",
    "kappa": "cohen_kappa",
    "bac": "balanced_accuracy",
    "balanced_acc": "balanced_accuracy",
    "pearson_r": "pearson_r",
}
#: the key of a card's ``paper`` entry that names where its figures come from (every entry has one)
SOURCE_KEY = "source"
#: a card's ``finetune`` keys → :class:`~neurokit.training.config.FinetuneConfig` fields
FINETUNE_KEYS = {
    "epochs": "epochs",
    "batch_size": "batch_size",
    "lr": "lr_backbone",
    "lr_head": "lr_head",
    "weight_decay": "weight_decay",
    "dropout": "dropout",
    "label_smoothing": "label_smoothing",
    "clip": "clip_grad",
    "head": "head",
    "multi_lr": None,  # the release's separate head rate: neurokit's default rule (lr_head None), recorded only
}
KINDS = ("binary", "multiclass", "regression")


def metric_name(name: str) -> str:
    """neurokit's name of a metric (``"roc_auc"`` → ``"auroc"``).

    Parameters
    ----------
    name : str
        A metric name as a card or a user writes it (any case; aliases of :data:`METRIC_ALIASES`).

    Returns
    -------
    str
        The name :mod:`neurokit.evaluation.metrics` reports it under (lower case; unknown names pass through).

    Examples
    --------
    >>> metric_name("ROC_AUC"), metric_name("kappa"), metric_name("r2")
    ('auroc', 'cohen_kappa', 'r2')
    """
    return METRIC_ALIASES.get(str(name).lower(), str(name).lower())


@dataclass
class Protocol:
    """The fine-tuning protocol of one card task (all fields empty when the card gives none).

    Made by :func:`card_protocol`.

    Attributes
    ----------
    kind : {"binary", "multiclass", "regression"} | None
        The task's kind, when the card gives it.
    metrics : list of str
        The metrics the paper reports, neurokit's names (:func:`metric_name`).
    finetune : dict
        Fine-tuning settings, keyed by :class:`~neurokit.training.config.FinetuneConfig` field
        (:data:`FINETUNE_KEYS`).
    paper : dict of str to dict of str to float
        Model → metric → the paper's figure.
    paper_sources : dict of str to str
        Model → where its figures come from (the paper and its table).

    Examples
    --------
    >>> Protocol().empty, Protocol(kind="binary").empty
    (True, False)
    """

    kind: str | None = None
    metrics: list[str] = field(default_factory=list)
    finetune: dict[str, Any] = field(default_factory=dict)  # FinetuneConfig field → value
    paper: dict[str, dict[str, float]] = field(default_factory=dict)  # model → metric → figure
    paper_sources: dict[str, str] = field(default_factory=dict)  # model → paper and table

    @property
    def empty(self) -> bool:
        return not (self.kind or self.metrics or self.finetune or self.paper)


def card_protocol(card_body: dict | None, task: str | None) -> Protocol:
    """The :class:`Protocol` of ``task`` in a card body (as a store records it).

    Parameters
    ----------
    card_body : dict or None
        The card as parsed (``PatchDataset(...).info.card_body``).
    task : str or None
        The task name (``None``: the card's first).

    Returns
    -------
    Protocol
        The task's protocol; an empty one when the card has no task.

    Raises
    ------
    CardError
        A ``kind`` other than binary/multiclass/regression, a ``finetune`` key neurokit does not know (naming the
        allowed ones), paper figures that are not numbers, or paper figures without a ``source``.

    Examples
    --------
    >>> body = {"name": "x", "tasks": {"t": {"kind": "binary", "finetune": {"lr": 1e-4}, "metrics": ["roc_auc"]}}}
    >>> p = card_protocol(body, "t")
    >>> p.kind, p.metrics, p.finetune
    ('binary', ['auroc'], {'lr_backbone': 0.0001})
    """
    tasks = (card_body or {}).get("tasks") or {}
    if not tasks:
        return Protocol()
    t = tasks.get(task) if task is not None else next(iter(tasks.values()))
    t = t or {}
    where = f"card {(card_body or {}).get('name', '?')!r} task {task!r}"
    kind = t.get("kind")
    if kind is not None and kind not in KINDS:
        raise CardError(f"{where}: kind {kind!r}; allowed: {', '.join(KINDS)}")
    ft: dict[str, Any] = {}
    for k, v in (t.get("finetune") or {}).items():
        if k not in FINETUNE_KEYS:
            raise CardError(f"{where}: finetune key {k!r}; allowed: {', '.join(FINETUNE_KEYS)}")
        field_name = FINETUNE_KEYS[k]
        if field_name:
            ft[field_name] = v
    paper: dict[str, dict[str, float]] = {}
    sources: dict[str, str] = {}
    for model, figs in (t.get("paper") or {}).items():
        figs = dict(figs or {})
        source = figs.pop(SOURCE_KEY, None)
        if not isinstance(source, str) or not source.strip():
            raise CardError(
                f'{where}: paper figures of {model!r} need a source (source: "PAPER, Table N"): a figure printed '
                "beside a run names where it comes from"
            )
        try:
            paper[str(model)] = {metric_name(m): float(v) for m, v in figs.items()}
        except (TypeError, ValueError) as exc:
            raise CardError(f"{where}: paper figures of {model!r} must be numbers ({exc})") from None
        sources[str(model)] = source.strip()
    metrics = [metric_name(m) for m in t.get("metrics") or []]
    return Protocol(kind=kind, metrics=metrics, finetune=ft, paper=paper, paper_sources=sources)


def paper_figures(card_body: dict | None, task: str | None) -> dict[str, Any]:
    """The figures the paper reports for a card task, as a fine-tuning report carries them beside the run's.

    Parameters
    ----------
    card_body : dict, optional
        The store's card (its ``card_body``).
    task : str, optional
        The store's task.

    Returns
    -------
    dict
        ``{"paper": {model: {metric: figure}}, "paper_metrics": [...], "paper_sources": {model: source}}``, or
        ``{}`` when the card gives none or cannot be read (a card body another version wrote: no figures rather than
        no report).

    Examples
    --------
    >>> paper_figures(None, None)
    {}
    """
    try:
        p = card_protocol(card_body, task)
    except Exception:  # a card body another version wrote: no figures rather than no report
        return {}
    return {"paper": p.paper, "paper_metrics": p.metrics, "paper_sources": p.paper_sources} if p.paper else {}


def paper_family(name: str) -> str:
    """The neurokit model family a paper's model name belongs to: the part before the size, lower case.

    Parameters
    ----------
    name : str
        A model as a card's ``paper`` names it (``"LaBraM-Base"``, ``"REVE-Base"``, ``"CBraMod"``).

    Returns
    -------
    str
        The family (``"labram"``), as ``neuro finetune --model`` and ``neuro compare --models`` name it.

    Examples
    --------
    >>> paper_family("LaBraM-Huge"), paper_family("CBraMod"), paper_family("LUNA-Base")
    ('labram', 'cbramod', 'luna')
    """
    return str(name).split("-")[0].strip().lower()


def figures_for(figures: dict[str, Any], families: Sequence[str]) -> dict[str, Any]:
    """The part of :func:`paper_figures` for the model families compared (every size of each: LaBraM-Base and
    LaBraM-Huge for ``labram``), in the order of ``families``.

    Parameters
    ----------
    figures : dict
        :func:`paper_figures`' result.
    families : sequence of str
        Model families (``"cbramod"``, ``"labram"``…); others (``"eegnet"``, ``"classical"``) match nothing.

    Returns
    -------
    dict
        As :func:`paper_figures`, only the models of those families (``{}`` when none has figures).

    Examples
    --------
    >>> figs = {"paper": {"CBraMod": {"auroc": 0.9}, "BIOT": {"auroc": 0.8}}, "paper_metrics": ["auroc"],
    ...         "paper_sources": {"CBraMod": "CBraMod paper, Table 14", "BIOT": "LaBraM paper, Table 1"}}
    >>> figures_for(figs, ["biot", "eegnet"])["paper"]
    {'BIOT': {'auroc': 0.8}}
    """
    paper = figures.get("paper") or {}
    keep = [m for fam in families for m in paper if paper_family(m) == fam]
    if not keep:
        return {}
    sources = figures.get("paper_sources") or {}
    return {
        "paper": {m: paper[m] for m in keep},
        "paper_metrics": list(figures.get("paper_metrics") or []),
        "paper_sources": {m: sources[m] for m in keep if m in sources},
    }
