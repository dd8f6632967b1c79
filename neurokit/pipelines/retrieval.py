"""Stimulus retrieval from fMRI (``neuro retrieve``), with the protocol of the tri-modal HCP 7T paper
(arXiv 2501.16471; metrics-lab/sim):

- per test subject × run × hemisphere ("unit"), ``n_queries`` = 100 queries: fMRI tubelets whose paired
  stimulus window (``lag_s`` before) is not rest, drawn without replacement;
- each query's pool: its true window plus ``n_negatives`` = 32 windows of the same run, drawn without
  replacement from the non-rest windows whose onset is more than ``exclude_s`` = 3 s from the true one;
- windows ranked by cosine similarity of the projected, L2-normalised embeddings; a query scores top-k when
  fewer than k pool windows are at least as similar as the true one (ties count against it);
- top-1/5/10 mean ± std over units, for video and audio, beside chance k / pool size (pool 33: 3.0 %,
  15.2 %, 30.3 %).

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

import numpy as np
import torch

from neurokit._utils.errors import ConfigError, DataFileError
from neurokit.data.pairs import Pairs, in_segment, open_stimuli, pair_samples
from neurokit.models.registry import check_encoders

logger = logging.getLogger("neurokit")

TOPK = (1, 5, 10)


def retrieval_pools(window_onsets: np.ndarray, candidates: np.ndarray, true_windows: np.ndarray, *,
                    n_negatives: int = 32, exclude_s: float = 3.0, rng: np.random.Generator) -> np.ndarray:
    """Pools of window indices ``(n_queries, 1 + n_negatives)``, the true window first.

    Parameters
    ----------
    window_onsets : ndarray (n_windows,)
        Onsets (s) of the run's stimulus windows.
    candidates : ndarray of bool (n_windows,)
        Windows allowed as negatives (not rest; inside the evaluated segments).
    true_windows : ndarray of int (n_queries,)
    n_negatives, exclude_s : the protocol's 32 and 3 s.

    Raises
    ------
    DataFileError
        Fewer than ``n_negatives`` candidates more than ``exclude_s`` from a query's window.
    """
    onsets = np.asarray(window_onsets, dtype=float)
    cand = np.flatnonzero(candidates)
    pools = np.empty((len(true_windows), 1 + n_negatives), dtype=int)
    for q, w in enumerate(true_windows):
        far = cand[np.abs(onsets[cand] - onsets[w]) > exclude_s + 1e-9]
        if len(far) < n_negatives:
            raise DataFileError(
                f"only {len(far)} non-rest windows more than {exclude_s:g} s from the window at {onsets[w]:g} s; the "
                f"protocol needs {n_negatives} negatives from the same run (a longer run, or fewer --negatives)"
            )
        pools[q, 0] = w
        pools[q, 1:] = rng.choice(far, size=n_negatives, replace=False)
    return pools


def pool_hits(query: np.ndarray, windows: np.ndarray, pools: np.ndarray, ks: Sequence[int] = TOPK) -> dict[int, np.ndarray]:
    """Top-k hits of each query: ``query`` ``(Q, D)`` and ``windows`` ``(n_windows, D)`` unit vectors,
    ``pools`` ``(Q, P)`` with the true window first → ``{k: bool (Q,)}``."""
    sims = np.einsum("qd,qpd->qp", query, windows[pools])
    rank = (sims[:, 1:] >= sims[:, :1]).sum(axis=1)  # pool windows at least as similar as the true one
    return {k: rank < k for k in ks}


def chance_levels(pool_size: int, ks: Sequence[int] = TOPK) -> dict[str, float]:
    return {f"top{k}": min(k, pool_size) / pool_size for k in ks}


def protocol_units(pairs: Pairs, stimuli: Sequence, *, n_queries: int = 100, n_negatives: int = 32,
                   exclude_s: float = 3.0, segments: str = "all", seed: int = 0) -> list[dict]:
    """The protocol's queries and pools per subject × run × hemisphere.

    Returns a list of ``{"subject", "run", "hemi", "pairs": indices into ``pairs`` (queries), "stim": store
    index, "pools": (Q, 1 + n_negatives) window indices}``, in sorted unit order; seeded by ``seed``.
    """
    rng = np.random.default_rng(seed)
    units = []
    keys = sorted(set(zip(pairs.subject.tolist(), pairs.run.tolist(), pairs.hemi.tolist())))
    for subj, run, hemi in keys:
        idx = np.flatnonzero((pairs.subject == subj) & (pairs.run == run) & (pairs.hemi == hemi))
        q = np.sort(rng.choice(idx, size=min(n_queries, len(idx)), replace=False))
        si = int(pairs.stim[q[0]])
        st = stimuli[si]
        cand = ~st.rest & in_segment(st.onsets, st.clips, st.window_s, segments)
        pools = retrieval_pools(st.onsets, cand, pairs.window[q], n_negatives=n_negatives, exclude_s=exclude_s, rng=rng)
        units.append({"subject": subj, "run": run, "hemi": hemi, "pairs": q, "stim": si, "pools": pools})
    return units


def score_units(units: list[dict], query_emb: np.ndarray, window_emb: Sequence[dict], ks=TOPK) -> dict:
    """Top-k per unit and mean ± std over units. ``query_emb``: ``(n_pairs, D)`` unit vectors indexed like the
    pairs; ``window_emb``: per stimulus store ``{"video": (n_windows, D), "audio": …}`` unit vectors."""
    out: dict = {"units": []}
    mods = list(window_emb[0])
    per = {m: {k: [] for k in ks} for m in mods}
    for u in units:
        row = {"subject": u["subject"], "run": u["run"], "hemi": u["hemi"], "n_queries": int(len(u["pairs"]))}
        for m in mods:
            hits = pool_hits(query_emb[m][u["pairs"]] if isinstance(query_emb, dict) else query_emb[u["pairs"]],
                             window_emb[u["stim"]][m], u["pools"], ks)
            for k in ks:
                row[f"{m}_top{k}"] = float(hits[k].mean())
                per[m][k].append(float(hits[k].mean()))
        out["units"].append(row)
    for m in mods:
        out[m] = {f"top{k}": {"mean": float(np.mean(per[m][k])), "std": float(np.std(per[m][k]))} for k in ks}
    return out


@torch.no_grad()
def embed_pairs(model, ds, pairs: Pairs, *, batch_size: int = 64, device: str | torch.device = "cpu") -> np.ndarray:
    """Projected fMRI embeddings ``(n_pairs, embed_dim)`` float32 of the paired samples (eval mode)."""
    model.eval()
    out = []
    for b in range(0, len(pairs), batch_size):
        x = torch.stack([ds[int(i)][0] for i in pairs.sample[b : b + batch_size]]).to(device)
        out.append(model.embed_fmri(x).float().cpu().numpy())
    return np.concatenate(out) if out else np.zeros((0, model.config.embed_dim), np.float32)


@torch.no_grad()
def embed_windows(model, stimuli: Sequence, *, device="cpu", shuffle: bool = False, seed: int = 0) -> list[dict]:
    """Projected video/audio embeddings of every window of each stimulus store.

    ``shuffle``: the control — permute the non-rest windows' embeddings against their onsets (each run its
    own permutation), so the fMRI is matched with the wrong stimulus windows."""
    model.eval()
    rng = np.random.default_rng(seed + 7919)
    out = []
    for st in stimuli:
        v, a = np.asarray(st.video, np.float32), np.asarray(st.audio, np.float32)
        if shuffle:
            live = np.flatnonzero(~st.rest)
            perm = live[rng.permutation(len(live))]
            v, a = v.copy(), a.copy()
            v[live], a[live] = v[perm], a[perm]
        out.append({"video": model.embed_video(torch.from_numpy(v).to(device)).cpu().numpy(),
                    "audio": model.embed_audio(torch.from_numpy(a).to(device)).cpu().numpy()})
    return out


def retrieve(checkpoint: str | Path, fmri: Sequence[str | Path] | str | Path, stimuli: Sequence[str | Path] | str | Path, *,
             subjects: Sequence[str] | None = None, segments: str = "all", n_queries: int = 100, n_negatives: int = 32,
             exclude_s: float = 3.0, seed: int = 0, shuffle: bool = False, lag_s: float | None = None,
             device: str = "auto", out: str | Path | None = None) -> dict:
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
        Not a clip checkpoint; stimuli from other encoders; unknown subjects.
    DataFileError
        See :func:`~neurokit.data.pairs.pair_samples` and :func:`retrieval_pools`.
    """
    from neurokit.data.dataset import PatchDataset
    from neurokit.models.checkpoint import load_checkpoint
    from neurokit.training import distributed as dist
    from neurokit.training.objectives import get_objective

    state = load_checkpoint(checkpoint)
    if state.get("model") != "clip":
        raise ConfigError(f"{checkpoint}: a {state.get('model')!r} checkpoint; retrieval needs one of `neuro pretrain --model clip`")
    model = get_objective("clip").rebuild(state["model_config"])
    model.load_state_dict(state["state_dict"])
    dev = dist.setup(device).device
    model.to(dev)
    stims = open_stimuli(stimuli)
    check_encoders(model.config, stims)
    paths = [fmri] if isinstance(fmri, (str, Path)) else list(fmri)
    ds = PatchDataset(paths, subjects=subjects)
    if subjects is not None and len(ds) == 0:
        raise ConfigError(f"no sample of subjects {list(subjects)} in {[str(p) for p in paths]}; subjects there: {ds.store_subjects}")
    if tuple(ds.sample_shape) != (model.config.fmri.n_chans, model.config.fmri.n_patches, model.config.fmri.vertices_per_patch):
        raise ConfigError(f"{paths[0]}: samples {tuple(ds.sample_shape)} do not fit the checkpoint's fMRI encoder "
                          f"({model.config.fmri.n_chans}, {model.config.fmri.n_patches}, {model.config.fmri.vertices_per_patch})")
    lag = model.config.lag_s if lag_s is None else float(lag_s)
    pairs = pair_samples(ds, stims, lag, segments=segments)
    if not len(pairs):
        raise DataFileError(f"{paths[0]}: no fMRI sample pairs with a non-rest stimulus window at lag {lag:g} s")
    units = protocol_units(pairs, stims, n_queries=n_queries, n_negatives=n_negatives, exclude_s=exclude_s,
                           segments=segments, seed=seed)
    q = embed_pairs(model, ds, pairs, device=dev)
    w = embed_windows(model, stims, device=dev, shuffle=shuffle, seed=seed)
    rep = score_units(units, q, w)
    pool = 1 + n_negatives
    rep.update({
        "chance": chance_levels(pool), "pool_size": pool, "n_units": len(units),
        "n_queries": int(sum(u["n_queries"] for u in rep["units"])), "lag_s": lag, "segments": segments,
        "shuffled": bool(shuffle), "seed": seed, "exclude_s": exclude_s, "checkpoint": str(checkpoint),
        "fmri": [str(p) for p in paths], "stimuli": [str(s.path) for s in stims],
        "subjects": sorted(set(pairs.subject.tolist())),
    })
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(rep, indent=2))
    return rep
