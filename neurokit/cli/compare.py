"""``neuro compare``: several models fine-tuned on one store with the same seeds, label fractions, split and
schedule, beside EEGNet and the best classical baseline (:mod:`neurokit.pipelines.compare_models`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from neurokit.cli import finetune_options as o
from neurokit.cli.common import (
    console,
    option_given,
    parse_fractions,
    parse_splits,
    record_command,
    run_or_exit,
    setup_logging,
)
from neurokit.cli.reports import print_model_comparison

Models = Annotated[
    str,
    typer.Option(
        "--models",
        help="Models to compare, comma-separated: model families ({finetune_models}) and classical (the classical baselines, the best of them on validation), e.g. cbramod,labram,eegnet,classical.",
    ),
]
Inits = Annotated[
    Optional[List[str]],
    typer.Option(
        "--init",
        show_default="none: every model from random weights",
        help="Pretrained weights of one model, MODEL=PATH or MODEL=hub:ORG/NAME (repeat for several); a model without one trains from random weights.",
    ),
]
CompareSeeds = Annotated[int, typer.Option("--seeds", help="Seeds of every model (--seed, --seed+1, ...).")]
CompareFractions = Annotated[
    str, typer.Option("--label-fractions", help="Fractions of the training labels every model learns from, e.g. 0.1,1.")
]
CompareOut = Annotated[
    Path, typer.Option("--out", "-o", help="Output folder: MODEL/fracF/seedS/ runs, comparison.json, comparison.csv.")
]
EegnetMinEpochs = Annotated[
    int,
    typer.Option(
        "--eegnet-min-epochs", help="The fewest epochs EEGNet trains for (its authors' rate needs them; 1: --epochs)."
    ),
]
CompareNLayers = Annotated[
    Optional[int],
    typer.Option(
        show_default="each model's paper size",
        help="Layers of every foundation model trained from random weights (the same depth for each: a small CPU comparison).",
    ),
]
CompareHead = Annotated[
    str,
    typer.Option(
        help="CBraMod's head (the card's: all_patch_reps for the release's datasets; avgpool for a quick run); the other models take their own."
    ),
]

#: ``neuro compare`` options → the FinetuneConfig fields they set (the card does not change a given one)
FIELDS = {
    "epochs": "epochs",
    "batch_size": "batch_size",
    "lr_backbone": "lr_backbone",
    "lr_head": "lr_head",
    "weight_decay": "weight_decay",
    "head": "head",
    "seed": "seed",
    "device": "device",
    "train_subjects": "splits",
    "val_subjects": "splits",
    "test_subjects": "splits",
}


def parse_inits(values: Optional[List[str]]) -> dict[str, str]:
    """``["labram=w.pt", "cbramod=hub:ORG/NAME"]`` → ``{"labram": "w.pt", ...}``; ``--init`` without ``MODEL=``
    is refused (a comparison has several models)."""
    from neurokit._utils.errors import ConfigError

    out: dict[str, str] = {}
    for v in values or []:
        name, sep, path = v.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(f"--init {v}: give MODEL=PATH (e.g. --init cbramod=weights.pth), one per model")
        out[name.strip().lower()] = path.strip()
    return out


def compare(
    ctx: typer.Context,
    stores: o.Stores,
    out: CompareOut = Path("runs/compare"),
    models: Models = "cbramod,eegnet,classical",
    init: Inits = None,
    seeds: CompareSeeds = 3,
    label_fractions: CompareFractions = "1",
    epochs: o.Epochs = 50,
    batch_size: o.BatchSize = 64,
    lr_backbone: o.LrBackbone = 1e-4,
    lr_head: o.LrHead = None,
    weight_decay: o.WeightDecay = 0.05,
    eegnet_min_epochs: EegnetMinEpochs = 10,
    allow_partial_init: o.AllowPartialInit = False,
    n_layers: CompareNLayers = None,
    head: CompareHead = "auto",
    train_subjects: o.TrainSubjects = None,
    val_subjects: o.ValSubjects = None,
    test_subjects: o.TestSubjects = None,
    seed: o.Seed = 0,
    device: o.Device = "auto",
    overwrite: o.Overwrite = False,
    progress: o.Progress = True,
    verbose: o.Verbose = False,
) -> None:
    """Fine-tune several models on one store with the same seeds, label fractions, split and schedule; print them
    beside EEGNet-8,2, the best classical baseline and chance as the quick start does (mean ± std over seeds,
    paired differences, whether each beats the best rival), with the figures the papers report on the dataset.

    The store's card gives the release's settings where options are not given (as neuro finetune). Runs in OUT of
    the same settings are reused; a stopped comparison resumes.
    """
    setup_logging(verbose)
    from neurokit.pipelines.compare_models import compare_models, comparison_settings, depth_kwargs, parse_models

    names = run_or_exit(parse_models, models)
    inits = run_or_exit(parse_inits, init)
    fractions = run_or_exit(parse_fractions, label_fractions)
    splits = parse_splits(train_subjects, val_subjects, test_subjects)
    given = {field for name, field in FIELDS.items() if option_given(ctx, name)}
    cfg, taken = run_or_exit(
        comparison_settings,
        list(stores),
        given,
        epochs=epochs,
        batch_size=batch_size,
        lr_backbone=lr_backbone,
        lr_head=lr_head,
        weight_decay=weight_decay,
        head=head,
        seed=seed,
        device=device,
        splits=splits,
        progress=progress,
    )
    if taken:
        console.print(
            "settings from the store's card (the release's for this dataset; options given override them): "
            + ", ".join(f"{k} {v}" for k, v in taken.items())
        )
    res = run_or_exit(
        compare_models,
        list(stores),
        out,
        cfg,
        models=names,
        init=inits,
        model_kwargs={m: kw for m, kw in depth_kwargs(names, n_layers).items() if m not in inits},
        seeds=seeds,
        label_fractions=fractions,
        eegnet_min_epochs=eegnet_min_epochs,
        allow_partial_init=allow_partial_init,
        overwrite=overwrite,
        show_progress=progress,
    )
    record_command(ctx, out, report="comparison.json")
    print_model_comparison(res, out)
