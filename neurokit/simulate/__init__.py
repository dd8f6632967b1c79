"""Simulated movie-watching data for the stimulus-retrieval pipeline (no paired data can be shipped:
the HCP 7T movies need a data-use agreement).

:func:`make_movie` renders a procedural movie with sound; :func:`simulate_fmri` writes per-subject CIFTI-2
dtseries on the real fs_LR 32k cortex from a linear encoding model of the movie's frozen-tower features;
:func:`simulate_movie_dataset` does both into one folder that the ``simulated_movie`` card reads.
"""

from __future__ import annotations

from pathlib import Path

from neurokit.simulate.fmri import FMRISimulation, simulate_fmri
from neurokit.simulate.movie import MovieLayout, make_movie, movie_layout


def simulate_movie_dataset(
    out_dir: str | Path,
    surface_dir: str | Path,
    settings: FMRISimulation | None = None,
    *,
    layout: MovieLayout | None = None,
    fps: int = 8,
    size: int = 64,
    video_encoder: str = "tiny",
    audio_encoder: str = "tiny",
    progress: bool = False,
) -> dict:
    """Movie + simulated fMRI in ``out_dir``: ``movie_run-<run>.mkv``, ``movie_run-<run>.clips.json``,
    ``sub-simNN_task-movie_run-<run>_bold.dtseries.nii``, the S1200 spheres and ``simulation.json``.

    Returns ``{"movie", "clips", "fmri": [paths], "settings"}``.
    """
    cfg = settings or FMRISimulation()
    out = Path(out_dir)
    movie, clips = make_movie(out / f"movie_run-{cfg.run}.mkv", layout, fps=fps, size=size, seed=cfg.seed)
    paths = simulate_fmri(
        movie, out, surface_dir, cfg, video_encoder=video_encoder, audio_encoder=audio_encoder, progress=progress
    )
    return {"movie": movie, "clips": clips, "fmri": paths, "settings": cfg}


__all__ = ["FMRISimulation", "MovieLayout", "make_movie", "movie_layout", "simulate_fmri", "simulate_movie_dataset"]
