"""``neuro quickstart``: the README's first command."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from neurokit.cli.common import console, run_or_exit, setup_logging
from neurokit.cli.reports import comparison_table


# -------------------------------------------------------------------------------------- quickstart
def quickstart(
    data_root: Path = typer.Option(..., "--data-root", envvar="NEUROKIT_DATA", help="Folder holding bonn/ and MNE-eegbci-data/ (../shared/data/eeg)."),
    out: Path = typer.Option(Path("runs/quickstart"), "--out", "-o", help="Output folder (prepared stores in it are reused)."),
    pretrain_epochs: int = typer.Option(1, help="Pretraining epochs."),
    finetune_epochs: Optional[int] = typer.Option(None, show_default="2 Bonn, 3 imagery", help="Fine-tuning epochs of every task."),
    n_layers: int = typer.Option(2, help="CBraMod layers (paper: 12; small for a CPU demo)."),
    channels: str = typer.Option("sensorimotor", help="EEGMMIDB channels: a card channel set (sensorimotor: 21) or 'C3,Cz,C4'."),
    batch_size: int = typer.Option(32, help="Batch size for both stages."),
    seed: int = typer.Option(0, help="Random seed."),
    device: str = typer.Option("auto", help="auto, cpu, cuda."),
    overwrite: bool = typer.Option(False, "--overwrite", show_default="off", help="Start every stage again (default: reuse or resume the stages in OUT that match)."),
) -> None:
    """prepare → pretrain CBraMod on pooled training EEG → fine-tune Bonn seizure detection and EEGMMIDB
    left- vs right-fist imagery; print CBraMod, the classical baselines and chance per task.

    A small configuration (2 layers, few epochs) that runs on 2 CPU cores in a few minutes. Run again, it
    reuses the store and the runs in OUT that match the settings (and rebuilds a store that does not).
    """
    setup_logging(False)
    from neurokit.pipelines.quickstart import run_quickstart

    res = run_or_exit(run_quickstart, data_root, out, pretrain_epochs=pretrain_epochs, finetune_epochs=finetune_epochs,
               n_layers=n_layers, channels=channels, batch_size=batch_size, seed=seed, device=device, overwrite=overwrite,
               say=console.print)
    console.print(comparison_table("quick start: test split per task (held-out subjects / segments)", res["tasks"]))
    for task, rep in res["tasks"].items():
        if rep.get("degenerate"):
            console.print(f"[bold yellow]not a result:[/] {task}: {rep['degenerate']}")
    console.print(f"total {res['seconds']:.0f} s; reports under {out}")
