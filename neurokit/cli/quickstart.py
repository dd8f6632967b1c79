"""``neuro quickstart``: the README's first command."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from neurokit.cli.common import cli_words, console, parse_fractions, run_or_exit, setup_logging
from neurokit.cli.reports import print_comparison


# -------------------------------------------------------------------------------------- quickstart
def quickstart(
    data_root: Path = typer.Option(
        ...,
        "--data-root",
        envvar="NEUROKIT_DATA",
        help="Folder holding bonn/ and MNE-eegbci-data/ (../shared/data/eeg).",
    ),
    out: Path = typer.Option(
        Path("runs/quickstart"), "--out", "-o", help="Output folder (prepared stores in it are reused)."
    ),
    pretrain_epochs: int = typer.Option(3, help="Pretraining epochs."),
    finetune_epochs: Optional[int] = typer.Option(
        None, show_default="2 Bonn, 3 imagery", help="Fine-tuning epochs of every task."
    ),
    n_layers: int = typer.Option(2, help="CBraMod layers (paper: 12; small for a CPU demo)."),
    channels: str = typer.Option(
        "sensorimotor", help="EEGMMIDB channels: a card channel set (sensorimotor: 21) or 'C3,Cz,C4'."
    ),
    batch_size: int = typer.Option(32, help="Batch size for both stages."),
    seed: int = typer.Option(0, help="First random seed."),
    seeds: int = typer.Option(
        3, help="Seeds of every arm (pretrained, from scratch, linear probes): mean ± std and paired differences."
    ),
    label_fractions: str = typer.Option(
        "0.02,0.1,1", "--label-fractions", help="Fractions of the training labels every arm is fine-tuned on."
    ),
    max_pool: int = typer.Option(8000, help="Most training windows of each store pretrained on (every channel kept)."),
    device: str = typer.Option("auto", help="auto, cpu, cuda."),
    overwrite: bool = typer.Option(
        False,
        "--overwrite",
        show_default="off",
        help="Start every stage again (default: reuse or resume the stages in OUT that match).",
    ),
) -> None:
    """prepare → pretrain CBraMod on pooled training EEG → fine-tune Bonn seizure detection and EEGMMIDB
    left- vs right-fist imagery from the pretrained weights and from scratch, over seeds and label fractions;
    print both with their difference, EEGNet-8,2 trained the same way, the linear probes, the classical baselines
    and chance, and whether the pretrained model beats the best of them.

    A small configuration (2 layers, few epochs) that runs on 2 CPU cores in a few minutes. Run again, it
    reuses the stores and the runs in OUT that match the settings (and rebuilds a store that does not).
    """
    setup_logging(False)
    from neurokit.pipelines.quickstart import run_quickstart

    fractions = tuple(run_or_exit(parse_fractions, label_fractions))
    res = run_or_exit(
        run_quickstart,
        data_root,
        out,
        pretrain_epochs=pretrain_epochs,
        finetune_epochs=finetune_epochs,
        n_layers=n_layers,
        channels=channels,
        batch_size=batch_size,
        seed=seed,
        seeds=seeds,
        label_fractions=fractions,
        max_pool=max_pool,
        device=device,
        overwrite=overwrite,
        say=lambda line: console.print(cli_words(line)),
    )
    for task, cmp in res["tasks"].items():
        console.print(f"\n[bold]{task}[/] (test split)")
        print_comparison(cmp, out / f"compare_{task.replace(':', '_')}")
        if (cmp.get("confounds") or {}).get("fired"):
            console.print(f"[bold yellow]eye-movement confound:[/] {cmp['confounds']['message']}")
        reused = sum(bool(r.get("reused")) for r in cmp["runs"])
        if reused:
            console.print(f"reused {reused} of {len(cmp['runs'])} runs (same settings, init and data)")
    stages = ", ".join(f"{k} {v:.0f} s" for k, v in (res.get("stage_seconds") or {}).items())
    console.print(f"total {res['seconds']:.0f} s ({stages}); reports under {out}")
