"""A dataset's fine-tuning protocol as its data card gives it: the task kind, the metrics the paper reports, the
release's fine-tuning settings and the paper's figures, so that ``neuro finetune`` on the card's store runs with the
release's defaults and prints the user's result beside the paper's.

A card task may hold (``data_cards/tuab.yaml``)::

    kind: binary
    metrics: [balanced_accuracy, auc_pr, auroc]
    finetune: {epochs: 50, batch_size: 64, lr: 1.0e-4, weight_decay: 0.05, dropout: 0.1, label_smoothing: 0.1,
               clip: 1.0, head: all_patch_reps}
    paper: {CBraMod: {balanced_accuracy: 0.8289, auc_pr: 0.9258, auroc: 0.9227}}

Metric names are neurokit's (:mod:`neurokit.evaluation.metrics`); the usual spellings ``pr_auc``, ``roc_auc``,
``weighted_f1``, ``kappa``, ``bac`` are read as them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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

    Examples
    --------
    >>> Protocol().empty, Protocol(kind="binary").empty
    (True, False)
    """

    kind: str | None = None
    metrics: list[str] = field(default_factory=list)
    finetune: dict[str, Any] = field(default_factory=dict)  # FinetuneConfig field → value
    paper: dict[str, dict[str, float]] = field(default_factory=dict)  # model → metric → figure

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
        allowed ones), or paper figures that are not numbers.

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
    for model, figs in (t.get("paper") or {}).items():
        try:
            paper[str(model)] = {metric_name(m): float(v) for m, v in (figs or {}).items()}
        except (TypeError, ValueError) as exc:
            raise CardError(f"{where}: paper figures of {model!r} must be numbers ({exc})") from None
    return Protocol(kind=kind, metrics=[metric_name(m) for m in t.get("metrics") or []], finetune=ft, paper=paper)


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
        ``{"paper": {model: {metric: figure}}, "paper_metrics": [...]}``, or ``{}`` when the card gives none or
        cannot be read (a card body another version wrote: no figures rather than no report).

    Examples
    --------
    >>> paper_figures(None, None)
    {}
    """
    try:
        p = card_protocol(card_body, task)
    except Exception:  # a card body another version wrote: no figures rather than no report
        return {}
    return {"paper": p.paper, "paper_metrics": p.metrics} if p.paper else {}
