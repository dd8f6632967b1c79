"""Training settings: :class:`PretrainConfig`, the settings of a pretraining run, and :class:`FinetuneConfig`, the
settings of every fine-tuning run (single-task, evaluation schemes,
comparisons, the M4oE head), the strategies it takes, and the record a run keeps of them
(:func:`finetune_record`). The refusals of settings that do not go together and a card's fine-tuning defaults are
applied by :mod:`neurokit.pipelines.finetune_config`, the layer the CLI and the Python API both go through."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from neurokit._utils.errors import ConfigError
from neurokit.models.checkpoint import check_allow_mismatch
from neurokit.models.heads import HEADS
from neurokit.models.registry import get_model_spec
from neurokit.models.input_norm import check_mode
from neurokit.models.registry import surface_recipe
from neurokit.training.objectives import get_objective
from neurokit.training.optim import READ_ORDERS, OptimConfig, head_lr, optim_given

#: how a fine-tuning run adapts the backbone (:class:`FinetuneConfig` ``strategy``)
STRATEGIES = ("full", "frozen", "linear-probe", "lora")

#: FinetuneConfig fields added after runs were first saved, with the value an older run had
LATER_DEFAULTS = {
    "label_fraction": 1.0,
    "strategy": "full",
    "lora_rank": 8,
    "lora_alpha": 16.0,
    "allow_duplicate_recordings": False,
}


@dataclass
class FinetuneConfig:
    """Fine-tuning settings; defaults are CBraMod's (50 epochs, batch 64, backbone lr 1e-4, head lr
    1e-3·√(batch/256) (:func:`~neurokit.training.optim.head_lr`; 5e-4 at batch 64), weight decay 0.05, cosine to 1e-6, clip 1.0,
    label smoothing 0.1).

    ``frozen``: the backbone's weights are not trained (only the head is). As in the CBraMod release
    (``finetune_trainer.py`` sets ``requires_grad=False`` on the backbone and then calls ``model.train()`` on
    the whole model), the backbone stays in training mode, so its dropout is active while the head trains;
    it is in eval mode for validation and test like the rest of the model.

    ``strategy``: how the backbone is adapted (:data:`STRATEGIES`). ``full`` trains every weight; ``frozen``
    trains the head only (``frozen=True`` is the same, and contradicting it is refused); ``lora`` adds LoRA
    adapters (Hu et al., ICLR 2022) through the ``peft`` library to the backbone's linear layers
    (:data:`~neurokit.models.lora.LORA_TARGETS`; rank ``lora_rank``, scaling ``lora_alpha / lora_rank``, learning rate
    ``lr_backbone``) and trains them with the head, the backbone's own weights fixed; the adapters are merged
    into the weights of ``best.pt``. ``linear-probe`` trains nothing by gradient: a logistic regression
    (ridge for regression) on the frozen backbone's features averaged over tokens, its ``C`` chosen on the
    validation split (:func:`neurokit.evaluation.probe.fit_linear_probe`), stored as an ``avgpool`` head.

    ``label_fraction``: learn from this fraction of the training split's labels, in ``(0, 1]``: a subset
    stratified by class, drawn with ``seed``, whole subjects kept together where the split is by subject and
    enough subjects hold every class, else windows stratified by (class, subject)
    (:func:`neurokit.data.splits.label_fraction_subset`). Validation and test splits stay whole; the report's
    ``label_fraction`` says which subset was taken and its counts.

    ``model``: the model family of a from-scratch backbone; ``None`` (the default) takes the family of the
    ``init`` checkpoint, else ``cbramod``. A family that differs from the ``init`` checkpoint's is refused.

    Attributes
    ----------
    model : str, optional
        Model family of a from-scratch backbone (see above).
    model_kwargs : dict
        Its architecture (e.g. ``{"n_layers": 2}``).
    head : str
        ``"auto"`` (the family's default), ``"avgpool"``, ``"all_patch_reps"`` or ``"flatten"``.
    epochs, batch_size : int
        Training length.
    lr_backbone, lr_head : float
        Learning rates; ``lr_head`` ``None`` becomes ``1e-3·√(batch_size/256)``.
    weight_decay, min_lr, clip_grad, label_smoothing, dropout : float
        AdamW weight decay, the cosine schedule's floor, the gradient-norm clip, multi-class label smoothing in
        ``[0, 1)``, the head's dropout.
    frozen : bool
        Train the head only (see above).
    seed, device, num_workers, progress
        Random seed, ``"auto"``/``"cpu"``/``"cuda[:K]"``, DataLoader workers, a progress bar.
    splits : dict, optional
        Split → subject ids; default the card's.
    baselines, confound_check : bool
        Score the classical baselines on the same split; test the training labels against eye-movement proxies.
    augment : str or dict, optional
        EEG augmentation (:class:`~neurokit.data.augment.AugmentConfig`), stored parsed; off by default.
    allow_partial_init : bool
        Load ``init`` weights that cover only part of the backbone.
    allow_mismatch : list of str, optional
        Data facts (``sfreq``, ``patch``, ``units``) the store may differ in from the ``init`` checkpoint's data.
    allow_duplicate_recordings : bool
        Score a test split that shares a recording (SHA-256) with the training or validation split.
    init_sha256 : str, optional
        The SHA-256 the ``init`` weights file must have.
    label_fraction : float
        Fraction of the training labels learnt from (see above).
    strategy : str
        How the backbone adapts (see above).
    lora_rank, lora_alpha : int, float
        ``strategy="lora"``: the adapters' rank r and scaling ``alpha / r``.

    Raises
    ------
    ConfigError
        Out-of-range values, an unknown head or model, an augmentation that does not parse.
    """

    model: str | None = None  # None: the family of the ``init`` checkpoint, else cbramod
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    head: str = "auto"  # "auto": the model family's default (CBraMod: all_patch_reps; SiT: avgpool)
    epochs: int = 50
    batch_size: int = 64
    lr_backbone: float = 1e-4
    lr_head: float | None = None  # None: 1e-3·√(batch_size/256), the CBraMod release's rule (see __post_init__)
    weight_decay: float = 0.05
    min_lr: float = 1e-6
    clip_grad: float = 1.0
    label_smoothing: float = 0.1
    dropout: float = 0.1
    frozen: bool = False
    seed: int = 0
    device: str = "auto"
    num_workers: int = 0
    progress: bool = True
    splits: dict[str, list[str]] | None = None  # split → subject ids; default from the card
    baselines: bool = True  # score the classical baselines (neurokit.evaluation.baselines) on the same split
    confound_check: bool = True  # test the training labels against eye-movement proxies (evaluation.confounds)
    augment: dict[str, float] | str | None = None  # EEG augmentation (neurokit.data.augment.AugmentConfig); off
    allow_partial_init: bool = False  # load an ``init`` file that covers only part of the backbone
    allow_mismatch: list[str] | str | None = None  # data facts (sfreq, patch, units) the store may differ in from init
    allow_duplicate_recordings: bool = False  # score a test split sharing a recording (SHA-256) with train/val
    init_sha256: str | None = None  # the SHA-256 the ``init`` weights file must have (refused otherwise)
    label_fraction: float = 1.0  # fraction of the training labels learnt from (stratified, seeded)
    strategy: str = "full"  # full | frozen | linear-probe | lora
    lora_rank: int = 8  # strategy="lora": rank r of each adapter
    lora_alpha: float = 16.0  # strategy="lora": adapter scaling alpha / r

    def __post_init__(self) -> None:
        if self.init_sha256 is not None and not re.fullmatch(r"[0-9a-fA-F]{64}", str(self.init_sha256)):
            raise ConfigError(f"init_sha256={self.init_sha256!r}: give the 64 hexadecimal digits of a SHA-256")
        from neurokit.data.augment import AugmentConfig

        aug = AugmentConfig.parse(self.augment)
        self.augment = aug.to_dict() if aug.enabled else None
        if self.epochs < 1 or self.batch_size < 1:
            bad = "epochs" if self.epochs < 1 else "batch_size"
            raise ConfigError(f"{bad}={getattr(self, bad)}: must be >= 1")
        if self.lr_head is None:  # CBraMod release, finetune_trainer.py: 'lr': 0.001*(batch_size/256)**0.5
            self.lr_head = head_lr(self.batch_size)
        if self.head not in HEADS + ("auto",):
            raise ConfigError(
                f"head={self.head!r}: allowed {', '.join(HEADS + ('auto',))} (and m4oe for several tasks at once: "
                "head='m4oe' with task='CARD:TASK')"
            )
        if self.model is not None:
            get_model_spec(self.model)  # ConfigError naming the known families
        if not 0 <= self.label_smoothing < 1:
            raise ConfigError(f"label_smoothing={self.label_smoothing} must be in [0, 1)")
        self.allow_mismatch = check_allow_mismatch(self.allow_mismatch) or None
        self._check_strategy()

    def _check_strategy(self) -> None:
        """``strategy``, ``frozen``, ``label_fraction`` and the LoRA sizes agree; ``frozen`` ⇔ ``strategy="frozen"``."""
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"strategy={self.strategy!r}: allowed {', '.join(STRATEGIES)}")
        if self.frozen and self.strategy not in ("full", "frozen"):
            raise ConfigError(
                f"frozen=True and strategy={self.strategy!r} contradict each other: frozen=True is "
                "strategy='frozen'; give one of them"
            )
        if self.frozen or self.strategy == "frozen":
            self.frozen, self.strategy = True, "frozen"
        if not 0 < self.label_fraction <= 1:
            raise ConfigError(f"label_fraction={self.label_fraction}: must be in (0, 1]")
        if self.lora_rank < 1 or self.lora_alpha <= 0:
            raise ConfigError(f"lora_rank={self.lora_rank}, lora_alpha={self.lora_alpha}: need rank >= 1 and alpha > 0")
        if self.strategy == "linear-probe" and self.head not in ("auto", "avgpool"):
            raise ConfigError(
                f"strategy='linear-probe' reads features averaged over tokens (an avgpool head); "
                f"head={self.head!r} does not apply: give head='avgpool' or leave head at 'auto'"
            )


#: FinetuneConfig fields a resumed run may change (``epochs`` may grow); every other one is checked
RESUME_MAY_CHANGE = ("epochs", "progress", "device", "num_workers", "baselines", "confound_check")


def finetune_record(cfg: FinetuneConfig, *, head: str | None = None, **call: Any) -> dict[str, Any]:
    """The record of a fine-tuning run (:func:`~neurokit.pipelines.outputs.record_run`): ``settings``, every
    field of ``cfg`` and every argument of the call (given or defaulted), and ``resume``, what a resumed run
    must repeat (``checked``: the settings, ``init`` by SHA-256, the store's identity) and may change.

    Parameters
    ----------
    cfg : FinetuneConfig
        The run's settings.
    head : str, optional
        The head, where the call names it (``"m4oe"``).
    **call
        Every argument of the call; ``head_settings`` (names) are the head's settings a resumed run checks.

    Returns
    -------
    dict
        ``{"settings": ..., "resume": {"checked", "may_change", "resumable"}}``.

    Examples
    --------
    >>> finetune_record(FinetuneConfig(epochs=3), scheme="card")["settings"]["epochs"]
    3
    """
    head_settings = sorted(call.pop("head_settings", {}) or {})
    settings = {**asdict(cfg), **({"head": head} if head else {}), **call}
    checked = [f for f in asdict(cfg) if f not in RESUME_MAY_CHANGE] + ["init (SHA-256)", "store identity"]
    return {
        "settings": settings,
        "resume": {
            "checked": checked + [f"head: {k}" for k in head_settings],
            "may_change": list(RESUME_MAY_CHANGE),
            "resumable": call.get("scheme", "card") == "card",
        },
    }


#: evaluation schemes whose fold count (``folds``; :func:`~neurokit.pipelines.finetune.finetune`'s ``n_folds``) sets
FOLDED_SCHEMES = ("kfold-subject", "within-session")


def augment_text(augment: Mapping[str, float] | str | None) -> str:
    """An augmentation as its option text: ``{"noise": 5.0, "p": 0.5}`` → ``"noise=5"`` (the transforms that are on).

    Parameters
    ----------
    augment : dict or str, optional
        :class:`~neurokit.data.augment.AugmentConfig` fields (a string is returned as it is).

    Returns
    -------
    str

    Examples
    --------
    >>> augment_text({"noise": 5.0, "mixup": 0.2, "scale": 0.0, "p": 0.5})
    'noise=5,mixup=0.2'
    """
    if isinstance(augment, str):
        return augment
    return ",".join(f"{k}={v:g}" for k, v in (augment or {}).items() if v and k != "p")


#: the default of ``PretrainConfig.normalize`` for CBraMod, chosen by the measurements in docs/guide/pretraining.md
DEFAULT_NORMALIZE = "corpus"
#: ``model_kwargs`` entries that only some model families take: key → families
FAMILY_OPTIONS: dict[str, tuple[str, ...]] = {
    "size": ("sit", "clip"),
    "mask_ratio": ("sit",),
    "recipe": ("sit",),
    "stimuli": ("clip",),
    "lag_s": ("clip",),
    "segments": ("clip",),
    "fmri_init": ("clip",),
    "train_fmri_encoder": ("clip",),
}


def setting_text(name: str, value: Any) -> str:
    """``name=value`` as a message names a setting (a list as its items joined by commas); the CLI says it as its flag.

    Parameters
    ----------
    name : str
        The setting's (parameter's) name.
    value : object
        Its value.

    Returns
    -------
    str

    Examples
    --------
    >>> setting_text("subjects", ["S001", "S002"])
    "subjects='S001,S002'"
    """
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return f"{name}={value!r}"


@dataclass
class PretrainConfig:
    """Pretraining settings (defaults: CBraMod's, except the epoch count).

    ``max_steps`` caps the total number of optimiser steps (the cosine schedule spans
    ``min(max_steps, epochs × batches per epoch)``). ``split``: which split of the store's data card to
    train on (``"train"``, the default, keeps the validation and test subjects unseen; ``"all"`` or
    ``None`` uses every subject; stores whose card defines no splits always use every subject);
    ``subjects`` overrides it. ``ckpt_every``: also write ``last.pt`` every this many steps. ``optim``: an
    :class:`OptimConfig`, or a dict of the fields to set; the fields not set take the model family's reference values
    (:attr:`Objective.optim <neurokit.training.objectives.Objective>`: ``sit`` AdamW 3e-4, weight decay
    0.01, constant learning rate, no clipping; ``cbramod`` the :class:`OptimConfig` defaults). Setting
    ``min_lr`` without ``schedule`` asks for the cosine schedule.

    ``normalize`` (CBraMod): amplitude normalisation of the input, ``"none"``, ``"window"``, ``"channel"`` or
    ``"corpus"`` (:mod:`neurokit.models.input_norm`; default :data:`DEFAULT_NORMALIZE`); recorded in the model's
    configuration, so fine-tuning and evaluation of a model started from the checkpoint normalise the same way (``"corpus"``: by the RMS of the
    downstream store's training windows). ``val_fraction``: the share of the selected windows held out to log,
    at each epoch, the masked reconstruction loss beside the predict-zero and predict-mean baselines (whole
    subjects of each corpus when it has at least :data:`~neurokit.data.selection.MIN_HOLDOUT_SUBJECTS`, else a
    seeded share of its windows; 0: none). ``heldout_subjects``: hold out exactly these subjects instead (they must be among the selected
    ones; ``val_fraction`` is then unused), e.g. the card's validation and test subjects with ``split="all"``.
    ``max_windows``: at most this many of the selected windows of each sample layout (drawn at random, seeded),
    before the held-out ones are set apart. Stores of different layouts (channel sets, patch counts) train side by
    side, one layout per batch (:func:`~neurokit.data.selection.select_layouts`). ``layout_repeats``: store file
    name (or path) → how many times each epoch goes through the training windows of that store's layout (default once), so a small multi-channel
    layout pooled with a large single-channel one gets enough steps (the quick start's EEGMMIDB store:
    docs/guide/pretraining.md).

    ``read_order``: the order windows are read in each epoch (:class:`~neurokit.training.optim.EpochSampler`):
    ``"random"`` (the default: each window anywhere in the store) or ``"block"`` (contiguous blocks of 64 windows in a
    random order, mixed through a shuffle buffer of 8 blocks: reads stay within a few blocks of the file, for a store
    larger than the page cache; a batch of 16 30-s windows then spans about 8 blocks instead of 16 places). Both
    take every window once per epoch and resume exactly part-way through one; keep the order of a run when resuming
    it in the middle of an epoch.

    Raises
    ------
    ConfigError
        Out-of-range values, an unknown ``model`` or ``normalize``, ``normalize`` for another family than
        CBraMod, a ``model_kwargs`` entry of another family
        (:data:`FAMILY_OPTIONS`: ``size`` for SiT/CLIP, ``mask_ratio`` for SiT, ``stimuli``/``lag_s``/``segments``
        for CLIP), ``min_lr`` with the constant schedule.
    """

    model: str = "cbramod"
    model_kwargs: dict[str, Any] = field(default_factory=dict)
    epochs: int = 40
    max_steps: int | None = None
    batch_size: int = 128
    optim: OptimConfig | dict | None = None
    seed: int = 0
    num_workers: int = 0
    device: str = "auto"
    ckpt_every: int = 0
    subjects: list[str] | None = None
    split: str | None = "train"
    progress: bool = True
    normalize: str | None = None  # None: DEFAULT_NORMALIZE for cbramod, "none" for the other families
    val_fraction: float = 0.1
    heldout_subjects: list[str] | None = None
    max_windows: int | None = None
    layout_repeats: dict[str, int] | None = None
    heldout_own_scale: bool = False
    read_order: str = "random"

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1:
            bad = "epochs" if self.epochs < 1 else "batch_size"
            raise ConfigError(f"{bad}={getattr(self, bad)}: must be >= 1")
        if self.read_order not in READ_ORDERS:
            raise ConfigError(f"read_order={self.read_order!r}; allowed: {', '.join(READ_ORDERS)}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ConfigError(f"max_steps={self.max_steps}: must be >= 1 when given")
        if self.num_workers < 0:
            raise ConfigError(f"num_workers must be >= 0 (got {self.num_workers})")
        get_objective(self.model)  # ConfigError naming the known families
        for key, families in FAMILY_OPTIONS.items():
            if key in (self.model_kwargs or {}) and self.model not in families:
                raise ConfigError(
                    f"{setting_text(key, self.model_kwargs[key])}: an option of the {'/'.join(families)} model(s); "
                    f"model={self.model!r} has no such setting"
                )
        if "recipe" in (self.model_kwargs or {}):
            surface_recipe(self.model_kwargs["recipe"])  # refused before anything is written
        if not isinstance(self.optim, OptimConfig):
            given = optim_given(self.optim)
            try:
                self.optim = OptimConfig(**{**get_objective(self.model).optim, **given})
            except TypeError as exc:
                raise ConfigError(f"optim: {exc}") from exc
        if self.split not in (None, "all", "train", "val", "test"):
            raise ConfigError(f"split={self.split!r}; allowed: train, val, test, all")
        if self.max_windows is not None and self.max_windows < 2:
            raise ConfigError(f"max_windows={self.max_windows}: must be >= 2 when given")
        if self.ckpt_every < 0:
            raise ConfigError(f"ckpt_every must be >= 0 (got {self.ckpt_every})")
        if self.normalize is None:
            self.normalize = DEFAULT_NORMALIZE if self.model == "cbramod" else "none"
        check_mode(self.normalize, "normalize")
        if self.model != "cbramod" and self.normalize != "none":
            raise ConfigError(
                f"normalize={self.normalize!r}: amplitude normalisation is for model='cbramod' (EEG); "
                f"model={self.model!r} takes normalize='none'"
            )
        if self.heldout_own_scale and self.normalize != "corpus":
            raise ConfigError(
                "heldout_own_scale=True: held-out stores are scaled only under normalize='corpus' (model='cbramod'); "
                f"this run normalises with {self.normalize!r}"
            )
        if not 0.0 <= self.val_fraction < 1.0:
            raise ConfigError(f"val_fraction={self.val_fraction}: must be in [0, 1)")
        for name, k in (self.layout_repeats or {}).items():
            if not isinstance(k, int) or k < 1:
                raise ConfigError(f"layout_repeats[{name!r}]={k!r}: must be an integer >= 1")
