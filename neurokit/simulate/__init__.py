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
    """Render a procedural movie and simulate the fMRI of watching it, into one folder.

    ``out_dir`` receives ``movie_run-<run>.mkv``, ``movie_run-<run>.clips.json``, one
    ``sub-simNN_task-movie_run-<run>_bold.dtseries.nii`` per subject, the S1200 spheres and ``simulation.json``:
    what the ``simulated_movie`` card reads.

    Parameters
    ----------
    out_dir : str or Path
        Output folder (created if needed).
    surface_dir : str or Path
        Folder with the HCP S1200 fs_LR 32k files (spheres, midthickness surfaces and
        ``S1200.sulc_MSMAll.32k_fs_LR.dscalar.nii``).
    settings : FMRISimulation, optional
        Simulation settings; default ``FMRISimulation()`` (6 subjects, TR 1 s, SNR 0.5, 6-s lag).
    layout : MovieLayout, optional
        Clip and rest timing of the movie; default :func:`movie_layout` ``()``.
    fps : int
        Movie frames per second.
    size : int
        Frame height and width, in pixels.
    video_encoder, audio_encoder : str
        Stimulus towers whose features drive the simulated cortex (:mod:`neurokit.stimuli.encoders`).
    progress : bool
        Show a progress bar while the movie is embedded.

    Returns
    -------
    dict
        ``{"movie": Path, "clips": Path, "fmri": list of Path, "settings": FMRISimulation}``.

    Raises
    ------
    DataFileError
        A file of ``surface_dir`` is missing or not of its format.

    Examples
    --------
    >>> files = simulate_movie_dataset("sim", "S1200")  # doctest: +SKIP
    >>> len(files["fmri"])  # doctest: +SKIP
    6
    """
    cfg = settings or FMRISimulation()
    out = Path(out_dir)
    movie, clips = make_movie(out / f"movie_run-{cfg.run}.mkv", layout, fps=fps, size=size, seed=cfg.seed)
    paths = simulate_fmri(
        movie, out, surface_dir, cfg, video_encoder=video_encoder, audio_encoder=audio_encoder, progress=progress
    )
    return {"movie": movie, "clips": clips, "fmri": paths, "settings": cfg}


__all__ = ["FMRISimulation", "MovieLayout", "make_movie", "movie_layout", "simulate_fmri", "simulate_movie_dataset"]
