"""The options of ``neuro finetune`` (:func:`neurokit.cli.train.finetune`), each a type with its flag(s) and help, so
that the command's signature is one line per option: ``epochs: Epochs = 50``. The defaults stay in the signature.
Each option's parameter has the name of the :func:`neurokit.pipelines.finetune_plan.plan_finetune` parameter (or
:class:`~neurokit.training.config.FinetuneConfig` field) it sets."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

Stores = Annotated[List[Path], typer.Argument(help="Labelled patch store(s).")]
Out = Annotated[Path, typer.Option("--out", "-o", help="Output folder (best.pt, last.pt, report.json).")]
Init = Annotated[
    Optional[str],
    typer.Option(
        show_default="none",
        help="`neuro pretrain` checkpoint, released CBraMod state_dict, or Hub weights hub:ORG/NAME[@REVISION] (e.g. hub:weighting666/CBraMod; default: from scratch). Its model family is the run's.",
    ),
]
InitSha256 = Annotated[
    Optional[str],
    typer.Option(
        "--init-sha256",
        show_default="none",
        help="Pin the --init weights: refuse a file whose SHA-256 is not this one (a local file or Hub weights).",
    ),
]
AllowPartialInit = Annotated[
    bool,
    typer.Option(
        "--allow-partial-init",
        show_default="off",
        help="Load an --init file that covers only part of the backbone (the rest stays at random initial values).",
    ),
]
AllowMismatch = Annotated[
    Optional[str],
    typer.Option(
        "--allow-mismatch",
        show_default="none",
        help="Fine-tune a store that differs from the --init checkpoint's pretraining data in these facts anyway: sfreq, patch, units (comma-separated); recorded in the report.",
    ),
]
AllowDuplicateRecordings = Annotated[
    bool,
    typer.Option(
        "--allow-duplicate-recordings",
        show_default="off",
        help="Fine-tune and score although the test split holds a recording (same SHA-256) of the training or validation split; the report says so.",
    ),
]
Model = Annotated[
    Optional[str],
    typer.Option(
        show_default="the --init checkpoint's, else cbramod",
        help="Model family of a from-scratch backbone: {finetune_models}.",
    ),
]
Head = Annotated[
    str,
    typer.Option(
        help="Head: all_patch_reps (flatten all tokens), avgpool, auto (the model's default: all_patch_reps for cbramod, flatten for eegnet, avgpool for sit and the braindecode foundation models), or m4oe (several --task at once)."
    ),
]
Epochs = Annotated[int, typer.Option(help="Epochs (CBraMod: 50).")]
BatchSize = Annotated[int, typer.Option(help="Batch size (CBraMod: 64).")]
LrBackbone = Annotated[float, typer.Option(help="Backbone learning rate.")]
LrHead = Annotated[
    Optional[float], typer.Option(show_default="1e-3·√(batch/256), the CBraMod release's", help="Head learning rate.")
]
WeightDecay = Annotated[float, typer.Option(help="AdamW weight decay.")]
LabelSmoothing = Annotated[float, typer.Option(help="Label smoothing (multi-class).")]
Frozen = Annotated[
    bool,
    typer.Option(
        "--frozen/--no-frozen",
        help="Freeze the backbone weights (only the head trains; its dropout stays on in training, as in the CBraMod release).",
    ),
]
NLayers = Annotated[Optional[int], typer.Option(show_default="none", help="Layers of a from-scratch backbone.")]
TrainSubjects = Annotated[
    Optional[str],
    typer.Option(
        show_default="none",
        help="Override the card's train subjects, e.g. '1-6' (with --val-subjects and --test-subjects; single-task heads, --scheme card).",
    ),
]
ValSubjects = Annotated[
    Optional[str], typer.Option(show_default="none", help="Override the card's validation subjects.")
]
TestSubjects = Annotated[Optional[str], typer.Option(show_default="none", help="Override the card's test subjects.")]
Augment = Annotated[
    Optional[str],
    typer.Option(
        show_default="off",
        help="EEG augmentation, e.g. 'time_shift=0.1,scale=0.1,noise=5,channel_dropout=0.1,freq_shift=1,mixup=0.2,p=0.5' (seconds, fraction, µV, probability, Hz, Beta α, per-transform probability; --head m4oe: all but mixup).",
    ),
]
Plots = Annotated[
    bool,
    typer.Option(
        "--plots",
        show_default="off",
        help="Also draw the report's figures into OUT/plots (see `neuro plot-report`; --head m4oe: the modality contributions).",
    ),
]
Scheme = Annotated[
    str,
    typer.Option(
        help="Evaluation scheme: card (the card's splits), loso (leave one subject out), kfold-subject, cross-session, within-session (single-task heads)."
    ),
]
Folds = Annotated[int, typer.Option(help="k of the kfold-subject and within-session schemes.")]
Seed = Annotated[int, typer.Option(help="Random seed.")]
Device = Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:K.")]
NumWorkers = Annotated[int, typer.Option(help="DataLoader worker processes.")]
Overwrite = Annotated[
    bool,
    typer.Option(
        "--overwrite", show_default="off", help="Replace an earlier run in OUT (its files only; yours there stay)."
    ),
]
Progress = Annotated[bool, typer.Option(help="Show a progress bar.")]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", show_default="off", help="Log each step.")]
Task = Annotated[
    Optional[List[str]],
    typer.Option("--task", show_default="none", help="--head m4oe: a task CARD:TASK (repeatable; one store per task)."),
]
Modality = Annotated[
    Optional[List[str]],
    typer.Option(
        "--modality",
        show_default="the cards' modalities",
        help="--head m4oe: NAME=CH,CH or a card modality NAME (repeatable).",
    ),
]
M4oePreset = Annotated[
    str, typer.Option("--m4oe-preset", help="--head m4oe: expert counts, small (CPU) or paper (32/128/16).")
]
Alpha = Annotated[float, typer.Option(help="--head m4oe: weight of the -α·I(M;E|T) term.")]
FocalGamma = Annotated[
    Optional[float],
    typer.Option(
        "--focal-gamma",
        help="--head m4oe: focal loss γ with α = 1 − training class frequency (release: 2; 0: class-weighted cross-entropy).",
    ),
]
Resume = Annotated[
    bool,
    typer.Option(
        "--resume",
        show_default="off",
        help="Continue the run in OUT from its last.pt (written each epoch) up to --epochs, with the same settings (--scheme card).",
    ),
]
Baselines = Annotated[
    bool, typer.Option("--baselines/--no-baselines", help="Score the classical baselines on the same split.")
]
Strategy = Annotated[
    str,
    typer.Option(
        help="How the backbone adapts: full, frozen (= --frozen), linear-probe (logistic regression on pooled frozen features) or lora (peft adapters + head); with --compare-scratch/--seeds a comma list, e.g. full,lora."
    ),
]
LoraRank = Annotated[int, typer.Option("--lora-rank", help="--strategy lora: adapter rank r.")]
LoraAlpha = Annotated[
    float, typer.Option("--lora-alpha", help="--strategy lora: adapter scaling alpha (update scaled by alpha/r).")
]
CompareScratch = Annotated[
    bool,
    typer.Option(
        "--compare-scratch",
        show_default="off",
        help="Also train the same architecture from random weights and EEGNet-8,2 (same settings, split, seeds, label subsets) and linear probes of both; print pretrained vs scratch vs EEGNet with the differences. Needs --init.",
    ),
]
Seeds = Annotated[
    Optional[int],
    typer.Option(
        "--seeds",
        show_default="1",
        help="Repeat every arm with this many seeds (--seed, --seed+1, ...): mean ± std and paired differences.",
    ),
]
LabelFractions = Annotated[
    Optional[str],
    typer.Option(
        "--label-fractions",
        show_default="1",
        help="Fine-tune on these fractions of the training labels, e.g. 0.02,0.1,1 (stratified by class, seeded, whole subjects where possible).",
    ),
]
Probe = Annotated[
    bool,
    typer.Option(
        "--probe/--no-probe",
        help="With --compare-scratch/--seeds/--label-fractions: also the linear probes of the pretrained and the random backbone.",
    ),
]

#: options the command reads itself (output, logging, figures) or parses before the call (subject lists, fractions)
NOT_PLANNED = (
    "stores",
    "out",
    "verbose",
    "plots",
    "train_subjects",
    "val_subjects",
    "test_subjects",
    "label_fractions",
)
