"""``neuro plot-report``, ``plot-contributions`` and ``plot-surface``: figures of runs and stores."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from neurokit.cli.common import console, fail, run_or_exit, setup_logging


# ------------------------------------------------------------------------------------- plot-report
def plot_report(
    report: Path = typer.Argument(
        ..., help="A `neuro finetune` run folder (or its report.json), of one split or of `neuro finetune --scheme`."
    ),
    out: Path = typer.Option(Path("plots"), "--out", "-o", help="Folder for the PNG files."),
) -> None:
    """Draw a run's confusion matrix, ROC and PR curves, per-fold/per-subject scores and training curves."""
    setup_logging(False)
    from neurokit.plotting.report import plot_report as run

    files = run_or_exit(run, report, out)
    for p in files.values():
        console.print(f"[green]wrote[/] {p}")


# ------------------------------------------------------------------------------- plot-contributions
def plot_contributions(
    report: Path = typer.Argument(
        ..., help="report.json of `neuro finetune --head m4oe` (or `neuro evaluate --json`)."
    ),
    out: Path = typer.Option(Path("contributions.png"), "--out", "-o", help="PNG to write."),
) -> None:
    """Draw the modality contributions per task: routing shares and, beside them, the ablation (task loss
    increase when a modality is masked), each as dataset mean and per-sample spread."""
    setup_logging(False)
    from neurokit.plotting import plot_contributions as run

    res = run_or_exit(run, report, out)
    console.print(f"[green]wrote[/] {res}")


# ------------------------------------------------------------------------------------ plot-surface
def plot_surface(
    path: Optional[Path] = typer.Argument(
        None, show_default="none", help="Surface data file (CIFTI-2, GIFTI, MGH/MGZ, curv); not needed with --patches."
    ),
    out: Path = typer.Option(Path("surface.png"), "--out", "-o", help="PNG to write."),
    hemi: Optional[str] = typer.Option(None, show_default="none", help="Hemisphere L or R (required for CIFTI files)."),
    frame: int = typer.Option(0, help="Frame to show."),
    surf_mesh: Optional[Path] = typer.Option(
        None,
        "--surf",
        show_default="none",
        help="Inflated surface of the data's mesh (default: nilearn's fsaverage5 for fsaverage5 data).",
    ),
    patches: Optional[str] = typer.Option(
        None, show_default="none", help="Show this patch grid (e.g. ico2) on the template instead of the data."
    ),
    allow_nan: bool = typer.Option(
        False,
        "--allow-nan",
        show_default="off",
        help="Draw files holding NaN/inf (shown as missing) instead of refusing them.",
    ),
) -> None:
    """Render one frame (or an icosahedral patch map) on the inflated surface and save a PNG."""
    setup_logging(False)
    from neurokit.plotting.surface import patch_map
    from neurokit.plotting.surface import plot_surface as run

    if patches is None and path is None:
        fail(ValueError("give a surface data file, or --patches icoK for a patch map"))
    if patches:
        res = run_or_exit(
            run,
            run_or_exit(patch_map, patches),
            out,
            hemi=hemi,
            title=f"{patches} patches on the ico6 template",
            cmap="tab20",
            symmetric=False,
        )
    else:
        res = run_or_exit(run, path, out, hemi=hemi, frame=frame, surf_mesh=surf_mesh, allow_nan=allow_nan)
    console.print(f"[green]wrote[/] {res}")
