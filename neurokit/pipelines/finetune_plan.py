"""One fine-tuning request, from options to run: :func:`plan_finetune` builds the settings, refuses what does not
go together, takes the card's fine-tuning defaults where none is set and chooses the pipeline (a single run or an
evaluation scheme, :func:`~neurokit.pipelines.finetune.finetune`; a comparison,
:func:`~neurokit.pipelines.compare.compare_pretraining`; the M4oE head, :func:`~neurokit.pipelines.multitask.finetune_m4oe`);
:func:`run_finetune` runs it. ``neuro finetune`` is these two calls; its options are their parameters, by the same
names."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Collection, Sequence

from neurokit._utils.errors import ConfigError
from neurokit.pipelines.compare import compare_pretraining, quiet_runs
from neurokit.pipelines.finetune import finetune
from neurokit.training.config import FinetuneConfig
from neurokit.pipelines.finetune_config import card_defaults, check_finetune_options
from neurokit.pipelines.multitask import finetune_m4oe

#: parameters that only the M4oE head uses (name → what it does)
M4OE_ONLY = {
    "task": "names the tasks of the multi-task head",
    "modality": "names the M4oE modalities",
    "m4oe_preset": "sizes the M4oE experts",
    "alpha": "weights the M4oE routing term",
    "focal_gamma": "sets the M4oE focal loss",
}

#: the pipelines a plan may choose
PIPELINES = ("finetune", "compare", "m4oe")


@dataclass
class FinetunePlan:
    """A fine-tuning request checked and resolved (:func:`plan_finetune`), ready for :func:`run_finetune`.

    Attributes
    ----------
    pipeline : {"finetune", "compare", "m4oe"}
        What runs: :func:`~neurokit.pipelines.finetune.finetune` (one run on the card's split, or one per fold of
        ``scheme``), :func:`~neurokit.pipelines.compare.compare_pretraining` or
        :func:`~neurokit.pipelines.multitask.finetune_m4oe`.
    stores : list of Path
        The labelled store(s).
    out : Path
        The output folder.
    cfg : FinetuneConfig
        The settings, with the card's defaults taken.
    card_settings : dict
        The settings taken from the store's card (field → value; empty when none).
    call : dict
        The other arguments of the chosen pipeline's call.
    """

    pipeline: str
    stores: list[Path]
    out: Path
    cfg: FinetuneConfig
    card_settings: dict[str, Any] = field(default_factory=dict)
    call: dict[str, Any] = field(default_factory=dict)


def _said(name: str, value: Any) -> str:
    """``name=value`` as a message names a parameter: strings and lists quoted (``task='a:b'``)."""
    if isinstance(value, (list, tuple)):
        value = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return f"{name}={value!r}" if isinstance(value, str) else f"{name}={value}"


def check_compare_options(
    *,
    compare_scratch: bool = False,
    seeds: int | None = None,
    label_fractions: Sequence[float] | None = None,
    init: str | Path | None = None,
    head: str = "auto",
    resume: bool = False,
    scheme: str = "card",
) -> None:
    """Refuse, in one line, what a comparison (``compare_scratch``, ``seeds``, ``label_fractions``) cannot do.

    Parameters
    ----------
    compare_scratch, seeds, label_fractions
        The comparison asked for (:func:`plan_finetune`).
    init : path or str, optional
        The pretrained weights.
    head, resume, scheme
        As :func:`plan_finetune`.

    Raises
    ------
    ConfigError
        ``compare_scratch`` without ``init``; a comparison with the M4oE head, with ``resume`` or with a scheme
        other than ``card``; ``seeds`` below 1.
    """
    asked = ", ".join(
        _said(k, v)
        for k, v in (
            ("compare_scratch", compare_scratch or None),
            ("seeds", seeds),
            ("label_fractions", label_fractions),
        )
        if v is not None
    )
    if compare_scratch and init is None:
        raise ConfigError(
            "compare_scratch=True compares fine-tuning from init weights with training from scratch; give "
            "init=PATH (a pretrain checkpoint or hub:ORG/NAME)"
        )
    if head == "m4oe":
        raise ConfigError(
            f"{asked}: not with head='m4oe' (the multi-task head has one run per task set); use a single-task head"
        )
    if resume:
        raise ConfigError(
            f"resume=True: a comparison ({asked}) resumes by itself: run the same command again and finished "
            "runs are reused"
        )
    if scheme != "card":
        raise ConfigError(f"scheme={scheme!r}: a comparison ({asked}) runs on the card's split; use scheme='card'")
    if seeds is not None and seeds < 1:
        raise ConfigError(f"seeds={seeds}: must be >= 1")


def plan_finetune(
    stores: Sequence[str | Path],
    out: str | Path,
    *,
    head: str = "auto",
    init: str | None = None,
    n_layers: int | None = None,
    scheme: str = "card",
    folds: int = 5,
    resume: bool = False,
    overwrite: bool = False,
    task: Sequence[str] | None = None,
    modality: Sequence[str] | None = None,
    m4oe_preset: str = "small",
    alpha: float = 0.1,
    focal_gamma: float | None = 2.0,
    strategy: str = "full",
    compare_scratch: bool = False,
    seeds: int | None = None,
    label_fractions: Sequence[float] | None = None,
    probe: bool = True,
    given: Collection[str] | None = None,
    **settings: Any,
) -> FinetunePlan:
    """Check a fine-tuning request, take the card's settings where none is set, and choose its pipeline.

    Parameters
    ----------
    stores : sequence of paths
        Labelled patch store(s); with ``head='m4oe'``, one per task.
    out : path
        Output folder.
    head : str
        ``"auto"``, ``"avgpool"``, ``"all_patch_reps"``, ``"flatten"`` or ``"m4oe"`` (several ``task`` at once).
    init : str, optional
        Initial weights (a ``neuro pretrain`` checkpoint, a released state dict or ``hub:ORG/NAME``).
    n_layers : int, optional
        Layers of a from-scratch backbone (``model_kwargs={"n_layers": n}``).
    scheme : str
        Evaluation scheme (``"card"``, ``"loso"``, ``"kfold-subject"``, ``"cross-session"``, ``"within-session"``).
    folds : int
        k of the ``kfold-subject`` and ``within-session`` schemes.
    resume, overwrite : bool
        Continue the run in ``out``; replace it.
    task : sequence of str, optional
        ``head='m4oe'``: the tasks, ``CARD:TASK``.
    modality : sequence of str, optional
        ``head='m4oe'``: ``NAME=CH,CH`` or a card modality ``NAME``.
    m4oe_preset : str
        ``head='m4oe'``: expert counts, ``"small"`` or ``"paper"``.
    alpha : float
        ``head='m4oe'``: weight of the routing term.
    focal_gamma : float, optional
        ``head='m4oe'``: focal loss γ.
    strategy : str
        How the backbone adapts (``full``, ``frozen``, ``linear-probe``, ``lora``); a comparison takes a comma list.
    compare_scratch : bool
        Compare with training from random weights and EEGNet (needs ``init``).
    seeds : int, optional
        Repeat every arm of a comparison with this many seeds.
    label_fractions : sequence of float, optional
        Fractions of the training labels of a comparison.
    probe : bool
        A comparison's linear probes.
    given : collection of str, optional
        The parameters the user set explicitly (``neuro finetune``: the options given, by these names; the
        subject splits as ``"splits"``). Default: those in ``settings``, and the others above that differ from
        their defaults. The card's settings do not replace these, and some refusals (``folds`` without a folded
        scheme, an M4oE-only parameter with another head) look at them.
    **settings
        :class:`~neurokit.training.config.FinetuneConfig` fields (``epochs``, ``batch_size``,
        ``lr_backbone``, ``splits``, ``augment``…).

    Returns
    -------
    FinetunePlan

    Raises
    ------
    ConfigError
        Options that do not go together (:func:`check_compare_options`,
        :func:`~neurokit.pipelines.finetune_config.check_finetune_options`), settings
        :class:`~neurokit.training.config.FinetuneConfig` refuses, a bad card ``finetune`` block.

    Examples
    --------
    >>> plan = plan_finetune(["bonn.h5"], "runs/ft", epochs=5)  # doctest: +SKIP
    >>> report = run_finetune(plan)  # doctest: +SKIP
    """
    paths = [Path(s) for s in stores]
    defaults = {"folds": 5, "m4oe_preset": "small", "alpha": 0.1, "focal_gamma": 2.0, "strategy": "full"}
    defaults.update(head="auto", n_layers=None)
    values = {"folds": folds, "task": task, "modality": modality, "m4oe_preset": m4oe_preset, "alpha": alpha}
    values.update(focal_gamma=focal_gamma, strategy=strategy, head=head, n_layers=n_layers)
    for fraction in label_fractions or []:  # refused here, where the CLI and the Python API both go
        if not 0 < float(fraction) <= 1:
            raise ConfigError(f"label_fractions={fraction!r}: each must be in (0, 1], e.g. 0.02,0.1,1")
    if given is None:
        given = set(settings) | {k for k, v in values.items() if v != defaults.get(k) and v}
    given = set(given)
    compare = compare_scratch or seeds is not None or label_fractions is not None
    strategies = [x.strip() for x in strategy.split(",") if x.strip()] or ["full"]
    if compare:
        check_compare_options(
            compare_scratch=compare_scratch,
            seeds=seeds,
            label_fractions=label_fractions,
            init=init,
            head=head,
            resume=resume,
            scheme=scheme,
        )
    elif len(strategies) > 1:
        raise ConfigError(
            f"strategy={strategy!r}: several strategies are compared with compare_scratch=True or seeds=N; "
            "a single run takes one"
        )
    elif not probe:
        raise ConfigError(
            "probe=False: the linear probes are arms of a comparison (compare_scratch=True, seeds=N, "
            "label_fractions=F); a single run has none"
        )
    if n_layers is not None:
        settings["model_kwargs"] = {**settings.get("model_kwargs", {}), "n_layers": n_layers}
    cfg = FinetuneConfig(
        head="auto" if head == "m4oe" else head, strategy="full" if compare else strategies[0], **settings
    )
    if compare and "lora" in strategies:  # the LoRA sizes apply to the comparison's lora arm
        given -= {"lora_rank", "lora_alpha"}
    if compare and cfg.frozen and "strategy" not in given:
        strategies = ["frozen"]
    if head != "m4oe":
        for name, what in M4OE_ONLY.items():
            if name in given:
                raise ConfigError(f"{_said(name, values[name])}: {what}, so it needs head='m4oe' (got head={head!r})")
    if cfg.init_sha256 and not init:
        raise ConfigError(
            f"init_sha256={cfg.init_sha256!r} pins the weights file of init=PATH: give init=PATH (a file or "
            "hub:ORG/NAME) with it"
        )
    taken: dict[str, Any] = {}
    if head != "m4oe":  # the release's settings for the store's dataset, where the card gives them
        cfg, taken = card_defaults(cfg, paths, given)
    check_finetune_options(
        cfg,
        head=head,
        scheme=scheme,
        n_folds=folds,
        resume=resume,
        overwrite=overwrite,
        given=given,
        init=init,
        stores=paths,
    )
    plan = FinetunePlan("finetune", paths, Path(out), cfg, taken, {"init": init, "overwrite": overwrite})
    if head == "m4oe":
        plan.pipeline = "m4oe"
        m4oe = dict(tasks=list(task or []), preset=m4oe_preset, alpha=alpha, focal_gamma=focal_gamma)
        plan.call.update(m4oe, modalities=modality, baselines=cfg.baselines, resume=resume)
    elif compare:
        plan.pipeline = "compare"
        fractions = list(label_fractions) if label_fractions is not None else [1.0]
        plan.call.update(seeds=seeds or 1, label_fractions=fractions, strategies=strategies)
        plan.call.update(scratch=compare_scratch, probe=probe)
    else:
        plan.call.update(scheme=scheme, n_folds=folds, resume=resume)
    return plan


def run_finetune(plan: FinetunePlan) -> dict[str, Any]:
    """Run a :class:`FinetunePlan`: the call of its pipeline.

    Parameters
    ----------
    plan : FinetunePlan
        From :func:`plan_finetune`.

    Returns
    -------
    dict
        The pipeline's result: a fine-tuning report (with ``folds`` for a scheme other than ``card``), a
        comparison, or an M4oE report.

    Raises
    ------
    ConfigError, FileExistsError, FileNotFoundError
        What the pipeline raises.
    """
    c = plan.call
    if plan.pipeline == "m4oe":
        return finetune_m4oe(
            plan.stores, plan.out, c["tasks"], plan.cfg, **{k: v for k, v in c.items() if k != "tasks"}
        )
    if plan.pipeline == "compare":
        return compare_pretraining(plan.stores, plan.out, plan.cfg, **c)
    # the report says what the run found (a confound, degenerate predictions): not its log too; the folds of a
    # scheme print no such lines, so their log keeps them
    with quiet_runs() if c["scheme"] == "card" else nullcontext():
        return finetune(plan.stores, plan.out, plan.cfg, **c)
