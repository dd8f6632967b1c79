"""Stimulus retrieval from fMRI (``neuro retrieve``): load a tri-modal CLIP checkpoint, pair its fMRI store with
the stimulus stores, and score the retrieval protocol of :mod:`neurokit.evaluation.retrieval` (the tri-modal HCP 7T
paper's, arXiv 2501.16471, as its release runs it).

"Unseen subjects": pass the held-out subjects. "Unseen segments": train with ``segments="first_half"`` and
retrieve with ``segments="second_half"`` (queries and pools from the second half of each clip). The
embeddings go through exactly the model's training forward (:meth:`SurfaceCLIP.embed_fmri` on the store's
samples, z-scored per frame when the store was written) — no extra normalisation at retrieval.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Sequence


from neurokit._utils.errors import ConfigError, DataFileError
from neurokit.data.pairs import open_stimuli, pair_samples
from neurokit.evaluation.retrieval import (
    NEGATIVES_FROM,
    chance_levels,
    embed_pairs,
    embed_windows,
    protocol_units,
    resolve_retest_clip,
    score_units,
)
from neurokit.io.headers import short_list
from neurokit.models.registry import check_encoders

logger = logging.getLogger("neurokit")


def retrieve(
    checkpoint: str | Path,
    fmri: Sequence[str | Path] | str | Path,
    stimuli: Sequence[str | Path] | str | Path,
    *,
    subjects: Sequence[str] | None = None,
    segments: str = "all",
    n_queries: int = 100,
    n_negatives: int = 32,
    exclude_s: float = 3.0,
    seed: int = 0,
    shuffle: bool = False,
    lag_s: float | None = None,
    device: str = "auto",
    out: str | Path | None = None,
    negatives_from: str = "other_segments",
    audio_exclude_s: float = 0.0,
    retest_clip="store",
) -> dict:
    """Run the retrieval protocol (module docstring) with a ``neuro pretrain --model clip`` checkpoint.

    Parameters
    ----------
    checkpoint : path
        ``last.pt`` of a clip pretraining run.
    fmri : path or paths
        Surface store(s) (``neuro prepare``) with the test subjects' runs.
    stimuli : path or paths
        Stimulus store(s) (``neuro embed-stimuli``), one per run, embedded with the training encoders.
    subjects : list of str, optional
        Test subjects (default: all in the stores). Unseen subjects = subjects not trained on.
    segments : {"all", "first_half", "second_half"}
    n_queries, n_negatives : int
        Queries per subject × run × hemisphere (100) and negatives per pool (32).
    exclude_s, audio_exclude_s : float
        Negatives of the video pool start more than ``exclude_s`` (3 s) from the true window; those of the
        audio pool more than ``audio_exclude_s`` (0: only the true window is left out), as in the release.
    negatives_from : {"other_segments", "same_run", "same_segment"}
        Where negatives come from: the run's other clips (default, the release's), any window of the run
        (neurokit's harder option), or the query's own clip. See :func:`retrieval_pools`.
    retest_clip : "store", "last", "none" or int
        The test–retest clip, which gives no query (:func:`resolve_retest_clip`; default: as the stimulus
        store records, ``neuro embed-stimuli --retest-clip``).
    seed : int
        Seed of the query and negative draws.
    shuffle : bool
        The control: stimulus windows shuffled against the fMRI (expect chance).
    lag_s : float, optional
        Override the checkpoint's lag (for lag scans).
    out : path, optional
        Write the JSON report there.

    Returns
    -------
    dict: ``video``/``audio`` → ``top1/top5/top10`` → ``mean``/``std`` (fractions), ``chance``, ``pool_size``,
    ``units`` (per subject × run × hemisphere), ``n_queries``, settings and provenance.

    Raises
    ------
    ConfigError
        Not a clip checkpoint; stimuli from other encoders; unknown subjects; an unknown ``negatives_from``
        (refused first) or ``retest_clip``.
    DataFileError
        See :func:`~neurokit.data.pairs.pair_samples` and :func:`retrieval_pools`.
    """
    from neurokit.data.dataset import PatchDataset
    from neurokit.models.checkpoint import load_checkpoint
    from neurokit.training import distributed as dist
    from neurokit.training.objectives import get_objective

    if negatives_from not in NEGATIVES_FROM:  # refused before any work
        raise ConfigError(f"negatives_from={negatives_from!r}; allowed: {', '.join(NEGATIVES_FROM)}")
    state = load_checkpoint(checkpoint)
    if state.get("model") != "clip":
        raise ConfigError(
            f"{checkpoint}: a {state.get('model')!r} checkpoint; retrieval needs one of `neuro pretrain` with model='clip'"
        )
    model = get_objective("clip").rebuild(state["model_config"])
    model.load_state_dict(state["state_dict"])
    dev = dist.setup(device).device
    model.to(dev)
    stims = open_stimuli(stimuli)
    check_encoders(model.config, stims)
    paths = [fmri] if isinstance(fmri, (str, Path)) else list(fmri)
    ds = PatchDataset(paths, subjects=subjects)
    if subjects is not None and len(ds) == 0:
        raise ConfigError(
            f"no sample of subjects {short_list(subjects, 20)} in {[str(p) for p in paths]}; subjects there: "
            f"{short_list(ds.store_subjects, 20)}"
        )
    if tuple(ds.sample_shape) != (
        model.config.fmri.n_chans,
        model.config.fmri.n_patches,
        model.config.fmri.vertices_per_patch,
    ):
        raise ConfigError(
            f"{paths[0]}: samples {tuple(ds.sample_shape)} do not fit the checkpoint's fMRI encoder "
            f"({model.config.fmri.n_chans}, {model.config.fmri.n_patches}, {model.config.fmri.vertices_per_patch})"
        )
    lag = model.config.lag_s if lag_s is None else float(lag_s)
    pairs = pair_samples(ds, stims, lag, segments=segments)
    if not len(pairs):
        raise DataFileError(f"{paths[0]}: no fMRI sample pairs with a non-rest stimulus window at lag {lag:g} s")
    units = protocol_units(
        pairs,
        stims,
        n_queries=n_queries,
        n_negatives=n_negatives,
        exclude_s=exclude_s,
        audio_exclude_s=audio_exclude_s,
        segments=segments,
        seed=seed,
        negatives_from=negatives_from,
        retest_clip=retest_clip,
    )
    q = embed_pairs(model, ds, pairs, device=dev)
    w = embed_windows(model, stims, device=dev, shuffle=shuffle, seed=seed)
    rep = score_units(units, q, w)
    pool = 1 + n_negatives
    rep.update(
        {
            "chance": chance_levels(pool),
            "pool_size": pool,
            "n_units": len(units),
            "n_queries": int(sum(u["n_queries"] for u in rep["units"])),
            "lag_s": lag,
            "segments": segments,
            "shuffled": bool(shuffle),
            "seed": seed,
            "exclude_s": exclude_s,
            "audio_exclude_s": audio_exclude_s,
            "negatives_from": negatives_from,
            "retest_clip": [resolve_retest_clip(s, retest_clip) for s in stims],
            "checkpoint": str(checkpoint),
            "fmri": [str(p) for p in paths],
            "stimuli": [str(s.path) for s in stims],
            "subjects": sorted(set(pairs.subject.tolist())),
        }
    )
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(rep, indent=2))
    return rep
