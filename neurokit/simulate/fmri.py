"""Simulated movie-watching fMRI on the real HCP fs_LR 32k cortex, written as CIFTI-2 dense time series.

Model (a linear encoding model, as in voxel-wise encoding studies of naturalistic stimuli):

1. Stimulus features per second ``s``: the frozen video and audio embeddings of the 1-s window starting at
   ``s`` (:func:`~neurokit.stimuli.embed_stimuli` with ``window_s=1``), each z-scored over time and reduced
   by PCA to ``n_video`` + ``n_audio`` unit-variance components ``z(s)``.
2. Encoding maps: for each component and subject, ``sqrt(1 − α)·G + sqrt(α)·U_subject`` with ``G`` shared
   by all subjects and ``U`` the subject's own (``α = subject_var``); both are white noise smoothed along the
   cortical surface (``smooth_iters`` rounds of neighbour averaging on the S1200 midthickness mesh of each
   hemisphere), scaled to unit variance over cortex.
3. BOLD: the components convolved with nilearn's Glover HRF (sampled at the TR) shifted by ``lag_s − 6`` s —
   its sampled peak sits at ``lag_s`` — so the frames ``[t, t+1, t+2]`` carry the stimulus seconds
   ``[t − lag_s, t − lag_s + 3)``: exactly the pairing of the tri-modal paper at its 6-s lag.
4. Noise: Gaussian, white in space and time, at ``snr`` = signal variance / noise variance over cortex
   (a power ratio; default 0.5 = −3 dB per vertex).

Files: ``sub-<id>_task-movie_run-<run>_bold.dtseries.nii`` with the cortex grayordinates of the HCP
template (59,412: the medial wall left out), TR in the series axis; the S1200 spheres are copied beside
them so the ``simulated_movie`` card's ``preprocessing.spheres`` resolve against the same ``--data-root``.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from neurokit._utils.errors import DataFileError

SPHERES = {"L": "S1200.L.sphere.32k_fs_LR.surf.gii", "R": "S1200.R.sphere.32k_fs_LR.surf.gii"}
MIDTHICKNESS = {
    "L": "S1200.L.midthickness_MSMAll.32k_fs_LR.surf.gii",
    "R": "S1200.R.midthickness_MSMAll.32k_fs_LR.surf.gii",
}
CIFTI_TEMPLATE = "S1200.sulc_MSMAll.32k_fs_LR.dscalar.nii"


@dataclass
class FMRISimulation:
    """Settings of :func:`simulate_fmri` (written to ``simulation.json`` beside the files).

    Attributes
    ----------
    n_subjects : int
        Number of simulated subjects (``sub-sim01`` …).
    snr : float
        Signal variance / noise variance over cortex (a power ratio; 0.5 is −3 dB per vertex).
    lag_s : float
        Where the sampled peak of the haemodynamic response sits, in s after the stimulus.
    tr : float
        Repetition time, in s: one fMRI frame per ``tr`` seconds of movie.
    subject_var : float
        Share ``α`` of each encoding map that is the subject's own (the rest is shared by all subjects), 0…1.
    n_video, n_audio : int
        Number of PCA components of the video and audio features that drive the cortex.
    smooth_iters : int
        Rounds of neighbour averaging on the midthickness mesh that make the encoding maps smooth.
    run : str
        Run label in the file names (``…_run-<run>_bold.dtseries.nii``).
    seed : int
        Seed of the random maps and noise.

    Examples
    --------
    >>> FMRISimulation(n_subjects=2, snr=1.0).tr
    1.0
    """

    n_subjects: int = 6
    snr: float = 0.5
    lag_s: float = 6.0
    tr: float = 1.0
    subject_var: float = 0.3
    n_video: int = 12
    n_audio: int = 4
    smooth_iters: int = 30
    run: str = "1"
    seed: int = 0


def surface_smoother(surf_path: Path):
    """Row-normalised neighbour-averaging matrix (each vertex included) of a GIFTI surface's mesh.

    Parameters
    ----------
    surf_path : Path
        A ``.surf.gii`` surface (e.g. the S1200 midthickness of one hemisphere).

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n_vertices, n_vertices), float32
        ``smoother @ x`` replaces each vertex's value by the mean over itself and its mesh neighbours.

    Raises
    ------
    DataFileError
        ``surf_path`` is not a GIFTI surface.

    Examples
    --------
    >>> smoother = surface_smoother(Path("S1200.L.midthickness_MSMAll.32k_fs_LR.surf.gii"))  # doctest: +SKIP
    """
    import nibabel as nib
    import scipy.sparse as sp

    g = nib.load(str(surf_path))
    if not isinstance(g, nib.gifti.GiftiImage):
        raise DataFileError(f"{surf_path}: not a GIFTI surface (.surf.gii)")
    faces = np.asarray(g.agg_data("NIFTI_INTENT_TRIANGLE"), dtype=np.int64)
    n = int(np.asarray(g.agg_data("NIFTI_INTENT_POINTSET")).shape[0])
    i = np.concatenate([faces[:, 0], faces[:, 1], faces[:, 2], np.arange(n)])
    j = np.concatenate([faces[:, 1], faces[:, 2], faces[:, 0], np.arange(n)])
    a = sp.coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)).tocsr()
    a = ((a + a.T) > 0).astype(np.float32)
    return sp.diags(1.0 / np.asarray(a.sum(1)).ravel()).astype(np.float32) @ a


def smooth_fields(smoother, n_fields: int, iters: int, rng: np.random.Generator, cortex: np.ndarray) -> np.ndarray:
    """Random smooth maps on one hemisphere: white noise averaged over mesh neighbours ``iters`` times.

    Parameters
    ----------
    smoother : scipy.sparse matrix, shape (n_vertices, n_vertices)
        The averaging matrix of :func:`surface_smoother`.
    n_fields : int
        Number of maps.
    iters : int
        Rounds of smoothing.
    rng : numpy.random.Generator
        Source of the white noise.
    cortex : ndarray of int, shape (n_cortex,)
        Mesh vertices that are cortex (the CIFTI grayordinates of the hemisphere); the others are dropped.

    Returns
    -------
    ndarray, shape (n_fields, n_cortex), float32
        Each map with zero mean and unit variance over cortex.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> rng = np.random.default_rng(0)
    >>> maps = smooth_fields(sp.identity(10, format="csr"), 3, 2, rng, np.arange(8))
    >>> maps.shape, bool(np.allclose(maps.std(axis=1), 1))
    ((3, 8), True)
    """
    x = rng.standard_normal((smoother.shape[0], n_fields)).astype(np.float32)
    for _ in range(iters):
        x = smoother @ x
    x = x[cortex].T
    x -= x.mean(axis=1, keepdims=True)
    return x / x.std(axis=1, keepdims=True)


def stimulus_components(video: np.ndarray, audio: np.ndarray, n_video: int, n_audio: int) -> np.ndarray:
    """Per-second stimulus features reduced to unit-variance principal components.

    Each modality is z-scored over time, then reduced by PCA (SVD) to its leading components.

    Parameters
    ----------
    video : ndarray, shape (n_seconds, n_video_features)
        Video embedding of each second of the movie.
    audio : ndarray, shape (n_seconds, n_audio_features)
        Audio embedding of each second.
    n_video, n_audio : int
        Components kept per modality (0 leaves the modality out).

    Returns
    -------
    ndarray, shape (n_seconds, n_video + n_audio)
        The video components first, then the audio ones, each with unit variance over time.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> stimulus_components(rng.normal(size=(50, 16)), rng.normal(size=(50, 8)), 4, 2).shape
    (50, 6)
    """
    out = []
    for x, k in ((video, n_video), (audio, n_audio)):
        if k == 0:
            continue
        z = (x - x.mean(0)) / (x.std(0) + 1e-8)
        u, s, _ = np.linalg.svd(z, full_matrices=False)
        c = u[:, :k] * s[:k]
        out.append(c / (c.std(0) + 1e-8))
    return np.concatenate(out, axis=1)


def shifted_hrf(lag_s: float, tr: float, length_s: float = 32.0) -> np.ndarray:
    """nilearn's Glover haemodynamic response sampled at ``tr``, shifted so that its sampled peak sits at ``lag_s``.

    Parameters
    ----------
    lag_s : float
        Where the peak sits, in s (the unshifted Glover HRF peaks near 6 s: the shift is ``lag_s − 6``).
    tr : float
        Sampling interval, in s.
    length_s : float
        Length of the response, in s (extended by ``lag_s``).

    Returns
    -------
    ndarray, shape (n_samples,)
        The response, normalised to sum 1 (a causal kernel for :func:`numpy.convolve`).

    Examples
    --------
    >>> import numpy as np
    >>> h = shifted_hrf(6.0, 1.0)
    >>> int(np.argmax(h)), round(float(h.sum()), 6)
    (6, 1.0)
    """
    from nilearn.glm.first_level import glover_hrf

    h = glover_hrf(tr, oversampling=1, time_length=length_s + max(0.0, lag_s), onset=lag_s - 6.0)
    return h / h.sum()


def simulate_fmri(
    movie: str | Path,
    out_dir: str | Path,
    surface_dir: str | Path,
    settings: FMRISimulation | None = None,
    *,
    video_encoder: str = "tiny",
    audio_encoder: str = "tiny",
    progress: bool = False,
) -> list[Path]:
    """Simulate every subject's run for ``movie`` and write CIFTI-2 dtseries files into ``out_dir``.

    Parameters
    ----------
    movie : str or Path
        The stimulus (e.g. from :func:`~neurokit.simulate.movie.make_movie`).
    out_dir : str or Path
        Output folder (created if needed); also receives the S1200 spheres and ``simulation.json``.
    surface_dir : str or Path
        Folder with the HCP S1200 fs_LR 32k files: spheres, midthickness surfaces and
        ``S1200.sulc_MSMAll.32k_fs_LR.dscalar.nii`` (its brain models give the cortex grayordinates).
    settings : FMRISimulation, optional
        Simulation settings; default ``FMRISimulation()``.
    video_encoder, audio_encoder : str
        Stimulus towers whose features drive the simulated cortex (:mod:`neurokit.stimuli.encoders`).
    progress : bool
        Show a progress bar while the movie is embedded.

    Returns
    -------
    list of Path
        The dtseries files, one per subject: ``floor(duration / tr)`` frames × 59,412 cortex grayordinates.

    Raises
    ------
    DataFileError
        A file of ``surface_dir`` missing, or the CIFTI template not a CIFTI-2 file.

    Examples
    --------
    >>> paths = simulate_fmri("movie_run-1.mkv", "sim", "S1200", FMRISimulation(n_subjects=2))  # doctest: +SKIP
    """
    import nibabel as nib

    from neurokit.stimuli.store import (
        StimulusEncoders,
        StimulusStore,
        StimulusWindows,
        embed_stimuli,
    )

    cfg = settings or FMRISimulation()
    out, sdir = Path(out_dir), Path(surface_dir)
    for f in (*SPHERES.values(), *MIDTHICKNESS.values(), CIFTI_TEMPLATE):
        if not (sdir / f).exists():
            raise DataFileError(f"{sdir / f}: missing; surface_dir must hold the HCP S1200 fs_LR 32k files")
    out.mkdir(parents=True, exist_ok=True)
    per_second = out / ".features_1s.h5"
    embed_stimuli(
        movie,
        per_second,
        encoders=StimulusEncoders(video=video_encoder, audio=audio_encoder),
        windows=StimulusWindows(window_s=cfg.tr, hop_s=cfg.tr),
        overwrite=True,
        progress=progress,
        batch_size=128,
    )
    st = StimulusStore(per_second)
    z = stimulus_components(st.video, st.audio, cfg.n_video, cfg.n_audio)  # (n_s, K)
    per_second.unlink()
    n_t = int(np.floor(st.duration_s / cfg.tr))
    h = shifted_hrf(cfg.lag_s, cfg.tr)
    drive = np.stack([np.convolve(z[:, k], h)[:n_t] for k in range(z.shape[1])], axis=1)  # causal: (n_t, K)
    if len(drive) < n_t:
        drive = np.pad(drive, ((0, n_t - len(drive)), (0, 0)))

    template = nib.load(str(sdir / CIFTI_TEMPLATE))
    if not isinstance(template, nib.cifti2.Cifti2Image):
        raise DataFileError(f"{sdir / CIFTI_TEMPLATE}: not a CIFTI-2 file")
    bm = template.header.get_axis(1)
    rng = np.random.default_rng(cfg.seed)
    K = z.shape[1]
    maps_shared, smoothers, cortex = {}, {}, {}
    names = {"L": "CIFTI_STRUCTURE_CORTEX_LEFT", "R": "CIFTI_STRUCTURE_CORTEX_RIGHT"}
    structs = {name: (sl, m) for name, sl, m in bm.iter_structures()}
    for hemi in ("L", "R"):
        sl, model = structs[names[hemi]]
        cortex[hemi] = np.asarray(model.vertex)
        smoothers[hemi] = surface_smoother(sdir / MIDTHICKNESS[hemi])
        maps_shared[hemi] = smooth_fields(smoothers[hemi], K, cfg.smooth_iters, rng, cortex[hemi])
    series = nib.cifti2.SeriesAxis(start=0.0, step=cfg.tr, size=n_t, unit="SECOND")
    header = nib.cifti2.Cifti2Header.from_axes((series, bm))  # built once: 59,412 grayordinates
    paths = []
    a = float(cfg.subject_var)
    for s in range(cfg.n_subjects):
        blocks = []
        for hemi in ("L", "R"):
            own = smooth_fields(smoothers[hemi], K, cfg.smooth_iters, rng, cortex[hemi])
            m = np.sqrt(1 - a) * maps_shared[hemi] + np.sqrt(a) * own  # (K, n_cortex)
            blocks.append(drive @ m)
        sig = np.concatenate(blocks, axis=1)
        sig /= sig.std()
        noise = rng.standard_normal(sig.shape).astype(np.float32) / np.sqrt(cfg.snr)
        data = (sig + noise).astype(np.float32)
        p = out / f"sub-sim{s + 1:02d}_task-movie_run-{cfg.run}_bold.dtseries.nii"
        nib.Cifti2Image(data, header=header).to_filename(str(p))
        paths.append(p)
    for f in SPHERES.values():
        shutil.copyfile(sdir / f, out / f)
    (out / "simulation.json").write_text(
        json.dumps(
            {
                **asdict(cfg),
                "movie": str(movie),
                "video_encoder": video_encoder,
                "audio_encoder": audio_encoder,
                "n_frames": n_t,
            },
            indent=2,
        )
    )
    return paths
